"""``SeenIds``: the message ids an account has taken, kept on disk so a redelivery days later is recognised.

WhatsApp sends a webhook again until it gets a 200, for up to seven days. The host recognises a repeat among
the recent input of the runtime (``ChannelHost`` contract, "Repeats"), which covers a crash between "durable"
and "answered 200": the redelivery comes right after, and it is the runtime's newest input. It does not cover
a redelivery that comes after many more messages, nor input that never reached a fact log (set aside, or
owned by no profile). This file does: an id is added once the host made its message durable (or it was set
aside), and a message whose id is here is answered 200 without a second dispatch.

The file is ``<state_dir>/whatsapp-seen.jsonl``, one ``{"id", "at"}`` per line, appended as ids come. Ids older
than ``keep_seconds`` (eight days: Meta's seven and a margin) are forgotten; the file is rewritten without
them at start and whenever it grew by ``limit`` lines. A line that cannot be read is skipped: losing an id
can only let the host's own rule decide, never lose a message.
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from ishiki_host import Clock

__all__ = ["KEEP_SECONDS", "SEEN_FILE", "SeenIds"]

SEEN_FILE = "whatsapp-seen.jsonl"
KEEP_SECONDS = 8 * 86_400.0


class SeenIds:
    """The ids taken in the last ``keep_seconds`` (see the module docstring); call ``load`` before use."""

    def __init__(
        self,
        directory: Path,
        *,
        clock: Clock,
        logger: logging.Logger,
        keep_seconds: float = KEEP_SECONDS,
        limit: int = 50_000,
    ):
        self.path = Path(directory, SEEN_FILE)
        self._clock = clock
        self._logger = logger
        self._keep = keep_seconds
        self._limit = limit
        self._ids: OrderedDict[str, float] = OrderedDict()
        self._appended = 0
        self._lock = anyio.Lock()

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    async def load(self) -> None:
        """Read the file, forget what expired, and rewrite it without the expired and unreadable lines."""
        async with self._lock:
            await anyio.to_thread.run_sync(self._load)

    async def add(self, message_id: str) -> None:
        """Remember ``message_id`` (at once in memory, then on disk); a failed write is logged, never raised."""
        now = self._clock.now()
        self._ids[message_id] = now
        self._ids.move_to_end(message_id)
        line = json.dumps({"id": message_id, "at": now}) + "\n"
        async with self._lock:
            try:
                await anyio.to_thread.run_sync(self._append, line)
                self._appended += 1
                if self._appended >= self._limit:
                    self._forget_expired()  # here, in the loop: the thread below only writes a copy
                    await anyio.to_thread.run_sync(self._rewrite, list(self._ids.items()))
            except OSError as exc:
                self._logger.error("could not remember message %s in %s: %s", message_id, self.path, exc)

    def _load(self) -> None:
        self._ids.clear()
        try:
            lines = self.path.read_text("utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return
        except OSError as exc:
            self._logger.warning("%s cannot be read (%s); only the host recognises repeats for now", self.path, exc)
            return
        for line in lines:
            self._take(line)
        self._forget_expired()
        if len(lines) != len(self._ids):
            self._rewrite(list(self._ids.items()))

    def _take(self, line: str) -> None:
        try:
            item = json.loads(line)
        except ValueError:
            return
        if isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("at"), int | float):
            self._ids[item["id"]] = float(item["at"])
            self._ids.move_to_end(item["id"])

    def _forget_expired(self) -> None:
        horizon = self._clock.now() - self._keep
        for message_id, at in list(self._ids.items()):
            if at < horizon:
                del self._ids[message_id]

    def _append(self, line: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(line)

    def _rewrite(self, items: list[tuple[str, float]]) -> None:
        self._appended = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{SEEN_FILE}.{os.getpid()}.tmp")
        temp.write_text("".join(json.dumps({"id": i, "at": at}) + "\n" for i, at in items), "utf-8")
        os.replace(temp, self.path)
