"""A module that exits the interpreter when imported."""

import sys

sys.exit("ishiki-test-plugins: exits on import")
