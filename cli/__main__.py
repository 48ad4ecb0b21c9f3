"""``python -m cli``: the same as the ``aclstore`` console script."""

import sys

from cli import main

sys.exit(main())
