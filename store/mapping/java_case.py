"""``String.toLowerCase(Locale.ENGLISH)`` as the ``/L`` flag of Kafka's mapping rules applies it.

Python's ``str.lower()`` and Java's agree on every character but one: capital sigma (U+03A3),
whose lower case is the final form U+03C2 at the end of a word and U+03C3 elsewhere.  Python
applies Unicode's Final_Sigma condition (a cased letter before, none right after), but Java
(``java.lang.ConditionalSpecialCasing.isFinalCased``) looks for cased letters within the same
*word* of the JDK's word ``BreakIterator``, whose words run on across digits and across single
dashes, underscores, apostrophes, quotes and periods between letters.  So a sigma ending a
Greek word followed by ``-L`` takes the medial form in Kafka and the final form in Python.
Found by ``tests/store/test_mapping_differential.py``.

The word rules are the JDK's ``WordBreakRules`` (``sun.text.resources.BreakIteratorRules``):
letters and digits with their enclosing marks, mid-word and mid-number punctuation, a number
prefix and suffix; format characters (``Cf``) are transparent, except the soft hyphen, which
the rules name as mid-word punctuation.
"""

from __future__ import annotations

import re
import unicodedata

_SIGMA = "\u03a3"
# Kanji, katakana, hiragana and CJK diacritics are not word letters there.
_KANA_KANJI = re.compile(
    "[\u3005\u4e00-\u9fa5\uf900-\ufa2d\u30a1-\u30fa\u30fd\u30fe\u3041-\u3094"
    "\u309d\u309e\u3099-\u309c\u30fb\u30fc]"
)
# One class letter per char: L letter, D digit, E enclosing mark, M mid-word, N mid-number,
# Q mid-word and mid-number and number prefix ('.'), B mid-word and mid-number (" '),
# P number prefix, S number suffix, A danda, O anything else.
_PUNCTUATION = {".": "Q", '"': "B", "'": "B", ",": "N", "\u066b": "N", "\u00ad": "M", "\u2027": "M"}
_PUNCTUATION |= {"#": "P", "%": "S", "&": "S", "\u00a2": "S", "\u066a": "S", "\u2030": "S"}
_PUNCTUATION |= {"\u2031": "S", "\u0964": "A", "\u0965": "A"}
_LET, _DGT = "(?:LE*)", "(?:DE*)"
_WORD = f"(?:{_LET}+(?:[MQB]{_LET}+)*A?)"
_NUMBER = f"(?:{_DGT}+(?:[NQB]{_DGT}+)*)"
_TOKEN = re.compile(
    f"{_WORD}?(?:{_NUMBER}{_WORD})*(?:{_NUMBER}S?)?|[PQ](?:{_NUMBER}{_WORD})*(?:{_NUMBER}S?)?"
)


def _word_class(char: str) -> str:
    if char in _PUNCTUATION:
        return _PUNCTUATION[char]
    category = unicodedata.category(char)
    if category in ("Mn", "Me"):
        return "E"
    if (category[0] == "L" or category == "Mc") and not _KANA_KANJI.match(char):
        return "L"
    if category[0] == "N":
        return "D"
    if category in ("Pd", "Pc"):
        return "M"
    if category == "Sc":
        return "P"
    return "O"


def _word_spans(text: str) -> list[tuple[int, int]]:
    """The JDK word ``BreakIterator``'s segments that hold letters or digits, as text offsets."""
    kept = [i for i, char in enumerate(text) if char in _PUNCTUATION or unicodedata.category(char) != "Cf"]
    classes = "".join(_word_class(text[i]) for i in kept)
    spans: list[tuple[int, int]] = []
    pos = 0
    while pos < len(classes):
        found = _TOKEN.match(classes, pos)
        end = found.end() if found is not None and found.end() > pos else pos + 1
        spans.append((kept[pos], kept[end - 1] + 1))
        pos = end
    return spans


def _is_cased(char: str) -> bool:
    return unicodedata.category(char) == "Lt" or char.islower() or char.isupper()


def java_lower_case(text: str) -> str:
    """``text.toLowerCase(Locale.ENGLISH)``."""
    if _SIGMA not in text:
        return text.lower()
    out = list(text.lower())  # only the capital sigma lowers depending on its context
    for start, end in _word_spans(text):
        for index in range(start, end):
            if text[index] != _SIGMA:
                continue
            before = any(_is_cased(char) for char in text[start:index])
            after = any(_is_cased(char) for char in text[index + 1 : end])
            out[_lowered_offset(text, index)] = "\u03c2" if before and not after else "\u03c3"
    return "".join(out)


def _lowered_offset(text: str, index: int) -> int:
    """Where ``text[index]`` lands in ``text.lower()`` (İ lowers to two chars)."""
    return len(text[:index].lower())
