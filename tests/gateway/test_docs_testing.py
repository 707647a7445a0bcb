"""docs/testing.md is executable: its test example runs under pytest, its rules example loads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from ishiki_host.gateway.providers.scripted import load_rules

DOC = Path(__file__).parents[2] / "docs" / "testing.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_the_test_example_passes(tmp_path: Path) -> None:
    (example,) = [block for block in blocks("python") if "def test_" in block]
    (tmp_path / "test_example.py").write_text(example)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
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
            "test_example.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_the_rules_example_loads() -> None:
    rules_block = next(block for block in blocks("yaml") if block.startswith("# scripted rules\n"))
    rules = load_rules(yaml.safe_load(rules_block)["rules"], None)
    assert [rule.matches("Hi there") for rule in rules] == [False, True, True]
    assert rules[0].tool_calls == (("read", '{"url": "local://forecast.txt"}'),)
