"""``/metrics`` and ``ishiki status`` of ``ishiki run --workers 2``: the supervisor's one page counts the turns,
tool calls and tokens its workers' runtimes made, and keeps counting the turns of a worker killed with SIGKILL
after it is back (a restarted worker counts from 0; the page does not go down)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ishiki_host.testing import FakeOpenAIServer, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow

KEY = "ana/console:local/private:local"
LISTENING = re.compile(r"HTTP: listening on (http://\S+)")


def status_of(ishiki_bin: Path, root: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(ishiki_bin), "status", str(root), "--json"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def status_until(ishiki_bin: Path, root: Path, holds: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """``ishiki status`` asked again until ``holds`` (the workers report every 2 s; a cap as a last resort)."""
    deadline = time.monotonic() + 60
    report = status_of(ishiki_bin, root)
    while not holds(report):
        assert time.monotonic() < deadline, f"timed out: ishiki status never showed it: {report}"
        report = status_of(ishiki_bin, root)
    return report


def value(base: str, name: str, **labels: str) -> float | None:
    """The series ``name{labels}`` of a scrape of ``base/metrics`` now."""
    page = httpx.get(f"{base}/metrics", timeout=60).text
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return None


def test_one_scrape_counts_the_workers_turns_and_keeps_a_killed_workers(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, ishiki_bin: Path, tmp_path: Path
) -> None:
    host = "reload_interval_seconds: 0\nshutdown_grace_seconds: 2\nhttp: {listen: '127.0.0.1:0'}\n"
    profiles = {"ana": profile_yaml("console:local: ['*']")}
    root = write_config(tmp_path / "bot", profiles=profiles, models=models_yaml(fake_openai), host=host)
    running = start_ishiki("run", str(root), "--workers", "2")
    found = LISTENING.search(running.wait_stderr("channel console is up", 60))  # the server listens first
    assert found is not None
    base = found.group(1)
    fake_openai.tool_call("send_message", {"messages": ["first"]}, usage=(11, 3))
    running.send("one\n")
    assert running.line() == "first"

    turns = {"profile": "ana", "status": "done"}
    assert value(base, "ishiki_turns_total", **turns) == 1  # counted by a worker, served by the supervisor
    assert value(base, "ishiki_tool_calls_total", profile="ana", tool="send_message") == 1
    assert value(base, "ishiki_tokens_total", profile="ana", model="fake:fake-model", kind="input") == 11
    assert value(base, "ishiki_runtimes", profile="ana") == 1
    report = status_until(ishiki_bin, root, lambda r: r["activity"]["turnsLastHour"] == 1)
    assert report["gateway"]["providers"]["fake"]["calls"] == 1  # the workers' gateways in the host's
    owner = next(w for w in report["workers"] if KEY in w["routes"].get("ana", []))

    os.kill(owner["pid"], signal.SIGKILL)
    running.wait_stderr(f"worker {owner['index']} died (SIGKILL)", 60)
    assert value(base, "ishiki_turns_total", **turns) == 1  # its life's counts stay while it is down
    fake_openai.tool_call("send_message", {"messages": ["second"]}, usage=(12, 4))
    running.send("two\n")
    assert running.line() == "second"  # answered by the worker's next life, which counts from 0
    assert value(base, "ishiki_turns_total", **turns) == 2
    assert value(base, "ishiki_tokens_total", profile="ana", model="fake:fake-model", kind="input") == 23

    running.signal(signal.SIGTERM)
    code, out, err = running.finish()
    assert (code, out) == (0, ""), err
    assert "Traceback" not in err, err
