"""``python -m ordergrad_rl.cli``: the ``ordergrad-rl`` command."""

import sys

from ordergrad_rl.cli import main

sys.exit(main())
