"""``python -m replicator.server.workers FD``: one decision worker (:mod:`.process`)."""

import sys

from replicator.server.workers.process import main

sys.exit(main())
