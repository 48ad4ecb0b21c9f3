"""``python -m replicator.server.audit``: the audit sender process a node starts (not a command
for people: it takes its configuration, pickled, on its standard input)."""

import sys

from replicator.server.audit.sender import main

if __name__ == "__main__":
    sys.exit(main())
