"""``java_lower_case``: Java's ``toLowerCase`` picks the final sigma by JDK word boundaries.

Expected values worked by hand from ``ConditionalSpecialCasing.isFinalCased`` and the JDK's
``WordBreakRules`` (and confirmed against Kafka 4.3.1 by ``test_mapping_differential.py``);
Python's ``str.lower()`` differs on the first three.  Greek is spelled with escapes:
``ODOS`` is capital omicron, delta, omicron, sigma; ``odos_mid`` and ``odos_end`` its lower
case with the medial and the final sigma.
"""

from __future__ import annotations

import pytest

from store.mapping import KerberosShortNamer, SslPrincipalMapper
from store.mapping.java_case import java_lower_case

pytestmark = pytest.mark.unit

SIGMA, MEDIAL, FINAL = "\u03a3", "\u03c3", "\u03c2"
ODOS = "\u039f\u0394\u039f" + SIGMA
ODOS_MID = "\u03bf\u03b4\u03bf" + MEDIAL
ODOS_END = "\u03bf\u03b4\u03bf" + FINAL


@pytest.mark.parametrize(
    ("text", "lowered"),
    [
        (ODOS + "-L", ODOS_MID + "-l"),  # a dash between letters keeps one JDK word
        (ODOS + "2" + ODOS, ODOS_MID + "2" + ODOS_END),  # words run on across digits
        (SIGMA + "\u00ad_" + ODOS + "_" + SIGMA, MEDIAL + "\u00ad_" + ODOS_MID + "_" + FINAL),
        (ODOS, ODOS_END),
        (ODOS + "2", ODOS_END + "2"),
        (ODOS + "-", ODOS_END + "-"),  # a trailing dash is not inside the word
        (ODOS + ",L", ODOS_END + ",l"),
        (SIGMA, MEDIAL),
        ("\u0130" + SIGMA, "i\u0307" + FINAL),  # capital dotted I lowers to two chars
        ("CN=Alice", "cn=alice"),
    ],
)
def test_java_lower_case(text: str, lowered: str) -> None:
    assert java_lower_case(text) == lowered


def test_l_flags_use_java_lower_case() -> None:
    assert SslPrincipalMapper("RULE:CN=(.*)/$1/L").get_name(f"CN={ODOS}-A") == ODOS_MID + "-a"
    namer = KerberosShortNamer("R", ["RULE:[1:$1]/L"])
    assert namer.short_name(f"{ODOS}2A@R") == ODOS_MID + "2a"
