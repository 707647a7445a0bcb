"""``ishiki run DIR`` in a real subprocess, for a plugin's end-to-end tests (a crash, a restart, a wrong secret).

    process = await IshikiProcess(root, "--workers", "2", env={"TOKEN": token}).start()
    await process.logged("channel telegram is up")   # the first stderr line holding it, once it is written
    await process.kill()                              # SIGKILL, as a crash or a power cut would stop it
    assert await process.stop() == 0                  # SIGTERM, then the exit status

Its stderr is read as it comes by a daemon thread (no task group to hand in), so ``logged`` wakes on the line
that holds the words, never by polling; ``stderr()`` is everything logged so far. stdin and stdout are closed:
the console channel sees the end of input at once. ``env`` is the whole environment of the process (default:
this one's, without ``PYTHONPATH``, so the process runs what is installed, as an operator's would); the
``ishiki`` command is the one beside this Python. ``close`` (and the end of ``async with``) kills a process
still running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

__all__ = ["IshikiProcess", "free_ports"]


class IshikiProcess:
    """One ``ishiki run`` process (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str], *options: str, env: Mapping[str, str] | None = None):
        self.root = Path(root)
        self.options = options
        self.env = dict(env) if env is not None else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.process: subprocess.Popen[bytes] | None = None
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._waiters: list[tuple[anyio.lowlevel.EventLoopToken, anyio.Event]] = []
        self._ended = False
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        """The process id."""
        assert self.process is not None, "start the process first"
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status, or ``None`` while it runs."""
        assert self.process is not None, "start the process first"
        return self.process.poll()

    async def start(self) -> Self:
        """Start ``ishiki run ROOT OPTIONS``."""
        command = [str(Path(sys.executable).with_name("ishiki")), "run", str(self.root), *self.options]

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env
            )

        self.process = await anyio.to_thread.run_sync(spawn)
        assert self.process.stderr is not None
        self._reader = threading.Thread(
            target=self._read, args=(self.process.stderr,), name="ishiki-stderr", daemon=True
        )
        self._reader.start()
        return self

    def _read(self, stream: IO[bytes]) -> None:
        with contextlib.suppress(ValueError, OSError):  # closed under it by ``close``, after its cap
            for raw in stream:
                self._add(raw.decode(errors="replace").rstrip("\n"))
        with self._lock:
            self._ended = True
        self._wake()

    def _add(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
        self._wake()

    def _wake(self) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for token, changed in waiters:
            with contextlib.suppress(RuntimeError):  # that test's loop is gone
                anyio.from_thread.run_sync(changed.set, token=token)

    async def logged(self, words: str, *, deadline: float = 60.0) -> str:
        """The first stderr line holding ``words``, once it is written (``deadline``: a cap as a last resort;
        ``EOFError`` when the process ended without writing it)."""
        with anyio.fail_after(deadline):
            while True:
                changed = anyio.Event()
                with self._lock:
                    found = next((line for line in self._lines if words in line), None)
                    ended = self._ended
                    if found is None and not ended:
                        self._waiters.append((anyio.lowlevel.current_token(), changed))
                if found is not None:
                    return found
                if ended:
                    raise EOFError(f"ishiki run ended without logging {words!r}:\n{self.stderr()}")
                await changed.wait()

    def stderr(self) -> str:
        """Everything the process logged so far."""
        with self._lock:
            return "\n".join(self._lines)

    async def wait(self) -> int:
        """Until the process exits; its exit status."""
        assert self.process is not None, "start the process first"
        return await anyio.to_thread.run_sync(self.process.wait)

    async def kill(self) -> None:
        """SIGKILL, as a crash or a power cut would stop it; returns once it is gone."""
        assert self.process is not None, "start the process first"
        self.process.kill()
        await self.wait()

    async def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """``sig`` (SIGTERM: a clean stop, turns finish within the grace), then the exit status."""
        assert self.process is not None, "start the process first"
        self.process.send_signal(sig)
        return await self.wait()

    async def close(self) -> None:
        """Kill the process if it still runs, read what it wrote to the end, and close its pipe."""
        if self.process is None:
            return
        if self.process.poll() is None:
            await self.kill()
        if self._reader is not None:  # its workers may hold the pipe a moment longer: a cap as a last resort
            await anyio.to_thread.run_sync(self._reader.join, 30.0)
        if self.process.stderr is not None:
            self.process.stderr.close()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def free_ports(count: int) -> list[int]:
    """``count`` loopback ports nobody listens on right now, for ``ishiki run`` processes to listen on (held open
    together while asked for, so they differ; another process may still take one before they do)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()
