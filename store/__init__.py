"""aclstore's write path: the ACL model, Kafka's decision rules, change events, the log, the admin API."""

__version__ = "0.1.0"
