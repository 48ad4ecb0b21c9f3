"""Conformance handlers for kafka_acl_vectors.jsonl kinds (filled in by the ACL model work)."""
