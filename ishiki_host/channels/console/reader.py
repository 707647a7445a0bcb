"""Blocking reads of lines in a daemon thread, for the console on piped input (a blocked read never keeps the
process alive).

A read cannot be taken back once its thread is blocked in ``readline``: when the connection that asked for the
line stops first (a reload, or ``ishiki run`` restarting its host in another shape), the thread still takes the
next line from the stream. So there is one reader per stream (``ThreadReader.of``), and a read in flight or done
and not yet taken is handed to the next ``line()``, whichever connection asks: no line is lost between two
connections of the same stdin.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import IO

import anyio
import anyio.from_thread
import anyio.lowlevel

from ishiki_host.errors import ChannelError

__all__ = ["ThreadReader"]

_READERS: weakref.WeakKeyDictionary[IO[str], ThreadReader] = weakref.WeakKeyDictionary()


class _Read:
    """One ``read`` in a daemon thread of its own; ``wait`` until it returned, from any task of any loop."""

    def __init__(self, read: Callable[[], str | None]):
        self._lock = threading.Lock()
        self._result: list[str | BaseException | None] = []
        self._waiters: list[tuple[anyio.lowlevel.EventLoopToken, anyio.Event]] = []
        threading.Thread(target=self._work, args=(read,), name="ishiki-console-reader", daemon=True).start()

    def _work(self, read: Callable[[], str | None]) -> None:
        try:
            result: str | BaseException | None = read()
        except BaseException as exc:  # EOFError, KeyboardInterrupt, a closed stream
            result = exc
        with self._lock:
            self._result.append(result)
            waiters = list(self._waiters)
        for token, done in waiters:
            with contextlib.suppress(RuntimeError):  # its loop may be gone when a read returns at exit
                anyio.from_thread.run_sync(done.set, token=token)

    async def wait(self) -> str | BaseException | None:
        """What ``read`` returned or raised."""
        done = anyio.Event()
        waiter = (anyio.lowlevel.current_token(), done)
        with self._lock:
            if not self._result:
                self._waiters.append(waiter)
        try:
            if not self._result:
                await done.wait()
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
        return self._result[0]


class ThreadReader:
    """Reads lines of one stream with ``read``, each in a fresh daemon thread (see the module docstring)."""

    def __init__(self, read: Callable[[], str | None]):
        self._read = read
        self._pending: _Read | None = None  # a read in flight, or done and not yet taken

    @classmethod
    def of(cls, stream: IO[str], read: Callable[[], str | None]) -> ThreadReader:
        """The reader of ``stream``, made with ``read`` the first time: one per stream for the whole process."""
        reader = _READERS.get(stream)
        if reader is None:
            reader = _READERS[stream] = cls(read)
        return reader

    async def line(self) -> str | None:
        """The next line without its newline, or ``None`` at the end of input."""
        pending = self._pending
        if pending is None:
            pending = self._pending = _Read(self._read)
        result = await pending.wait()  # cancelled here, the read stays pending for the next caller
        self._pending = None
        if isinstance(result, EOFError | KeyboardInterrupt):
            return None
        if isinstance(result, BaseException):
            raise ChannelError(f"cannot read the console: {result}") from result
        return result
