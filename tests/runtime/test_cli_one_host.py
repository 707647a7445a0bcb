"""One host per config directory: a second ``ishiki run`` on it exits 1 with one line naming the first's pid and
changes nothing; the lock outlives no host, not even one killed with SIGKILL."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.testing import FakeOpenAIServer, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow

HOST = "reload_interval_seconds: 0\n"  # nothing polls: the first host's files change only when it is spoken to


def files_of(data: Path) -> dict[str, bytes]:
    """Every file under ``data`` with its bytes."""
    return {str(p.relative_to(data)): p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file()}


def started(start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, root: Path, answer: str) -> Any:
    """``ishiki run root`` once it has answered one console line (so it holds every lock it takes) and has
    written that turn down: the console reads ``/whoami`` only after the turn settled, and a command's answer
    writes nothing."""
    fake_openai.tool_call("send_message", {"messages": [answer]})
    running = start_ishiki("run", str(root))
    running.send("hi\n/whoami\n")
    assert running.line() == answer
    assert [running.line() for _ in range(3)][-1] == "trust: owner"
    return running


def test_a_second_host_on_the_same_dir_exits_1_in_one_line_and_touches_nothing(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": profile_yaml("console:local: ['*']")},
                        models=models_yaml(fake_openai), host=HOST)  # fmt: skip
    first = started(start_ishiki, fake_openai, root, "first here")
    pid = first.process.pid
    before, asked = files_of(root / "data"), len(fake_openai.requests)
    assert before["ishiki.pid"] == f"{pid}\n".encode()

    code, out, err = start_ishiki("run", str(root)).finish(input="are you there?\n")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"ishiki run: {root}: another host (pid {pid}) is running on {root / 'data'} "
        f"(lock {root / 'data' / 'ishiki.lock'}); stop it first"
    ]
    assert files_of(root / "data") == before  # no pid file change, no log entry, no database write
    assert len(fake_openai.requests) == asked  # its console never started: the line was not taken

    code, out, err = start_ishiki("reload", str(root)).finish(input="")
    assert (code, out) == (0, f"asked the host (pid {pid}) to reload {root}\n"), err  # the first is still found
    first.signal(signal.SIGTERM)
    code, _, err = first.finish()
    assert code == 0, err
    assert not (root / "data" / "ishiki.pid").exists()


def test_the_lock_of_a_killed_host_is_free_at_once(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": profile_yaml("console:local: ['*']")},
                        models=models_yaml(fake_openai), host=HOST)  # fmt: skip
    killed = started(start_ishiki, fake_openai, root, "about to die")
    killed.signal(signal.SIGKILL)
    assert killed.process.wait(timeout=30) == -signal.SIGKILL
    assert (root / "data" / "ishiki.pid").read_text() == f"{killed.process.pid}\n"  # left behind by the crash

    fake_openai.tool_call("send_message", {"messages": ["back again"]})
    code, out, err = start_ishiki("run", str(root)).finish(input="hello?\n")
    assert (code, out) == (0, "back again\n"), err
    assert not (root / "data" / "ishiki.pid").exists()
