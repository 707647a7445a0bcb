"""``ishiki check`` (the real command, in a subprocess) refuses a profile that selects only one half."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

MODELS = """\
providers:
  fake:
    api: openai-completions
    base_url: http://127.0.0.1:9/v1
    models: [{id: main}, {id: narrator}]
"""

PROFILES = {
    "both": "model: fake:main\ncontext: {engine: narrative}\ntoolcall: {engine: narrative}\n",
    "context-only": "model: fake:main\ncontext: {engine: narrative}\n",
    "toolcall-only": "model: fake:main\ntoolcall:\n  engine: narrative\n"
    "  narrative: {narrator: {model: fake:narrator}}\n",
    "bad-option": "model: fake:main\ncontext: {engine: narrative, narrative: {maxMesages: 3}}\n"
    "toolcall: {engine: narrative}\n",
}


def check(root: Path) -> tuple[int, dict[str, Any]]:
    ishiki = Path(sys.executable).parent / "ishiki"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(ishiki), "check", str(root), "--json"], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    (tmp_path / "models.yaml").write_text(MODELS, encoding="utf-8")
    for pid, text in PROFILES.items():
        directory = tmp_path / "profiles" / pid
        directory.mkdir(parents=True)
        (directory / "profile.yml").write_text(text, encoding="utf-8")
        (directory / "persona.md").write_text("You are Kiri, a librarian.\n", encoding="utf-8")
    return tmp_path


def test_a_profile_with_only_one_half_is_refused_with_the_reason(config_dir: Path) -> None:
    code, report = check(config_dir)
    assert code == 1
    profiles = {p["id"]: p for p in report["profiles"]}
    assert {pid: p["state"] for pid, p in profiles.items()} == {
        "bad-option": "invalid",
        "both": "ready",
        "context-only": "invalid",
        "toolcall-only": "invalid",
    }
    (error,) = profiles["context-only"]["errors"]
    assert error["path"] == "context.engine"
    assert error["message"] == (
        "ishiki.engine.context.narrative requires ishiki.engine.toolcall.narrative in the same profile, "
        "which does not use it (set toolcall.engine: narrative)"
    )
    assert error["file"].endswith("profiles/context-only/profile.yml")
    assert error["line"] == 2
    (error,) = profiles["toolcall-only"]["errors"]
    assert error["path"] == "toolcall.engine"
    assert error["message"].endswith("(set context.engine: narrative)")
    (error,) = profiles["bad-option"]["errors"]
    assert error["path"].startswith("context.narrative")
    assert "maxMesages" in error["message"]
    assert "max_messages" in error["message"]  # did you mean


def test_the_text_report_says_it_too(config_dir: Path) -> None:
    ishiki = Path(sys.executable).parent / "ishiki"
    done = subprocess.run(
        [str(ishiki), "check", str(config_dir)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1
    assert "requires ishiki.engine.toolcall.narrative in the same profile" in done.stdout
