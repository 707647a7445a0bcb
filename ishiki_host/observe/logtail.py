"""``HostLogTail``: the host's most recent log lines, kept for host plugins (``HostPluginContext.logs``).

A ``logging.Handler`` that keeps the last 2,000 records as ``LogLine``s in a ring. The host installs one on the
root logger while it runs (``installed()``, entered when the host starts and left when it stops), so it keeps
what every logger of the process says (the host's, its plugins' ``ishiki_host.hostplugin.<name>``, a channel
package's own such as ``ishiki_channel_telegram``) at the levels the loggers let through: the tail shows what
the host's log shows. Two hosts running in one process (as tests do) each keep every line logged while they
run, the other's too: a log record does not say which host it was for.

``emit`` may run on any thread (work in ``anyio.to_thread``, a library's own threads): the ring is guarded by
a lock, and a task waiting in ``wait_after`` is woken on its event loop's thread (``call_soon_threadsafe`` when
the line was logged on another thread; the host runs on asyncio, and on another backend a waiter is woken only
by a line logged on its own thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import traceback
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from ishiki_host.plugins.hostplugin import LogLine

__all__ = ["TAIL_LINES", "HostLogTail"]

TAIL_LINES = 2000
"""How many lines a tail keeps."""


class HostLogTail(logging.Handler):
    """The last ``capacity`` log lines (see the module docstring); a ``LogTail``."""

    def __init__(self, capacity: int = TAIL_LINES):
        super().__init__(logging.NOTSET)
        self._lines: deque[tuple[int, LogLine]] = deque(maxlen=capacity)  # with the level's number
        self._seq = 0
        self._guard = threading.Lock()
        self._waiters: list[tuple[anyio.Event, asyncio.AbstractEventLoop | None, int]] = []

    @property
    def last_seq(self) -> int:
        """The ``seq`` of the newest line (0 before the first)."""
        return self._seq

    def recent(self, limit: int = 200, *, min_level: str = "DEBUG", after: int = 0) -> tuple[LogLine, ...]:
        """The last ``limit`` lines at ``min_level`` or above with ``seq`` above ``after``, oldest first;
        ``ValueError`` for a level name ``logging`` does not know."""
        floor = _level(min_level)
        with self._guard:
            lines = [line for levelno, line in self._lines if line.seq > after and levelno >= floor]
        return tuple(lines[-limit:]) if limit > 0 else ()

    async def wait_after(self, seq: int) -> None:
        """Return once a line newer than ``seq`` exists (at once when one does)."""
        while True:
            with self._guard:
                if self._seq > seq:
                    return
                event = anyio.Event()
                self._waiters.append((event, _running_loop(), threading.get_ident()))
            await event.wait()

    def write(self, level: str, message: str, *, logger: str = "test", ts: float = 0.0) -> LogLine:
        """Keep a line as if ``logger`` had logged it (a test feeds a tail by hand this way)."""
        return self._keep(_level(level), logger, message, ts)

    def emit(self, record: logging.LogRecord) -> None:
        """Keep ``record`` as a line (its message, and the last line of its traceback when it has one)."""
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                last = traceback.format_exception_only(record.exc_info[0], record.exc_info[1])[-1].strip()
                message = f"{message}\n{last}"
            self._keep(record.levelno, record.name, message, record.created)
        except Exception:
            self.handleError(record)

    @contextmanager
    def installed(self, logger: logging.Logger | None = None) -> Iterator[HostLogTail]:
        """Keep what ``logger`` (the root logger by default) and its children log while the block runs."""
        target = logger if logger is not None else logging.getLogger()
        target.addHandler(self)
        try:
            yield self
        finally:
            target.removeHandler(self)

    def _keep(self, levelno: int, logger: str, message: str, ts: float) -> LogLine:
        with self._guard:
            self._seq += 1
            line = LogLine(self._seq, ts, logging.getLevelName(levelno), logger, message)
            self._lines.append((levelno, line))
            waiters, self._waiters = self._waiters, []
        for event, loop, thread in waiters:
            _wake(event, loop, thread)
        return line


def _level(name: str) -> int:
    number = logging.getLevelNamesMapping().get(name.upper())
    if number is None:
        raise ValueError(f"unknown log level {name!r} (use DEBUG, INFO, WARNING, ERROR or CRITICAL)")
    return number


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop of the waiting task (``None`` on another backend: it is woken on its own thread only)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _wake(event: anyio.Event, loop: asyncio.AbstractEventLoop | None, thread: int) -> None:
    if thread == threading.get_ident():
        event.set()
    elif loop is not None:
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there any more
            loop.call_soon_threadsafe(event.set)
