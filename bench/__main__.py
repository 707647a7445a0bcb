"""``python -m bench``: run every benchmark script and print one table (see ``bench/_runner.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

# The runner imports the shared modules the way the scripts do (``import _report``): by their folder on the path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _runner import main

sys.exit(main())
