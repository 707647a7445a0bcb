"""The control socket on its own: a request answered as JSON, an unknown request refused, a long path, a
stale socket file replaced, a host that does not answer, the socket removed at the stop."""

from __future__ import annotations

import socket
import stat
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.errors import HostNotAnswering
from ishiki_host.observe import ControlServer, ask_host

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def serving(path: Path, answers: dict[str, Callable[[], Any]]) -> AsyncIterator[ControlServer]:
    server = ControlServer(path, answers)
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        yield server
        tg.cancel_scope.cancel()


async def ask(path: Path, request: str, seconds: float = 10.0) -> Any:
    return await anyio.to_thread.run_sync(lambda: ask_host(path, request, timeout=seconds))


async def test_a_request_is_answered_and_an_unknown_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "ishiki.sock"
    async with serving(path, {"status": lambda: {"profiles": {"ana": "ready"}}}):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert await ask(path, "status") == {"profiles": {"ana": "ready"}}
        with pytest.raises(HostNotAnswering, match=r"could not answer 'nope': unknown request 'nope'; known: status"):
            await ask(path, "nope")
    assert not path.exists()


async def test_a_path_longer_than_a_socket_address_is_reached_through_its_directory(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = deep / "ishiki.sock"
    assert len(str(path)) > 108
    async with serving(path, {"status": lambda: "up"}):
        assert path.exists()
        assert await ask(path, "status") == "up"


async def test_a_socket_left_by_a_crash_is_refused_then_replaced(tmp_path: Path) -> None:
    path = tmp_path / "ishiki.sock"
    with pytest.raises(HostNotAnswering, match="does not exist"):
        await ask(path, "status")
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))
    left.close()  # the file stays, nothing listens: what a killed host leaves
    with pytest.raises(HostNotAnswering, match="nothing listens on"):
        await ask(path, "status")
    async with serving(path, {"status": lambda: "again"}):
        assert await ask(path, "status") == "again"


async def test_a_host_that_does_not_answer_in_time(tmp_path: Path) -> None:
    path = tmp_path / "ishiki.sock"
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(str(path))
    mute.listen(1)  # connections queue, none is ever accepted
    try:
        with pytest.raises(HostNotAnswering, match=r"did not answer on .* within 0.2 s"):
            await ask(path, "status", seconds=0.2)
    finally:
        mute.close()


async def test_an_oversized_request_gets_no_answer_and_the_server_serves_on(tmp_path: Path) -> None:
    path = tmp_path / "ishiki.sock"
    async with serving(path, {"status": lambda: "fine"}):

        def flood() -> bytes:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(10)
                sock.connect(str(path))
                sock.sendall(b"x" * 4096)
                return sock.recv(100)

        assert await anyio.to_thread.run_sync(flood) == b""
        assert await ask(path, "status") == "fine"


async def test_a_failing_answer_is_logged_and_the_server_serves_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "ishiki.sock"

    def broken() -> Any:
        raise RuntimeError("status broke")

    async with serving(path, {"status": broken, "ping": lambda: "pong"}):
        failed = r"answering failed \(RuntimeError: status broke\); see the host's log"
        with pytest.raises(HostNotAnswering, match=failed):
            await ask(path, "status")
        assert await ask(path, "ping") == "pong"
    assert "status broke" in caplog.text
