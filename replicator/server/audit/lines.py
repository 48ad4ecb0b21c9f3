"""The audit spool line's body: written by the request path, turned into CloudEvents by the sender.

The spool (:mod:`replicator.server.audit.spool`) stores each line's body as bytes; this module
is the one place that knows what a body holds, in every version a spool may still contain.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from json.encoder import encode_basestring_ascii as _json_string

from replicator.contract.audit_event import AuditEventEncoder
from replicator.server.audit.spool import Line

# --- the spool line's body ----------------------------------------------------------------------
# v3 (written): "v3", the CRC-32 (8 hex digits) of the rest, time_ns, principal and host as
# JSON strings, offset, then each audited decision's item
# (replicator.contract.audit_event.DecisionItems), tab-separated: no part holds a raw tab.  The
# sender splits the line without parsing JSON and makes each event's JSON of its item, so the
# CRC is what finds a line changed on disk before it reaches the audit log.
# v2 (written by earlier versions, read): as v3 with each decision's fragment (the event's data
# fields from "operation" to "reason" as JSON) where v3 has its item.
# v1 (written by earlier versions, read): [time_ns, principal, host, offset, [names, ...]] as
# compact JSON, each decision as names (decision_names).


def line_body(head: str, items: Sequence[str]) -> bytes:
    """A v3 body: its CRC, ``head`` (:func:`line_head`) and the items."""
    rest = "\t".join((head, *items)).encode()
    return b"v3\t%08x\t%s" % (zlib.crc32(rest), rest)


def line_head(time_ns: int, principal: str, host: str, offset: int) -> str:
    return f"{time_ns}\t{_json_string(principal)}\t{_json_string(host)}\t{int(offset)}"


def cloud_events(line: Line, spool_id: str, encoder: AuditEventEncoder) -> list[tuple[bytes, bytes]]:
    """A spool line as CloudEvents JSON records: (key = event id, value = the event).

    The id is the spool's id and the event's sequence number: the same on every resend.
    Raises ValueError (or TypeError, KeyError) for a body of no version it reads.
    """
    version = line.body[:3]
    if version in (b"v3\t", b"v2\t"):
        rest = line.body[12:]
        if line.body[11:12] != b"\t" or int(line.body[3:11], 16) != zlib.crc32(rest):
            raise ValueError(f"an audit spool line whose CRC does not match: {line.body[:40]!r}")
        parts = rest.split(b"\t")
        time_ns, principal, host, offset = int(parts[0]), parts[1], parts[2], int(parts[3])
        if version == b"v3\t":
            fragments = [encoder.fragment_of_item(item) for item in parts[4:]]
        else:
            fragments = parts[4:]
    elif line.body.startswith(b"["):  # v1
        time_ns, principal_text, host_text, offset, items = json.loads(line.body)
        principal = _json_string(principal_text).encode()
        host = _json_string(host_text).encode()
        fragments = [encoder.fragment_of_names(item) for item in items]
    else:
        raise ValueError(f"an audit spool body of no known version: {line.body[:40]!r}")
    if len(fragments) != line.count:
        raise ValueError(f"{len(fragments)} decisions in a line that counts {line.count}")
    prefix = spool_id.encode()
    ids = [b"%s%016x" % (prefix, seq) for seq in range(line.seq, line.seq + line.count)]
    values = encoder.encode_fragments(
        event_ids=ids, time_ns=time_ns, principal_json=principal, host_json=host, offset=offset,
        fragments=fragments,
    )  # fmt: skip
    return list(zip(ids, values, strict=True))
