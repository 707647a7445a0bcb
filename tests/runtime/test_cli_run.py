"""``ishiki run`` as a user runs it: a real subprocess, the console on pipes, the fake model server."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.core.factlog import FactLog
from ishiki_host.eventloop import uvloop_installed
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Response, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow

CONSOLE = "console:local: ['*']"
HOME = Path("data/runtimes/ana/console%3Alocal/private%3Alocal")
STANDARD = "model: default\nchannels:\n  console:local: ['*']\nsession: {summarizer: off}\n"  # no background calls
ENGINES = {
    "test": profile_yaml(CONSOLE),
    "standard": STANDARD,  # the built-in engines
}


def entries(root: Path) -> list[dict[str, object]]:
    path = root / HOME / "facts.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("engines", ["test", "standard"])
def test_piped_input_is_answered_logged_and_resumed(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path, engines: str
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": ENGINES[engines]}, models=models_yaml(fake_openai))
    fake_openai.tool_call("send_message", {"messages": ["Hello from the fake model"]})
    code, out, err = start_ishiki("run", str(root)).finish(input="hi there\n")
    assert (code, out) == (0, "Hello from the fake model\n"), err
    log = entries(root)
    kinds = [(e["type"], e["data"].get("role") or e["data"].get("name")) for e in log]  # type: ignore[union-attr]
    assert kinds == [
        ("message", "user"),
        ("event", "turn.start"),
        ("message", "assistant"),
        ("message", "tool"),
        ("event", "turn.done"),
        ("event", "runtime.stop"),
    ]
    assert log[0]["data"]["source"]["content"] == "hi there"  # type: ignore[index]
    assert log[2]["data"]["tool_calls"][0]["name"] == "send_message"  # type: ignore[index]
    assert json.loads(log[3]["data"]["parts"][0]["text"])["ok"] is True  # type: ignore[index]
    assert log[4]["data"]["reason"] == "sent"  # type: ignore[index]

    fake_openai.tool_call("send_message", {"messages": ["Welcome back"]})
    code, out, err = start_ishiki("run", str(root)).finish(input="again\n")
    assert (code, out) == (0, "Welcome back\n"), err
    sent = fake_openai.last_request.json["messages"]
    assert "hi there" in sent[1]["content"]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "send_message"
    assert sent[3]["role"] == "tool"
    assert "again" in sent[-1]["content"]


def test_lines_are_delivered_one_turn_at_a_time(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": ENGINES["test"]}, models=models_yaml(fake_openai))
    for text in ("one", "two", "three"):
        fake_openai.tool_call("send_message", {"messages": [f"re: {text}", "(done)"]})
    code, out, err = start_ishiki("run", str(root)).finish(input="one\n\ntwo\nthree\n")
    assert code == 0, err
    assert "unclean stop" not in err  # a runtime spawned by input during the start-up scan is not "unclean"
    assert out.splitlines() == ["re: one", "(done)", "re: two", "(done)", "re: three", "(done)"]
    users = [[m["content"] for m in body["messages"] if m["role"] == "user"] for body in fake_openai.bodies]
    assert users == [["one"], ["one", "two"], ["one", "two", "three"]]  # each turn saw only the lines before it


def test_an_unusable_directory_exits_2_and_no_ready_profile_exits_1(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    code, _, err = start_ishiki("run", str(tmp_path / "nowhere")).finish(input="")
    assert (code, err.strip()) == (2, f"ishiki run: {tmp_path / 'nowhere'}: no such directory")
    waiting = profile_yaml(CONSOLE).replace("engine: every", "engine: missing")
    root = write_config(tmp_path / "bot", profiles={"ana": waiting}, models=models_yaml(fake_openai))
    code, out, err = start_ishiki("run", str(root)).finish(input="hello\n")
    assert (code, out) == (1, "")
    assert "no profile is ready" in err
    assert "ishiki.engine.wakeup.missing" in err


def repo_config(tmp_path: Path, repo_root: Path) -> Path:
    root = tmp_path / "example"
    root.mkdir()
    for name in ("ishiki.yaml", "models.yaml", "demo.rules.yaml"):
        shutil.copy(repo_root / name, root / name)
    shutil.copytree(repo_root / "profiles", root / "profiles")
    return root


def test_the_example_config_with_no_input_exits_0_at_once(
    start_ishiki: StartIshiki, tmp_path: Path, repo_root: Path
) -> None:
    code, out, err = start_ishiki("run", str(repo_config(tmp_path, repo_root))).finish(input="")
    assert (code, out) == (0, ""), err
    assert "profile example is ready" in err


@pytest.mark.parametrize("choice", ["auto", "asyncio"])
def test_the_host_runs_on_the_event_loop_ishiki_yaml_picks(
    start_ishiki: StartIshiki, tmp_path: Path, repo_root: Path, choice: str
) -> None:
    root = repo_config(tmp_path, repo_root)
    with (root / "ishiki.yaml").open("a", encoding="utf-8") as host_file:
        host_file.write(f"event_loop: {choice}\n")
    code, _, err = start_ishiki("run", str(root), "--log-level", "info").finish(input="")
    assert code == 0, err
    expected = "uvloop" if choice == "auto" and uvloop_installed() else "asyncio"
    assert f"event loop: {expected}\n" in err


def test_the_example_config_answers_with_the_demo_and_says_so_once(
    start_ishiki: StartIshiki, tmp_path: Path, repo_root: Path
) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}  # nothing listens on the discard port
    running = start_ishiki("run", str(repo_config(tmp_path, repo_root)), env=env)
    code, out, err = running.finish(input="hello\nwho are you?\n")
    assert code == 0, err
    assert out.startswith("Hello! I'm Ishi, the example persona of Ishiki Host.\n")
    assert "I'm a persona" in out
    assert err.count("is not answering") == 1


def test_the_demo_condenses_each_exchange_into_long_term_memory_as_the_readme_says(
    start_ishiki: StartIshiki, tmp_path: Path, repo_root: Path
) -> None:
    root = repo_config(tmp_path, repo_root)
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}  # `make run` on a machine without a model server
    code, out, err = start_ishiki("run", str(root), env=env).finish(input="hello\n")
    assert code == 0, err
    assert out.startswith("Hello! I'm Ishi, the example persona of Ishiki Host.\n")
    code, out, err = start_ishiki("run", str(root), env=env).finish(input="/compact\n")  # after the first's memory
    assert (code, out) == (0, "Summarized the session and started a fresh one seeded with the summary.\n"), err
    with sqlite3.connect(f"file:{root / 'data' / 'memory.db'}?mode=ro", uri=True) as db:
        stored = db.execute("SELECT type, content, profile, min_trust FROM memories ORDER BY id").fetchall()
    exchange = ("summary", "Someone talked with Ishi, the example persona, on the scripted demo model.", "example",
                "owner")  # fmt: skip
    assert exchange in stored  # the condensed exchange, its JSON understood (not stored whole)
    assert any(content.endswith("(canned answers).") for _, content, _, _ in stored)  # the /compact summary


def test_a_failover_to_the_demo_is_said_once(start_ishiki: StartIshiki, tmp_path: Path, repo_root: Path) -> None:
    root = repo_config(tmp_path, repo_root)
    (root / "profiles" / "example" / "profile.yml").write_text(
        profile_yaml(CONSOLE, extra="failover: {failover_on: any}\n"), encoding="utf-8"
    )
    running = start_ishiki("run", str(root), env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    code, out, err = running.finish(input="hello\nhello again\nhey, hello?\n")
    assert code == 0, err
    assert out.count("Hello! I'm Ishi") == 3
    notices = [line for line in err.splitlines() if "is not answering" in line]
    assert len(notices) == 1
    assert notices[0].endswith(
        "model default: local:llama3.2 is not answering (unavailable); demo:demo answers instead"
    )


def lifecycle_profile(record: Path) -> str:
    return profile_yaml(CONSOLE, extra=f"extends:\n  lifecycle:\n    config: {{path: '{record}'}}\n")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_host_cleanly(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path, signum: signal.Signals
) -> None:
    record = tmp_path / "lifecycle.txt"
    root = write_config(tmp_path / "bot", profiles={"ana": lifecycle_profile(record)}, models=models_yaml(fake_openai))
    fake_openai.tool_call("send_message", {"messages": ["hi back"]})
    running = start_ishiki("run", str(root))
    running.send("hi\n")
    assert running.line() == "hi back"
    assert (root / "data" / "ishiki.pid").exists()
    running.signal(signum)
    running.wait_stderr(f"stopping: {signum.name}")  # before stdin closes: its end would stop the host too
    code, out, err = running.finish()
    assert (code, out) == (0, ""), err
    key = "ana/console:local/private:local"
    assert record.read_text(encoding="utf-8").splitlines() == [
        f"create {key}",
        f"attach {key}",
        f"tools {key}",
        f"stop {key}",
        f"dispose {key}",
    ]
    assert [e["data"].get("name") for e in entries(root)][-2:] == ["turn.done", "runtime.stop"]  # type: ignore[union-attr]
    assert not (root / "data" / "ishiki.pid").exists()

    async def lock_is_free() -> None:
        async with await FactLog.open(root / HOME / "facts.jsonl"):
            pass

    anyio.run(lock_is_free)


def test_a_turn_cut_by_a_signal_is_answered_at_the_next_start(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    host = "reload_interval_seconds: 0\nshutdown_grace_seconds: 0.5\n"
    root = write_config(tmp_path / "bot", profiles={"ana": ENGINES["test"]}, models=models_yaml(fake_openai), host=host)
    in_flight = threading.Event()

    def hang(request: RecordedRequest) -> Response:
        in_flight.set()
        return Response(hang=True)

    fake_openai.push(hang)
    running = start_ishiki("run", str(root))
    running.send("are you there?\n")
    assert in_flight.wait(20), "the model call never came"
    running.signal(signal.SIGINT)
    code, _, err = running.finish()
    assert code == 0, err
    ends = [e["data"] for e in entries(root) if e["type"] == "event"]
    assert ends[-2:] == [
        {"name": "turn.aborted", "reason": "shutdown", "steps": 1, "resume": True},
        {"name": "runtime.stop", "reason": "shutdown"},
    ]
    fake_openai.tool_call("send_message", {"messages": ["yes, sorry for the wait"]})
    code, out, err = start_ishiki("run", str(root)).finish(input="")
    assert (code, out) == (0, "yes, sorry for the wait\n"), err
    assert "resumed after an unclean stop" in err


def test_ishiki_reload_signals_the_running_host(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": ENGINES["test"]}, models=models_yaml(fake_openai))
    code, _, err = start_ishiki("reload", str(root)).finish(input="")
    assert code == 1
    assert "no host is running" in err
    fake_openai.tool_call("send_message", {"messages": ["first"]})
    running = start_ishiki("run", str(root))
    running.send("one\n")
    assert running.line() == "first"
    (root / "profiles" / "ana" / "persona.md").write_text("You are Ana, renewed.\n", encoding="utf-8")
    code, out, err = start_ishiki("reload", str(root)).finish(input="")
    assert (code, out.startswith("asked the host (pid ")) == (0, True), err
    running.wait_stderr("profile ana (re)activated")
    fake_openai.tool_call("send_message", {"messages": ["second"]})
    running.send("two\n")
    assert running.line() == "second"
    assert fake_openai.last_request.json["messages"][0]["content"].startswith("You are Ana, renewed.")
    running.signal(signal.SIGTERM)
    code, _, err = running.finish()
    assert code == 0
    assert "SIGHUP: reloading the config" in err


def test_ishiki_models_lists_and_probes(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": ENGINES["test"]}, models=models_yaml(fake_openai))
    code, out, err = start_ishiki("models", str(root), "--json", "--probe").finish(input="")
    assert code == 0, err
    report = json.loads(out)
    assert [(m["ref"], m["groups"], m["probe"]["ok"]) for m in report["models"]] == [
        ("fake:fake-model", ["default"], True)
    ]
    code, out, _ = start_ishiki("models", str(root)).finish(input="")
    assert code == 0
    assert "fake:fake-model" in out
    assert "group default (failover): fake:fake-model" in out


def read_until(fd: int, marker: bytes, seen: bytearray, timeout: float = 20.0) -> bytes:
    """Read the terminal until ``marker`` appears in what was read since the last call."""
    import os
    import select
    import time

    deadline = time.monotonic() + timeout
    while marker not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError(f"{marker!r} did not appear; the terminal showed {bytes(seen)!r}")
        seen += os.read(fd, 4096)
    head, _, tail = bytes(seen).partition(marker)
    seen[:] = tail
    return head


def test_on_a_terminal_the_console_is_an_interactive_chat(
    ishiki_bin: Path, host_site: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    import os
    import pty
    import subprocess

    root = write_config(tmp_path / "bot", profiles={"ana": ENGINES["test"]}, models=models_yaml(fake_openai))
    fake_openai.tool_call("send_message", {"messages": ["hello, human"]})
    main, child = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(host_site), "HOME": str(tmp_path)}
    process = subprocess.Popen(
        [str(ishiki_bin), "run", str(root)],
        stdin=child,
        stdout=child,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    os.close(child)
    seen = bytearray()
    try:
        read_until(main, "› ".encode(), seen)
        os.write(main, b"hi\r")
        shown = read_until(main, b"hello, human", seen)
        read_until(main, "› ".encode(), seen)
        os.write(main, b"\x04")  # Ctrl-D: the end of input
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
        os.close(main)
    assert process.returncode == 0, err.decode()
    assert b"hi" in shown  # the terminal echoed what was typed
    assert fake_openai.last_request.json["messages"][-1]["content"] == "hi"
    assert (root / "data" / "channels" / "console" / "0" / "history").read_text().strip().endswith("hi")


def test_ishiki_models_probe_gives_up_on_a_hanging_server_and_names_its_url(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": ENGINES["test"]}, models=models_yaml(fake_openai))
    fake_openai.hang()
    code, out, err = start_ishiki("models", str(root), "--probe", "--timeout", "0.5").finish(input="")
    assert code == 1, err
    url = fake_openai.base_url
    assert f"probing 1 model at {url} (at most 0.5 s each)" in err
    (row,) = [line for line in out.splitlines() if line.strip().startswith("fake:fake-model")]
    assert row.endswith(f"unavailable: no answer within 0.5 s ({url})")
    assert f"  fake:fake-model: unavailable: no answer within 0.5 s ({url})" in err  # the progress line

    fake_openai.hang()  # one hanging answer per probe
    code, out, err = start_ishiki("models", str(root), "--probe", "--json", "--timeout", "0.5").finish(input="")
    assert code == 1
    (model,) = json.loads(out)["models"]
    assert (model["probe"]["ok"], model["probe"]["error_kind"], model["probe"]["url"]) == (False, "unavailable", url)


@pytest.mark.parametrize("timeout", ["0", "-1", "soon", "inf", "nan"])
def test_ishiki_models_refuses_a_timeout_that_is_no_positive_number(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path, timeout: str
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": ENGINES["test"]}, models=models_yaml(fake_openai))
    code, out, err = start_ishiki("models", str(root), "--probe", f"--timeout={timeout}").finish(input="")
    assert (code, out) == (2, "")
    assert "--timeout is a number of seconds" in err
    assert repr(timeout) in err
