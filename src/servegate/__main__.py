"""``python -m servegate``."""

import sys

from servegate.cli import main

sys.exit(main())
