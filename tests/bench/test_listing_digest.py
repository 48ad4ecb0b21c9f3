"""The listing benchmark's comparison of two ``--list`` outputs, on outputs written by hand.

Kafka's ``AclCommand`` prints its resources (and each resource's ACLs) in no set order, so the
benchmark compares what the outputs hold, not their text: the same (resource, ACL) pairs in any
order must agree, and an ACL under another resource must not.
"""

from __future__ import annotations

import pytest

from bench.listing import ListingDigest, listing_digest

pytestmark = pytest.mark.unit

ORDERS = "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:"
TEAM = "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=team1., patternType=PREFIXED)`:"
ALICE = "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
BOB = "\t(principal=User:bob, host=10.0.0.1, operation=WRITE, permissionType=DENY)"


def lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def test_the_same_acls_in_another_order_agree() -> None:
    ours = listing_digest(lines(f"{ORDERS}\n{ALICE}\n{BOB}\n\n{TEAM}\n{ALICE}\n\n"))
    theirs = listing_digest(lines(f"{TEAM}\n{ALICE}\n\n{ORDERS}\n{BOB}\n{ALICE}\n\n"))
    assert ours.same_acls(theirs)
    assert (ours.resources, ours.acls, ours.other) == (2, 3, 0)


def test_an_acl_under_another_resource_or_missing_disagrees() -> None:
    ours = listing_digest(lines(f"{ORDERS}\n{ALICE}\n{BOB}\n\n{TEAM}\n{ALICE}\n\n"))
    moved = listing_digest(lines(f"{ORDERS}\n{ALICE}\n\n{TEAM}\n{ALICE}\n{BOB}\n\n"))
    assert moved.acls == ours.acls and not moved.same_acls(ours)
    missing = listing_digest(lines(f"{ORDERS}\n{ALICE}\n{BOB}\n\n{TEAM}\n\n"))
    assert (missing.resources, missing.acls) == (2, 2) and not missing.same_acls(ours)


def test_padded_blocks_read_as_plain_ones_and_stray_lines_are_counted() -> None:
    plain = listing_digest(lines(f"{ORDERS}\n{ALICE}\n{BOB}\n\n"))
    padded = listing_digest(lines(f"{ORDERS} \n {ALICE}\n{BOB} \n \n"))
    assert padded.same_acls(plain)
    assert listing_digest(["WARN something\n", f"{ORDERS}\n", f"{ALICE}\n"]).other == 1
    assert listing_digest([]) == ListingDigest(0, 0, 0, 0)


def test_an_acl_before_any_resource_is_an_error() -> None:
    with pytest.raises(ValueError, match="before any resource"):
        listing_digest([f"{ALICE}\n", f"{ORDERS}\n"])
