"""The README's example runs: it is written to a file and run by pytest in a subprocess, as a user would."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_readme_example_passes(tmp_path):
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.DOTALL)
    (tmp_path / "test_readme_example.py").write_text(block, "utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
