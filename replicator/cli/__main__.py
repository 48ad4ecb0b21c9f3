"""``python -m replicator.cli``: the same as the ``aclstore`` console script."""

import sys

from replicator.cli import main

sys.exit(main())
