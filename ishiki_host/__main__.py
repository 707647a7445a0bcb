"""``python -m ishiki_host`` runs the ``ishiki`` command."""

import sys

from ishiki_host.cli import main

sys.exit(main())
