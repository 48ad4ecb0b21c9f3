"""Conformance handlers for principal_mapping_vectors.jsonl kinds (filled in by the principals work)."""
