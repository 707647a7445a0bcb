"""``ishiki status``, ``ishiki usage`` and ``log_format: json`` against a real ``ishiki run`` in a subprocess: the
running host answers on its control socket; a stopped or crashed one is said to be gone, with exit 1."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from ishiki_host.store.repos.usage import period_days
from ishiki_host.testing import FakeOpenAIServer, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow

HOST = "reload_interval_seconds: 0\n"


def config(tmp_path: Path, fake_openai: FakeOpenAIServer, host: str = HOST) -> Path:
    profiles = {"ana": profile_yaml("console:local: ['*']")}
    return write_config(tmp_path / "bot", profiles=profiles, models=models_yaml(fake_openai), host=host)


def started(start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, root: Path) -> Any:
    """``ishiki run root`` once it answered one console line and settled (``/whoami`` is read after that)."""
    fake_openai.tool_call("send_message", {"messages": ["hello there"]}, usage=(321, 12))
    running = start_ishiki("run", str(root))
    running.send("hi\n/whoami\n")
    assert running.line() == "hello there"
    assert [running.line() for _ in range(3)][-1] == "trust: owner"
    return running


def test_status_of_a_running_host_then_of_none(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    running = started(start_ishiki, fake_openai, root)
    pid = running.process.pid

    code, out, err = start_ishiki("status", str(root)).finish(input="")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"host: pid {pid}, running for ")
    assert lines[1] == f"  config {root.resolve()}, data {(root / 'data').resolve()}"
    assert lines[2] == "ready: yes"
    assert "profiles:" in lines
    assert "  ana  ready  1 runtime" in lines
    assert "  console  running  console:local  restarts 0, errors 0" in lines
    assert "  fake:fake-model  closed" in lines
    assert any(line.startswith("  fake  1 calls, 0 failed, 321 tokens in, 12 out") for line in lines)
    assert lines[-2] == "http: off (set http.listen in ishiki.yaml to serve webhooks, /metrics and /readyz)"
    assert lines[-1].startswith("activity: ")
    assert "1 in the last hour (0 failed), 0 errors logged" in lines[-1]

    code, out, err = start_ishiki("status", str(root), "--json").finish(input="")
    assert code == 0, err
    report = json.loads(out)
    assert report["host"]["pid"] == pid
    assert report["profiles"]["ana"] == {"state": "ready", "missing": [], "errors": [], "runtimes": 1}
    assert report["routes"] == {"ana": ["ana/console:local/private:local"]}
    assert report["channels"]["console"]["state"] == "running"
    assert report["ready"] == {"ready": True, "problems": []}
    assert report["gateway"]["members"]["fake:fake-model"]["state"] == "closed"
    assert report["activity"]["turnsLastHour"] == 1

    running.signal(signal.SIGTERM)
    assert running.finish()[0] == 0
    assert not (root / "data" / "ishiki.sock").exists()
    code, out, err = start_ishiki("status", str(root)).finish(input="")
    assert (code, out) == (1, "")
    assert err == f"ishiki status: no host is running for {root} (no {root / 'data' / 'ishiki.pid'})\n"


def test_status_after_a_crash_names_the_stale_pid_file(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    killed = started(start_ishiki, fake_openai, root)
    killed.signal(signal.SIGKILL)
    assert killed.process.wait(timeout=30) == -signal.SIGKILL
    assert (root / "data" / "ishiki.sock").exists()  # left behind, as the pid file is
    code, out, err = start_ishiki("status", str(root)).finish(input="")
    pid_file = root / "data" / "ishiki.pid"
    assert (code, out) == (1, "")
    assert err == (
        f"ishiki status: no host is running for {root}: {pid_file} names pid {killed.process.pid}, "
        "which is not running (left by a crash)\n"
    )


def test_status_of_a_directory_that_is_no_config_dir(start_ishiki: StartIshiki, tmp_path: Path) -> None:
    code, out, err = start_ishiki("status", str(tmp_path / "nowhere")).finish(input="")
    assert (code, out) == (2, "")
    assert err.startswith("ishiki status: ")


def test_usage_of_a_config_dir_after_a_run(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    _first, today = period_days(time.time(), ZoneInfo("UTC"), 1)
    code, out, err = start_ishiki("usage", str(root)).finish(input="")
    db = root / "data" / "memory.db"
    assert (code, out) == (0, f"No usage today ({today}, UTC): nothing was counted yet ({db} does not exist).\n")

    fake_openai.tool_call("send_message", {"messages": ["hello there"]}, usage=(321, 12))
    code, out, err = start_ishiki("run", str(root)).finish(input="hi\n")
    assert (code, out) == (0, "hello there\n"), err

    code, out, err = start_ishiki("usage", str(root)).finish(input="")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == [f"Usage today ({today}, UTC) in {root}:", "model calls: 1 call, 321 tokens in, 12 out"]
    assert "by profile  calls  failed  tokens in  tokens out" in lines
    assert "ana         1      0       321        12" in lines
    assert "console:local  1      0       321        12" in lines
    assert "by tool       calls" in lines
    assert "send_message  1" in lines

    code, out, err = start_ishiki("usage", str(root), "--days", "7", "--json").finish(input="")
    assert code == 0, err
    totals = json.loads(out)
    assert totals["lastDay"] == today
    assert totals["total"] == {"calls": 1, "failures": 0, "inputTokens": 321, "outputTokens": 12}
    assert totals["byModel"] == [{"name": "fake:fake-model", "calls": 1, "failures": 0, "inputTokens": 321,
                                  "outputTokens": 12}]  # fmt: skip
    assert totals["byTool"] == [{"name": "send_message", "calls": 1}]

    code, out, err = start_ishiki("usage", str(root), "--days", "0").finish(input="")
    assert (code, out) == (2, "")
    assert "argument --days: a number of days from 1 to 366, not '0'" in err


def test_log_format_json_writes_one_object_per_line_with_the_answered_line(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai, host=HOST + "log_format: json\n")
    fake_openai.tool_call("send_message", {"messages": ["hello there"]}, usage=(321, 12))
    code, out, err = start_ishiki("run", str(root)).finish(input="hi\n")
    assert (code, out) == (0, "hello there\n"), err
    lines = [json.loads(line) for line in err.splitlines()]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    (answered,) = [line for line in lines if line["logger"] == "ishiki_host.answers"]
    assert answered["level"] == "INFO"
    assert answered["message"].startswith("ana answered 1 message in console:local private:local in ")
    assert (answered["profile"], answered["input_tokens"], answered["tools"]) == ("ana", 321, ["send_message"])


def test_an_unknown_log_format_is_reported_by_check(start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer,
                                                   tmp_path: Path) -> None:  # fmt: skip
    root = config(tmp_path, fake_openai, host=HOST + "log_format: xml\n")
    code, out, err = start_ishiki("check", str(root)).finish(input="")
    assert code == 1
    assert "ishiki.yaml:2: log_format: must be one of 'text', 'json'; got 'xml'" in out + err
