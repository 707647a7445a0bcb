"""The confirmed update offset of one bot, kept in ``<state_dir>/telegram-offset.json``.

Telegram forgets an update only when a later ``getUpdates`` asks for a higher ``offset``; until then it sends
it again. The connection confirms an update (moves the offset past it) only after the host said the event is
durable, and saves the offset here at once, so a restart asks for exactly the updates not yet handled.

The file is replaced atomically (a temporary file, then a rename), so a crash leaves the old offset or the new
one, never half a file. A lagging offset (the process died between the host's answer and the save, or the
machine lost power before the page cache reached the disk) can only make Telegram send an update again, never
skip one; the event carries its ``updateId`` so the host can recognise the repeat. A file that cannot be read
is set aside and polling starts from Telegram's own memory of what was confirmed.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import anyio

__all__ = ["OffsetStore"]

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
