"""The optional shell tool: off by default, owner-only, minimal environment, capped output, killed process groups."""

from __future__ import annotations

import os
import select
from pathlib import Path

import anyio
import pytest

from ishiki_host import FakeClock

pytestmark = pytest.mark.anyio


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` has exited (a zombie counts), waiting up to ``within`` seconds for it."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], within)
        return bool(readable)
    finally:
        os.close(fd)


async def test_the_shell_is_off_by_default(open_workspace) -> None:
    async with open_workspace() as ws:
        assert "shell" not in ws.tool_names()
        assert "shell" not in ws.ws.ishiki_instructions()
        assert ws.ws.ishiki_status() == ["workspace: root rw; shell off"]


async def test_the_shell_runs_in_the_root_for_owners_only(open_workspace) -> None:
    async with open_workspace({"shell": True}) as ws:
        tool = next(t for t in ws.ws.ishiki_tools() if t.name == "shell")
        assert tool.trust == "owner"
        (ws.root / "hello.txt").write_text("hi")
        result = await ws.ok("shell", command="pwd; cat hello.txt; echo oops >&2")
        assert result.content == f"[exit code 0]\n{ws.ws.settings.root.real}\nhioops\n"
        failed = await ws.ok("shell", command="exit 3")
        assert failed.content == "[exit code 3, no output]"
        assert failed.data == {"exitCode": 3, "timedOut": False, "omittedBytes": 0}
        assert "shell runs /bin/sh commands" in ws.ws.ishiki_instructions()


async def test_the_environment_is_minimal_and_carries_no_host_secret(
    open_workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:secret")
    async with open_workspace({"shell": True, "shell_env": {"PROJECT": "demo"}}) as ws:
        result = await ws.ok("shell", command="env")
        names = sorted(line.split("=", 1)[0] for line in result.content.splitlines()[1:])
        assert "secret" not in result.content
        assert {"HOME", "LANG", "PATH", "PROJECT", "TERM"} <= set(names)
        assert not {"OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN"} & set(names)
        assert f"HOME={ws.ws.settings.root.real}" in result.content
        assert "PROJECT=demo" in result.content


async def test_output_is_capped_keeping_head_and_tail(open_workspace) -> None:
    async with open_workspace({"shell": True, "max_output_bytes": 1024}) as ws:
        result = await ws.ok("shell", command="echo START; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END")
        assert result.content.startswith("[exit code 0]\nSTART\naaa")
        assert result.content.rstrip().endswith("END")
        assert result.data["omittedBytes"] == 100000 + len("START\n\nEND\n") - 1024
        assert "of output omitted (max_output_bytes)" in result.content


async def test_background_processes_do_not_outlive_the_command(open_workspace) -> None:
    async with open_workspace({"shell": True}) as ws:
        result = await ws.ok("shell", command="sleep 600 >/dev/null 2>&1 & echo $!")
        pid = int(result.content.splitlines()[1])
        assert _gone(pid)


async def test_the_deadline_kills_the_whole_process_group(open_workspace, tmp_path: Path) -> None:
    """The command starts a child shell, which starts a grandchild; at the deadline both are killed."""
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    clock = FakeClock()
    config = {"shell": True, "timeout_ms": 5000, "shell_env": {"FIFO": str(fifo)}}
    command = 'sh -c \'sleep 600 & echo "$$ $!" > "$FIFO"; wait\'; echo never reached'
    async with open_workspace(config, clock=clock) as ws:
        results = []
        sleepers = clock.sleepers

        async def run() -> None:
            results.append(await ws.call("shell", command=command))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            with anyio.fail_after(30):
                line = await anyio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True)
                child, grandchild = (int(pid) for pid in line.split())
                await clock.wait_for_sleepers(sleepers + 1)
            assert not _gone(child, within=0)
            assert not _gone(grandchild, within=0)
            await clock.advance(5)
        result = results[0]
        assert result.is_error
        assert result.content == (
            "[timed out after 5 s: the command and every process it started were killed, no output]"
        )
        assert result.data["timedOut"] is True
        assert _gone(child)
        assert _gone(grandchild)
