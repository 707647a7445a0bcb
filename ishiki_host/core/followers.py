"""``Followers``: the readers that follow a log (a dashboard showing a conversation live), woken by each append.

A follower waits until its condition holds (an entry newer than the one it saw, or the log closed); the writer
calls ``wake`` after each append and at close. One event serves every follower waiting at once, made by the
first of them and dropped when set, so a log nobody follows pays one attribute check per append.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

__all__ = ["Followers"]


class Followers:
    """The followers of one log (see the module docstring)."""

    def __init__(self) -> None:
        self._changed: anyio.Event | None = None

    async def wait(self, done: Callable[[], bool]) -> None:
        """Return once ``done()`` holds, checked again after each ``wake``."""
        while not done():
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    def wake(self) -> None:
        """Let every waiting follower check its condition again."""
        if self._changed is not None:
            self._changed.set()
            self._changed = None
