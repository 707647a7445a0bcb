"""The README's example runs: it is written to a file and run by pytest in a subprocess, as a user would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"


def test_readme_example_passes(tmp_path):
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.DOTALL)
    (tmp_path / "test_readme_example.py").write_text(block, "utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "ishiki_network_guard=true",
            "-W",
            "error",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


@pytest.mark.parametrize("mode", ["polling", "webhook"])
def test_readme_config_passes_ishiki_check(tmp_path, fake_openai, mode):
    from ishiki_host.testing import models_yaml

    text = README.read_text("utf-8")
    blocks = re.findall(r"```yaml\n(# (\S+)\n.*?)```", text, re.DOTALL)
    files = {name: text for text, name in blocks}
    assert set(files) == {"ishiki.yaml", "profiles/helper/profile.yml"}
    if mode == "webhook":
        (files["ishiki.yaml"],) = re.findall(r"```yaml\n# ishiki.yaml in webhook mode\n(.*?)```", text, re.DOTALL)
    for name, text in {**files, "models.yaml": models_yaml(fake_openai)}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, "utf-8")
    (tmp_path / "profiles" / "helper" / "persona.md").write_text("You are a helpful bot.", "utf-8")
    env = {**os.environ, "TELEGRAM_BOT_TOKEN": "123456789:AAsecretFromTheEnvironment"}
    ishiki = Path(sys.executable).parent / "ishiki"
    result = subprocess.run(
        [str(ishiki), "check", str(tmp_path)], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "helper" in result.stdout
