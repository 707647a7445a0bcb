"""The README's example runs (written to a file and run by pytest in a subprocess, as a user would), and its
configuration passes ``ishiki check``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_readme_example_passes(tmp_path):
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.DOTALL)
    (tmp_path / "test_readme_example.py").write_text(block, "utf-8")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "ishiki_network_guard=true"]
    result = subprocess.run(
        [*command, "-W", "error", str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_readme_config_passes_ishiki_check(tmp_path, fake_openai):
    from ishiki_host.testing import models_yaml

    blocks = re.findall(r"```yaml\n(# (\S+)\n.*?)```", README.read_text("utf-8"), re.DOTALL)
    files = {name: text for text, name in blocks}
    assert set(files) == {"ishiki.yaml", "profiles/helper/profile.yml"}
    for name, text in {**files, "models.yaml": models_yaml(fake_openai)}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, "utf-8")
    (tmp_path / "profiles" / "helper" / "persona.md").write_text("You are a helpful assistant.", "utf-8")
    ishiki = Path(sys.executable).parent / "ishiki"
    result = subprocess.run(
        [str(ishiki), "check", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ONEBOT_ACCESS_TOKEN": "qq-s3cret"},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "helper" in result.stdout
    assert "qq-s3cret" not in result.stdout + result.stderr
