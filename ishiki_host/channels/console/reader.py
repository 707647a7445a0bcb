"""Blocking reads of lines in a daemon thread, for the console on piped input (a blocked read never keeps the
process alive)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import anyio
import anyio.from_thread
import anyio.lowlevel

from ishiki_host.errors import ChannelError

__all__ = ["ThreadReader"]


class ThreadReader:
    """Calls ``read`` in a fresh daemon thread for each line (see the module docstring)."""

    def __init__(self, read: Callable[[], str | None]):
        self._read = read

    async def line(self) -> str | None:
        """The next line without its newline, or ``None`` at the end of input."""
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        box: list[str | BaseException | None] = []

        def work() -> None:
            try:
                box.append(self._read())
            except BaseException as exc:  # EOFError, KeyboardInterrupt, a closed stream
                box.append(exc)
            with contextlib.suppress(RuntimeError):  # the loop may be gone when a read returns at exit
                anyio.from_thread.run_sync(done.set, token=token)

        threading.Thread(target=work, name="ishiki-console-reader", daemon=True).start()
        await done.wait()
        result = box[0]
        if isinstance(result, EOFError | KeyboardInterrupt):
            return None
        if isinstance(result, BaseException):
            raise ChannelError(f"cannot read the console: {result}") from result
        return result
