"""``aclstore acls --list``'s output, written as the listing arrives.

kafka-acls.sh prints a block per resource pattern (``printResourceAcls``); ``--format json``
prints one document.  Both are written here piece by piece from a listing's resources (in
DescribeAcls order, a pattern's ACLs possibly split over several in a row), so that the output
of a million ACLs never has to be held: the text is exactly what
:func:`cli.acl_command.resource_acls_text` makes of the same bindings, and the document is
exactly ``json.dumps(..., indent=2, ensure_ascii=False)`` of ``{"bindings": [...], "offset":
N}``, whose offset, known only at the end, is its last field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from typing import Final, TextIO

from replicator.contract.bindings import RESOURCE_NAME
from replicator.contract.listing import ListedAcls

_FLUSH_CHARS: Final = 1 << 16
"""Text gathered before one write to the output."""


def write_resource_acls(resources: Iterable[ListedAcls], out: TextIO) -> None:
    """``printResourceAcls``: ``Current ACLs for resource `...`:`` then a tab-indented line
    per ACL, and an empty line after each block."""
    parts: list[str] = []
    try:
        _write_blocks(resources, out, parts)
    finally:  # what arrived before a failure is printed before the failure is
        out.write("".join(parts))


def _write_blocks(resources: Iterable[ListedAcls], out: TextIO, parts: list[str]) -> None:
    size = 0
    current: tuple[str, str, str] | None = None
    for resource in resources:
        pattern = (resource.resource_type, resource.name, resource.pattern_type)
        if pattern != current:
            if current is not None:
                parts.append("\n")
            current = pattern
            parts.append(
                f"Current ACLs for resource `ResourcePattern(resourceType={pattern[0]}, "
                f"name={pattern[1]}, patternType={pattern[2]})`:\n"
            )
        text = "".join(
            [
                f"\t(principal={p}, host={h}, operation={o}, permissionType={q})\n"
                for p, h, o, q in resource.acls
            ]
        )
        parts.append(text)
        size += len(text)
        if size >= _FLUSH_CHARS:
            out.write("".join(parts))
            parts.clear()
            size = 0
    if current is not None:
        parts.append("\n")


def write_bindings_json(
    resources: Iterable[ListedAcls], out: TextIO, offset: Callable[[], int | None]
) -> None:
    """The document ``{"bindings": [...], "offset": N}`` as ``json.dumps(indent=2,
    ensure_ascii=False)`` writes it, each binding as the API writes one; ``offset`` is asked
    once every binding is written."""
    enc = encode_basestring
    parts: list[str] = []
    size = 0
    first = True
    for resource in resources:
        head = (
            f'      "resourceType": {enc(resource.resource_type)},\n'
            f'      "{RESOURCE_NAME}": {enc(resource.name)},\n'
            f'      "patternType": {enc(resource.pattern_type)},\n'
        )
        text = ",\n".join(
            [
                f'    {{\n{head}      "principal": {enc(p)},\n      "host": {enc(h)},\n'
                f'      "operation": {enc(o)},\n      "permissionType": {enc(q)}\n    }}'
                for p, h, o, q in resource.acls
            ]
        )
        if not text:
            continue
        parts.append('{\n  "bindings": [\n' if first else ",\n")
        first = False
        parts.append(text)
        size += len(text)
        if size >= _FLUSH_CHARS:
            out.write("".join(parts))
            parts.clear()
            size = 0
    reached = offset()
    end = "null" if reached is None else str(reached)
    parts.append('{\n  "bindings": [],\n' if first else "\n  ],\n")
    parts.append(f'  "offset": {end}\n}}\n')
    out.write("".join(parts))
