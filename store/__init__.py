"""The core of aclstore, below every other part: the ACL model, Kafka's decision rules (with the
principal mapping rules and the access diff built on them), the change events and the one fold of
the log, the log's backends, and the admin API, which is the write path."""

__version__ = "0.1.0"
