"""``ishiki run --workers N``: a real supervisor process keeps the console, real worker processes run the runtime
and send through it; a worker killed with SIGKILL comes back and its runtime goes on from its fact log."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.store import MemoryStore
from ishiki_host.store.repos.beat_types import BeatSpec, BeatTarget
from ishiki_host.testing import FakeOpenAIServer, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml
from ishiki_host.workers.owners import HashOwners

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow


def last_user_texts(fake_openai: FakeOpenAIServer) -> list[str]:
    """The user messages of the model's last request."""
    request = fake_openai.requests[-1].json
    assert isinstance(request, dict)
    return [str(m.get("content")) for m in request["messages"] if m.get("role") == "user"]


def status_of(ishiki_bin: Path, root: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(ishiki_bin), "status", str(root), "--json"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def config(tmp_path: Path, fake_openai: FakeOpenAIServer) -> Path:
    host = "reload_interval_seconds: 0\nshutdown_grace_seconds: 2\n"
    return write_config(
        tmp_path / "bot", profiles={"ana": profile_yaml("console:local: ['*']")}, models=models_yaml(fake_openai),
        host=host,
    )  # fmt: skip


def test_the_console_is_answered_by_a_worker_and_a_killed_worker_comes_back(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, ishiki_bin: Path, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    running = start_ishiki("run", str(root), "--workers", "2")
    running.wait_stderr("channel console is up", 60)
    fake_openai.tool_call("send_message", {"messages": ["first"]})
    running.send("one\n")
    assert running.line() == "first"  # the worker's runtime sent it through the supervisor's console

    key = "ana/console:local/private:local"
    report = status_of(ishiki_bin, root)
    deadline = time.monotonic() + 60  # the workers say what they run every 2 s; a cap only as a last resort
    while report["routes"].get("ana") != [key]:
        assert time.monotonic() < deadline, f"timed out: ishiki status never listed {key}: {report}"
        report = status_of(ishiki_bin, root)
    assert report["profiles"]["ana"]["runtimes"] == 1  # counted across the workers
    workers = report["workers"]
    assert [(w["index"], w["state"]) for w in workers] == [(0, "ready"), (1, "ready")]
    assert [w["routes"].get("ana", []) for w in workers].count([key]) == 1  # on exactly one worker
    assert all("scheduler" in w["gateway"] for w in workers)  # each one's gateway, breakers and lanes
    pids = {w["index"]: w["pid"] for w in workers}
    assert len(set(pids.values())) == 2
    assert os.getpid() not in pids.values()
    owner = workers[HashOwners(2).owner(key)]  # it runs ana's console runtime
    assert owner["routes"]["ana"] == [key]
    os.kill(owner["pid"], signal.SIGKILL)
    running.wait_stderr(f"worker {owner['index']} died (SIGKILL)", 60)

    fake_openai.tool_call("send_message", {"messages": ["second"]})
    running.send("two\n")  # held by the supervisor until the worker is back, then answered from the same log
    assert running.line() == "second"
    again = {w["index"]: w for w in status_of(ishiki_bin, root)["workers"]}
    assert again[owner["index"]]["restarts"] == 1
    assert again[owner["index"]]["pid"] != owner["pid"]
    said = last_user_texts(fake_openai)
    assert any("one" in text for text in said), said  # the respawned runtime read its fact log

    running.signal(signal.SIGTERM)
    running.wait_stderr("stopping: SIGTERM", 60)
    code, out, err = running.finish()
    assert (code, out) == (0, ""), err
    assert "Traceback" not in err, err


@pytest.mark.parametrize(("value", "shown"), [("0", "0"), ("65", "65"), ("many", "'many'")])
def test_a_worker_count_out_of_range_is_refused_naming_it(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path, value: str, shown: str
) -> None:
    root = config(tmp_path, fake_openai)
    code, _, err = start_ishiki("run", str(root), "--workers", value).finish()
    assert code == 2
    assert f"--workers: {shown} is not a worker count (a number from 1 to 64, or 'auto')" in err


def test_a_reload_reaches_every_worker(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    running = start_ishiki("run", str(root), "--workers", "2")
    running.wait_stderr("2 workers started; 0: ready", 60)
    models = root / "models.yaml"
    models.write_text(models.read_text(encoding="utf-8").replace("fake-model", "other-model"), encoding="utf-8")
    running.signal(signal.SIGHUP)
    for index in (0, 1):
        running.wait_stderr(f"[worker {index}] models.yaml changed: the model gateway was rebuilt", 60)
    fake_openai.tool_call("send_message", {"messages": ["after the reload"]})
    running.send("hi\n")
    assert running.line() == "after the reload"
    last = fake_openai.requests[-1].json
    assert isinstance(last, dict)
    assert last["model"] == "other-model"  # the worker that answered runs on the reloaded models.yaml
    code, _, err = running.finish("")
    assert code == 0, err


def test_a_reload_that_changes_workers_restarts_them_and_nothing_is_lost(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, ishiki_bin: Path, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    settings = root / "ishiki.yaml"
    settings.write_text(settings.read_text(encoding="utf-8") + "workers: 2\n", encoding="utf-8")
    running = start_ishiki("run", str(root))
    running.wait_stderr("2 workers started;", 60)
    fake_openai.tool_call("send_message", {"messages": ["before"]})
    running.send("one\n")
    assert running.line() == "before"
    settings.write_text(settings.read_text(encoding="utf-8").replace("workers: 2", "workers: 3"), encoding="utf-8")
    running.signal(signal.SIGHUP)
    running.wait_stderr("ishiki.yaml: workers changed from 2 to 3; restarting the workers", 60)
    running.wait_stderr("3 workers started;", 60)
    assert [w["index"] for w in status_of(ishiki_bin, root)["workers"]] == [0, 1, 2]
    fake_openai.tool_call("send_message", {"messages": ["after"]})
    running.send("two\n")
    assert running.line() == "after"
    said = last_user_texts(fake_openai)
    assert any("one" in text for text in said), said  # the runtime's new owner read the same fact log
    code, _, err = running.finish("")
    assert code == 0, err


def test_workers_stop_on_their_own_when_the_supervisor_is_killed(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, ishiki_bin: Path, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    running = start_ishiki("run", str(root), "--workers", "2")
    running.wait_stderr("2 workers started;", 60)
    pids = [w["pid"] for w in status_of(ishiki_bin, root)["workers"]]
    handles = [os.pidfd_open(pid) for pid in pids]  # readable once that process has exited
    try:
        running.signal(signal.SIGKILL)
        running.process.wait(timeout=60)
        pending = list(handles)
        while pending:
            ready, _, _ = select.select(pending, [], [], 60)
            assert ready, f"timed out: workers {pids} still run 60 s after their supervisor was killed"
            pending = [h for h in pending if h not in ready]
    finally:
        for handle in handles:
            os.close(handle)
    err = running.wait_stderr("the supervisor's link is gone; ending at once, as a crash would", 60, count=2)
    assert "[worker 0] the supervisor's link is gone" in err


async def seed_due_beat(root: Path, text: str) -> None:
    """A beat on ana's console chat, due a second ago: the host runs it at start (it is not past catch-up)."""
    target = BeatTarget("ana", "console:local", "private:local")
    async with await MemoryStore.open(root / "data" / "memory.db") as store:
        spec = BeatSpec("water", text, "reminder", "0 9 * * *", target=target)
        await store.heartbeats.add(spec, next_run=time.time() - 1, created_by="ana/console:local/private:local")


async def beat_runs(root: Path) -> list[str]:
    async with await MemoryStore.open(root / "data" / "memory.db") as store:
        return [run.outcome for run in await store.heartbeats.runs("water")]


def test_a_due_beat_runs_on_the_worker_that_owns_its_chat(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, ishiki_bin: Path, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    anyio.run(seed_due_beat, root, "remind them to drink water")
    fake_openai.tool_call("send_message", {"messages": ["Time for a glass of water."]})
    running = start_ishiki("run", str(root), "--workers", "2")
    assert running.line() == "Time for a glass of water."  # scheduled by the supervisor, run by the owner
    assert any("drink water" in text for text in last_user_texts(fake_openai))
    key = "ana/console:local/private:local"
    report = status_of(ishiki_bin, root)
    deadline = time.monotonic() + 60  # the workers say what they run every 2 s; a cap only as a last resort
    while report["routes"].get("ana") != [key]:
        assert time.monotonic() < deadline, f"timed out: ishiki status never listed {key}: {report}"
        report = status_of(ishiki_bin, root)
    [owner] = [w for w in report["workers"] if w["routes"].get("ana") == [key]]
    assert owner["index"] == HashOwners(2).owner(key)  # the runtime the beat woke is on the key's owner
    code, _, err = running.finish("")
    assert code == 0, err
    assert anyio.run(beat_runs, root) == ["ok"]  # its run recorded once, as the supervisor's scheduler saw it


def test_a_reload_from_one_process_to_workers_and_back_reshapes_the_host_and_nothing_is_lost(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = config(tmp_path, fake_openai)
    settings = root / "ishiki.yaml"
    plain = settings.read_text(encoding="utf-8")
    running = start_ishiki("run", str(root))
    running.wait_stderr("channel console is up", 60)
    fake_openai.tool_call("send_message", {"messages": ["in one process"]})
    running.send("one\n")
    assert running.line() == "in one process"

    settings.write_text(plain + "workers: 2\n", encoding="utf-8")
    running.signal(signal.SIGHUP)
    running.wait_stderr("workers changed from 1 to 2; restarting the host as a supervisor of 2 workers", 60)
    running.wait_stderr("2 workers started;", 60)
    fake_openai.tool_call("send_message", {"messages": ["on a worker"]})
    running.send("two\n")
    assert running.line() == "on a worker"
    assert any("one" in text for text in last_user_texts(fake_openai))  # the worker read the same fact log

    settings.write_text(plain + "workers: 1\n", encoding="utf-8")
    running.signal(signal.SIGHUP)
    running.wait_stderr("workers changed from 2 to 1; restarting the host as one process", 60)
    running.wait_stderr("channel console is up", 60, count=3)
    fake_openai.tool_call("send_message", {"messages": ["in one process again"]})
    running.send("three\n")
    assert running.line() == "in one process again"
    said = last_user_texts(fake_openai)
    assert any("one" in text for text in said), said
    assert any("two" in text for text in said), said
    code, _, err = running.finish("")
    assert code == 0, err
    assert "Traceback" not in err
