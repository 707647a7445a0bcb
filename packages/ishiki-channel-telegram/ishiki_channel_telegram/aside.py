"""Updates set aside, kept in ``<state_dir>/telegram-set-aside.jsonl`` for the operator.

An update the host could not take after its tries, or that it rejected, is confirmed past so later updates
flow; its line here (``{updateId, at, why, update}``, the update as Telegram sent it) is what is left of it,
to read or to replay by hand. The file only grows by what was set aside, which is rare; the operator deletes
it when read. Lone surrogates are written as ``\\uXXXX`` escapes, so the file is always valid UTF-8.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio

__all__ = ["SetAsideFile"]

_FILE = "telegram-set-aside.jsonl"


class SetAsideFile:
    """Appends set-aside updates to the file under ``directory`` (see the module docstring)."""

    def __init__(self, directory: Path, *, logger: logging.Logger):
        self.path = Path(directory, _FILE)
        self._logger = logger

    async def keep(self, update_id: int, update: Any, why: str, at: float) -> None:
        """Append one update; a failed write is logged, never raised (setting it aside must not stall)."""
        line = json.dumps({"updateId": update_id, "at": at, "why": why, "update": update}, default=repr)
        try:
            await anyio.to_thread.run_sync(self._append, line)
        except OSError as exc:
            self._logger.error("could not keep set-aside update %d in %s: %s", update_id, self.path, exc)

    def _append(self, line: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")
