"""The worker pool with real processes (``pool_worker.py``): started and linked, a SIGKILLed worker restarted
while the others serve on, a worker that cannot use its config left failed, a silent one cut at its start
timeout, and a stop that drains them all."""

from __future__ import annotations

import logging
import os
import random
import signal
import stat
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import anyio
import pytest

from ishiki_host.core.backoff import jittered_delay
from ishiki_host.core.clock import Clock, FakeClock, SystemClock
from ishiki_host.errors import ChannelUnavailable
from ishiki_host.workers.peer import Handler, Peer, PeerClosed
from ishiki_host.workers.pool import WorkerPool

pytestmark = pytest.mark.anyio

SCRIPT = Path(__file__).with_name("pool_worker.py")
REPO = Path(__file__).resolve().parents[2]


def pool(
    tmp_path: Path,
    modes: Mapping[int, str],
    *,
    start_timeout: float = 60.0,
    clock: Clock | None = None,
    on_ready: Callable[[int, Peer], Awaitable[None]] | None = None,
) -> WorkerPool:
    def command(index: int, socket_path: Path) -> list[str]:
        return [sys.executable, str(SCRIPT), str(socket_path), str(index), modes.get(index, "serve")]

    def handlers(index: int) -> Mapping[str, Handler]:
        return {}

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return WorkerPool(
        len(modes), command, handlers, socket_path=tmp_path / "w.sock", clock=clock or SystemClock(),
        rng=random.Random(7), env=env, start_timeout=start_timeout, on_ready=on_ready,
    )  # fmt: skip


async def pid_of(peer: Peer) -> int:
    answer = await peer.call("echo", {})
    assert isinstance(answer, dict)
    pid = answer["pid"]
    assert isinstance(pid, int)
    return pid


async def kill_and_wait_restart(workers: WorkerPool, clock: FakeClock, index: int) -> float:
    """SIGKILL worker ``index``, check it waits the back-off on the clock, let it pass; the delay it waited."""
    restarts = workers.status()[index].restarts
    os.kill(await pid_of(await workers.wait_peer(index)), signal.SIGKILL)
    await clock.wait_for_sleepers(1)
    assert workers.status()[index].state == "restarting"
    deadline = clock.next_deadline()
    assert deadline is not None
    delay = deadline - clock.now()
    await clock.advance(delay)
    while not (workers.status()[index].restarts == restarts + 1 and workers.status()[index].state == "ready"):
        await workers.wait_change(index)
    return delay


async def test_a_killed_worker_is_restarted_with_back_off_while_the_others_serve_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    workers = pool(tmp_path, {0: "serve", 1: "serve"}, clock=clock)
    caplog.set_level(logging.WARNING, "ishiki_host.workers")
    replay = random.Random(7)  # the pool's source, drawn the same way
    async with anyio.create_task_group() as tg:
        await tg.start(workers.run)
        assert [s.state for s in workers.status()] == ["ready", "ready"]
        first = await pid_of(await workers.wait_peer(0))
        other = await pid_of(await workers.wait_peer(1))
        assert first == workers.status()[0].pid
        assert await kill_and_wait_restart(workers, clock, 0) == pytest.approx(jittered_delay(0, replay, initial=0.5))
        again = await pid_of(await workers.wait_peer(0))
        assert again != first
        assert await pid_of(await workers.wait_peer(1)) == other  # untouched
        assert (workers.status()[0].restarts, workers.status()[0].last_error) == (1, "SIGKILL")
        # dying again at once: the next step of the back-off; after 60 s up, the shortest again
        assert await kill_and_wait_restart(workers, clock, 0) == pytest.approx(jittered_delay(1, replay, initial=0.5))
        await clock.advance(60)
        assert await kill_and_wait_restart(workers, clock, 0) == pytest.approx(jittered_delay(0, replay, initial=0.5))
        assert workers.status()[1].restarts == 0
        await workers.stop(10)
        tg.cancel_scope.cancel()
    assert caplog.text.count("worker 0 died (SIGKILL); restarting in") == 3


async def test_a_worker_that_cannot_use_its_config_is_left_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workers = pool(tmp_path, {0: "serve", 1: "config"})
    async with anyio.create_task_group() as tg:
        await tg.start(workers.run)  # started: worker 1 failed its first start, worker 0 is ready
        assert [s.state for s in workers.status()] == ["ready", "failed"]
        with pytest.raises(ChannelUnavailable, match="worker 1 failed and is not restarted"):
            await workers.wait_peer(1)
        assert await pid_of(await workers.wait_peer(0)) == workers.status()[0].pid
        assert workers.status()[1].restarts == 0
        await workers.stop(10)
        tg.cancel_scope.cancel()
    assert "worker 1 cannot use the config directory; it is not restarted" in caplog.text


async def test_a_worker_silent_past_its_start_timeout_is_killed_and_tried_again(tmp_path: Path) -> None:
    workers = pool(tmp_path, {0: "silent"}, start_timeout=0.5)
    async with anyio.create_task_group() as tg:
        await tg.start(workers.run)
        while workers.status()[0].restarts < 1:
            await workers.wait_change(0)
        assert "no hello" in str(workers.status()[0].last_error)
        await workers.stop(10)
        tg.cancel_scope.cancel()


async def test_stop_drains_every_worker(tmp_path: Path) -> None:
    workers = pool(tmp_path, {0: "serve", 1: "serve", 2: "serve"})
    async with anyio.create_task_group() as tg:
        await tg.start(workers.run)
        await workers.stop(30)
        assert workers.exit_codes() == [0, 0, 0]  # each stopped when told, none was killed
        while any(s.state != "stopped" for s in workers.status()):
            await workers.wait_change(next(s.index for s in workers.status() if s.state != "stopped"))
        assert all(workers.peer(index) is None for index in range(3))
        with pytest.raises(ChannelUnavailable, match="stopping"):
            await workers.wait_peer(0)
        tg.cancel_scope.cancel()


async def test_the_socket_replaces_a_stale_file_and_only_its_user_may_connect(tmp_path: Path) -> None:
    (tmp_path / "w.sock").write_text("left by a supervisor that was killed")
    workers = pool(tmp_path, {0: "serve"})
    async with anyio.create_task_group() as tg:
        await tg.start(workers.run)
        assert stat.S_ISSOCK((tmp_path / "w.sock").stat().st_mode)
        assert stat.S_IMODE((tmp_path / "w.sock").stat().st_mode) == 0o600
        assert workers.status()[0].state == "ready"
        await workers.stop(10)
        tg.cancel_scope.cancel()


async def test_a_socket_path_too_long_for_a_unix_socket_is_refused_naming_it(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    workers = WorkerPool(
        1, lambda index, path: ["true"], lambda index: {}, socket_path=deep / "w.sock", clock=SystemClock(),
        rng=random.Random(7),
    )  # fmt: skip
    with pytest.raises(OSError, match=r"socket path .*dddd/w\.sock is too long"):
        await workers.run()


async def test_a_worker_that_cannot_be_told_what_it_must_know_is_started_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    failures: list[Exception] = [PeerClosed("it died while it was told"), ValueError("no channel list")]

    async def on_ready(index: int, peer: Peer) -> None:
        if failures:
            raise failures.pop(0)

    clock = FakeClock()
    workers = pool(tmp_path, {0: "serve"}, clock=clock, on_ready=on_ready)
    async with anyio.create_task_group() as tg:
        tg.start_soon(workers.run)
        while (workers.status()[0].restarts, workers.status()[0].state) != (2, "ready"):  # each failed telling is a
            # death, restarted after its back-off
            if workers.status()[0].state == "restarting":
                await clock.wait_for_sleepers(1)
                await clock.advance(30)
            else:
                await workers.wait_change(0)
        peer = await workers.wait_peer(0)
        assert await pid_of(peer) == workers.status()[0].pid  # the third start was told, and serves
        await workers.stop(10)
        tg.cancel_scope.cancel()
    assert "worker 0 could not be made ready: no channel list" in caplog.text
