"""``python -m replicator.contract``: write ``replicator/openapi.json`` from the contract."""

from replicator.contract.openapi import write_document

print(f"wrote {write_document()}")
