"""``ishiki run`` and ``ishiki models`` with hostile files beside a good config: each is an error naming the
file, never a crash, and the rest keeps working (a real subprocess, the console on pipes)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.testing import FakeOpenAIServer, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow

PROFILE = "model: default\nchannels:\n  console:local: ['*']\nsession: {summarizer: off}\n"
SCRIPTED = "  demo:\n    api: scripted\n    rules: demo.rules.yaml\n    models:\n      - id: demo\n"
DEEP = "[" * 600 + "]" * 600


def hostile_files() -> dict[str, str | bytes]:
    """The files that used to kill the host: each one alone was enough."""
    return {
        "demo.rules.yaml": b"rules:\n  - reply: caf\xe9\n",  # Latin-1, not UTF-8
        "skills/deep/SKILL.md": f"---\nname: deep\ndescription: Deep.\nextra: {DEEP}\n---\nBody\n",
        "skills/tea/SKILL.md": "---\nname: tea\ndescription: Brew tea.\n---\nBody\n",
        "heartbeats.json": "[" * 100_000 + "]" * 100_000,
    }


def hostile_config(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    root = write_config(tmp_path / "bot", profiles={"ana": PROFILE}, models=models_yaml(server, extra=SCRIPTED))
    for relative, content in hostile_files().items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


def test_run_answers_and_logs_each_hostile_file(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = hostile_config(tmp_path, fake_openai)
    fake_openai.tool_call("send_message", {"messages": ["Still here"]})
    code, out, err = start_ishiki("run", str(root)).finish(input="hi\n")
    assert (code, out) == (0, "Still here\n"), err
    assert "Traceback" not in err
    assert "demo.rules.yaml:2: not UTF-8 text (byte 0xe9" in err
    assert "skills/deep/SKILL.md:4: nested deeper than 64 levels; skipped" in err
    assert "heartbeats.json:1: not valid JSON: nested deeper than 64 levels" in err


def test_models_reports_the_rules_file_and_lists_the_rest(
    ishiki_bin: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = hostile_config(tmp_path, fake_openai)
    done = subprocess.run(
        [str(ishiki_bin), "models", str(root)], capture_output=True, text=True, timeout=120, check=False
    )
    assert "Traceback" not in done.stderr
    assert "fake:fake-model" in done.stdout
    assert "demo.rules.yaml:2: not UTF-8 text (byte 0xe9" in done.stdout
