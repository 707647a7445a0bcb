"""The confirmed update offset of one bot, kept in ``<state_dir>/telegram-offset.json``.

Telegram forgets an update only when a later ``getUpdates`` asks for a higher ``offset``; until then it sends
it again. The connection confirms an update (moves the offset past it) only after the host said the event is
durable, and saves the offset here at once, so a restart asks for exactly the updates not yet handled.

The file is replaced atomically (a temporary file, then a rename), so a crash leaves the old offset or the new
one, never half a file. ``OffsetSaver`` writes behind the poll loop: each confirmed offset is handed to it at
once, and it writes the latest one whenever the previous write is done, so a slow disk never slows dispatch and
the saved offset trails the confirmed one by at most the updates confirmed during one write.

A lagging offset (the process died between the host's answer and the save, or the machine lost power before
the page cache reached the disk) can only make Telegram send an update again, never skip one; the event carries
its ``updateId`` so the host can recognise the repeat. A file that cannot be read is set aside and polling
starts from Telegram's own memory of what was confirmed.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import anyio

__all__ = ["OffsetSaver", "OffsetStore"]

_FILE = "telegram-offset.json"


class OffsetStore:
    """Load and save the offset of bot ``bot_id`` under ``directory``."""

    def __init__(self, directory: Path, bot_id: int, *, logger: logging.Logger):
        self.path = Path(directory, _FILE)
        self.bot_id = bot_id
        self._logger = logger

    async def load(self) -> int | None:
        """The saved offset, or ``None`` (nothing saved, another bot's file, or an unreadable file)."""
        return await anyio.to_thread.run_sync(self._load)

    async def save(self, offset: int) -> None:
        """Replace the saved offset with ``offset``."""
        await anyio.to_thread.run_sync(self._save, offset)

    def _load(self) -> int | None:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self._set_aside(f"cannot be read ({exc})")
            return None
        if not isinstance(data, dict) or not isinstance(data.get("offset"), int) or isinstance(data["offset"], bool):
            self._set_aside("does not hold {botId, offset}")
            return None
        if data.get("botId") != self.bot_id:
            self._logger.warning(
                "%s belongs to bot %s, not %s (the token changed bots); starting from what Telegram holds",
                self.path,
                data.get("botId"),
                self.bot_id,
            )
            return None
        return int(data["offset"])

    def _save(self, offset: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{_FILE}.{os.getpid()}.tmp")
        temp.write_text(json.dumps({"botId": self.bot_id, "offset": offset}), "utf-8")
        os.replace(temp, self.path)

    def _set_aside(self, why: str) -> None:
        aside = self.path.with_name(self.path.name + ".bad")
        self._logger.warning("%s %s; moved to %s, starting from what Telegram holds", self.path, why, aside.name)
        try:
            os.replace(self.path, aside)
        except OSError as exc:
            self._logger.warning("could not move %s aside: %s", self.path, exc)


class OffsetSaver:
    """Writes the latest confirmed offset behind the poll loop (see the module docstring).

    ``run`` is a service task; when it is cancelled it writes the latest offset once more (shielded), so a
    clean stop leaves the exact offset on disk. A failed write is logged and retried with the next offset.
    """

    def __init__(self, store: OffsetStore, *, logger: logging.Logger):
        self._store = store
        self._logger = logger
        self._latest: int | None = None
        self._saved: int | None = None
        self._wake = anyio.Event()

    def request(self, offset: int) -> None:
        """Save ``offset`` (or a later one) soon."""
        self._latest = offset
        self._wake.set()

    async def run(self) -> None:
        """Save whenever asked, until cancelled."""
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await self._flush()
        finally:
            with anyio.CancelScope(shield=True):
                await self._flush()

    async def _flush(self) -> None:
        offset = self._latest
        if offset is None or offset == self._saved:
            return
        try:
            await self._store.save(offset)
        except OSError as exc:
            self._logger.error("could not save the telegram offset to %s: %s", self._store.path, exc)
            return
        self._saved = offset
