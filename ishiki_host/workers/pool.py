"""The supervisor's worker processes: started, linked, watched, restarted with back-off, drained at the stop.

``WorkerPool.run`` binds a Unix socket (mode 0600; keep it in a folder only this user can enter, as the mode is set just
after the bind) and starts ``count`` worker processes; each connects and says hello (``{"hello": {"index": i, "pid":
p}}``), then its link is a ``Peer`` serving ``handlers(i)`` (the channel operations of its runtimes). ``on_ready(i,
peer)`` runs before the worker counts as ready (the supervisor tells it which channels are up). ``run`` reports started
once every worker is ready or has failed its first start, so the host does not wait for ever on one that cannot start.

A worker that exits, or whose link drops (its process is then stopped), is restarted after a back-off (from
0.5 s doubling to 30 s, jittered by the seeded random source; back to the shortest after 60 s up), and its
death is logged once with why ("worker 1 died (SIGKILL); restarting in 0.6 s"). One not ready within
``start_timeout`` is killed and counts as a failed start. One that exits with ``CONFIG_UNUSABLE`` (3: its config
directory cannot be loaded) is marked failed and left stopped, said once; the other workers keep running.
Events for a failed worker are refused (``ChannelUnavailable``) rather than held.

``stop(grace)`` tells each worker to stop (each drains its turns), waits for them all within ``grace``, then
kills what is left; nothing restarts after a stop began.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

from ishiki_host.core.backoff import jittered_delay
from ishiki_host.errors import ChannelUnavailable
from ishiki_host.workers.peer import Peer, PeerClosed
from ishiki_host.workers.wire import FrameError, FrameReader

if TYPE_CHECKING:
    import random

    from anyio.abc import ByteStream, Process, TaskGroup, TaskStatus

    from ishiki_host.core.clock import Clock
    from ishiki_host.jsontypes import Json
    from ishiki_host.workers.peer import Handler

__all__ = ["CONFIG_UNUSABLE", "LINK_GONE", "WorkerPool", "WorkerState", "WorkerStatus"]

logger = logging.getLogger("ishiki_host.workers")

CONFIG_UNUSABLE = 3
"""The exit status of a worker whose config directory cannot be loaded: restarting cannot help."""
LINK_GONE = 4
"""The exit status of a worker that ended at once because its link dropped (``ishiki_host.workers.worker``)."""
STABLE_SECONDS = 60.0
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS; keep clear of both
_LINK_GONE_GRACE = 10.0  # a worker whose link dropped stops itself; killed if it has not after this long

WorkerState = Literal["starting", "ready", "restarting", "failed", "stopped"]


@dataclass(slots=True)
class WorkerStatus:
    """One worker as ``ishiki status`` shows it."""

    index: int
    pid: int | None = None
    state: WorkerState = "starting"
    restarts: int = 0
    last_error: str | None = None

    def to_json(self) -> dict[str, Json]:
        """The status's JSON form."""
        return {
            "index": self.index,
            "pid": self.pid,
            "state": self.state,
            "restarts": self.restarts,
            "last_error": self.last_error,
        }


class _Worker:
    """One worker slot: its status, its live link, and what waits for changes."""

    def __init__(self, index: int):
        self.status = WorkerStatus(index)
        self.peer: Peer | None = None
        self.process: Process | None = None
        self.changed = anyio.Event()
        self.links: tuple[anyio.abc.ObjectSendStream[tuple[ByteStream, FrameReader]], ...] = ()
        self.first_done = False

    def note(self) -> None:
        """Wake whoever waits for a change of this worker."""
        self.changed.set()
        self.changed = anyio.Event()


class WorkerPool:
    """See the module docstring."""

    def __init__(
        self,
        count: int,
        command: Callable[[int, Path], Sequence[str]],
        handlers: Callable[[int], Mapping[str, Handler]],
        *,
        socket_path: Path,
        clock: Clock,
        rng: random.Random,
        env: Mapping[str, str] | None = None,
        start_timeout: float = 60.0,
        on_ready: Callable[[int, Peer], Awaitable[None]] | None = None,
    ):
        self.count = count
        self._command = command
        self._handlers = handlers
        self._socket_path = socket_path
        self._clock = clock
        self._rng = rng
        self._env = dict(env) if env is not None else None
        self._start_timeout = start_timeout
        self._on_ready = on_ready
        self._workers = [_Worker(index) for index in range(count)]
        self._stopping = False
        self._started = anyio.Event()

    @property
    def stopping(self) -> bool:
        """Whether ``stop`` was called: nothing restarts any more."""
        return self._stopping

    def status(self) -> list[WorkerStatus]:
        """Every worker's status, by index."""
        return [worker.status for worker in self._workers]

    async def wait_change(self, index: int) -> None:
        """Until the status of worker ``index`` changes next."""
        await self._workers[index].changed.wait()

    def exit_codes(self) -> list[int | None]:
        """The exit status of each worker's last process (``None`` while it runs, or before it started)."""
        return [w.process.returncode if w.process is not None else None for w in self._workers]

    def peer(self, index: int) -> Peer | None:
        """The live link of worker ``index`` while it is ready."""
        worker = self._workers[index]
        return worker.peer if worker.status.state == "ready" else None

    async def wait_peer(self, index: int) -> Peer:
        """The link of worker ``index`` once it is ready; ``ChannelUnavailable`` at once when it failed for good or
        the pool is stopping."""
        worker = self._workers[index]
        while True:
            if self._stopping:
                raise ChannelUnavailable("the workers are stopping; nothing more is taken")
            if worker.status.state == "failed":
                raise ChannelUnavailable(f"worker {index} failed and is not restarted: {worker.status.last_error}")
            if worker.status.state == "ready" and worker.peer is not None and not worker.peer.closed:
                return worker.peer
            await worker.changed.wait()

    async def broadcast(self, method: str, params: Mapping[str, Json]) -> dict[int, Json | BaseException]:
        """``method(params)`` on every ready worker, side by side; each one's answer or error."""
        results: dict[int, Json | BaseException] = {}

        async def one(index: int, peer: Peer) -> None:
            try:
                results[index] = await peer.call(method, params)
            except Exception as exc:
                results[index] = exc

        async with anyio.create_task_group() as tg:
            for index in range(self.count):
                peer = self.peer(index)
                if peer is not None:
                    tg.start_soon(one, index, peer)
        return results

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the workers until cancelled (see the module docstring)."""
        listener = await self._listen()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._accept, listener, tg)
                for worker in self._workers:
                    tg.start_soon(self._keep, worker)
                await self._started.wait()
                task_status.started()
        finally:
            with anyio.CancelScope(shield=True):
                await listener.aclose()
                for worker in self._workers:
                    _kill(worker.process)
                    if worker.status.state != "failed":
                        worker.status.state = "stopped"
                    worker.note()

    async def stop(self, grace: float) -> None:
        """Tell every worker to stop, wait for them within ``grace`` seconds, then kill what is left."""
        self._stopping = True
        with anyio.move_on_after(grace):  # a worker too busy to read its "stop" is killed like one that is slow
            for worker in self._workers:
                worker.note()
                if worker.peer is not None and not worker.peer.closed:
                    with contextlib.suppress(PeerClosed):
                        await worker.peer.notify("stop", {})
            for worker in self._workers:
                process = worker.process
                if process is not None and process.returncode is None:
                    await process.wait()
        for worker in self._workers:
            if worker.process is not None and worker.process.returncode is None:
                logger.warning("worker %d did not stop within %.0f s; killed", worker.status.index, grace)
                _kill(worker.process)

    # -- processes --------------------------------------------------------------------------------------

    async def _listen(self) -> anyio.abc.SocketListener:
        path = self._socket_path
        if len(os.fsencode(path)) > _SOCKET_PATH_MAX:
            raise OSError(f"the workers' socket path {path} is too long for a Unix socket ({_SOCKET_PATH_MAX} bytes)")
        path.unlink(missing_ok=True)  # a stale socket of a supervisor that was killed
        listener = await anyio.create_unix_listener(path)
        os.chmod(path, 0o600)
        return listener

    async def _accept(self, listener: anyio.abc.SocketListener, tg: TaskGroup) -> None:
        async def hello(stream: ByteStream) -> None:
            reader = FrameReader(stream)
            try:
                with anyio.fail_after(self._start_timeout):
                    first = await reader.read()
                index = _hello_index(first, self.count)
            except (FrameError, TimeoutError, OSError, anyio.BrokenResourceError) as exc:
                logger.warning("a process connected to the workers' socket without a valid hello: %s", exc)
                await stream.aclose()
                return
            worker = self._workers[index]
            if not worker.links:
                logger.warning("worker %d said hello while it was not starting; its link is closed", index)
                await stream.aclose()
                return
            await worker.links[0].send((stream, reader))

        async with listener:
            while True:
                stream = await listener.accept()
                tg.start_soon(hello, stream)

    async def _keep(self, worker: _Worker) -> None:
        """Keep one worker running until the pool stops or the worker fails for good."""
        attempt = 0
        status = worker.status
        while not self._stopping:
            started = self._clock.monotonic()
            why = await self._life(worker)
            self._first_done(worker)
            if self.stopping:  # it began while this life ran
                break
            if why == "config":
                status.state = "failed"
                worker.note()
                logger.error("worker %d cannot use the config directory; it is not restarted", status.index)
                break
            if self._clock.monotonic() - started >= STABLE_SECONDS:
                attempt = 0
            delay = jittered_delay(attempt, self._rng, initial=0.5, maximum=30.0)
            attempt += 1
            status.restarts += 1
            status.last_error = why
            status.state = "restarting"
            worker.note()
            logger.warning("worker %d died (%s); restarting in %.1f s", status.index, why, delay)
            await self._clock.sleep(delay)
        if status.state != "failed":
            status.state = "stopped"
            worker.note()
        self._first_done(worker)

    def _first_done(self, worker: _Worker) -> None:
        worker.first_done = True
        if all(w.first_done or w.status.state == "ready" for w in self._workers):
            self._started.set()

    async def _life(self, worker: _Worker) -> str:
        """One life of a worker process; why it ended (``config`` when restarting cannot help)."""
        status = worker.status
        status.state, status.pid = "starting", None
        worker.note()
        send, receive = anyio.create_memory_object_stream[tuple["ByteStream", FrameReader]](1)
        worker.links = (send,)
        argv = list(self._command(status.index, self._socket_path))
        try:
            process = worker.process = await anyio.open_process(
                argv, stdin=subprocess.DEVNULL, stdout=None, stderr=None, env=self._env
            )
        except OSError as exc:
            worker.links = ()
            return f"could not start: {exc}"
        status.pid = process.pid
        exited = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:

                async def watch_exit() -> None:
                    await process.wait()
                    exited.set()

                tg.start_soon(watch_exit)
                link: list[tuple[ByteStream, FrameReader]] = []

                async def hello() -> None:
                    link.append(await receive.receive())

                with anyio.move_on_after(self._start_timeout):
                    await _first(hello, exited.wait)
                worker.links = ()
                if link:
                    stream, reader = link[0]
                    peer = Peer(stream, self._handlers(status.index), label=f"worker {status.index}", reader=reader)
                    await tg.start(peer.run)
                    on_ready = self._on_ready
                    if on_ready is not None:

                        async def told() -> None:
                            try:
                                await on_ready(status.index, peer)
                            except Exception as exc:  # it could not be told what it must know: start it again
                                if not isinstance(exc, PeerClosed):  # (it died meanwhile: said as its death)
                                    logger.warning("worker %d could not be made ready: %s", status.index, exc)
                                await peer.aclose()

                        await _first(told, peer.wait_closed)
                    if not peer.closed:
                        worker.peer = peer
                        status.state = "ready"
                        worker.note()
                        self._first_done(worker)
                        if self._stopping:  # the stop began while it started: it missed the others' "stop"
                            with contextlib.suppress(PeerClosed):
                                await peer.notify("stop", {})
                    await _first(peer.wait_closed, exited.wait)
                    await peer.aclose()
                    with anyio.move_on_after(_LINK_GONE_GRACE):  # a worker stops itself when its link is gone
                        await exited.wait()
                elif not exited.is_set():
                    status.last_error = f"not ready within {self._start_timeout:g} s"
                _kill(process)
                with anyio.CancelScope(shield=True):
                    await exited.wait()
                tg.cancel_scope.cancel()
        finally:
            worker.links = ()
            worker.peer = None
            await receive.aclose()
            await send.aclose()
            if not exited.is_set():
                _kill(process)
        code = process.returncode
        if code == CONFIG_UNUSABLE:
            return "config"
        if not link:
            return f"no hello ({_describe_exit(code)})" if code is not None else "no hello"
        return _describe_exit(code) if code is not None else "unknown"


async def _first(*waits: Callable[[], Awaitable[object]]) -> None:
    """Until the first of ``waits`` returns (the others are cancelled)."""
    async with anyio.create_task_group() as tg:

        async def one(wait: Callable[[], Awaitable[object]]) -> None:
            await wait()
            tg.cancel_scope.cancel()

        for wait in waits:
            tg.start_soon(one, wait)


def _hello_index(first: dict[str, Json] | None, count: int) -> int:
    hello = first.get("hello") if first is not None else None
    index = hello.get("index") if isinstance(hello, dict) else None
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
        raise FrameError(f"expected {{'hello': {{'index': 0..{count - 1}}}}}, got {first!r}")
    return index


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    if code == LINK_GONE:
        return "its link was gone"
    return f"exit code {code}"


def _kill(process: Process | None) -> None:
    if process is not None and process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
