"""The downgrade watch: the live state kept over the log, and an alert each time it becomes
unsafe, or safe again, to downgrade to a configured event format (issue 11, streaming mode)."""
