"""Input set aside, kept in ``<state_dir>/whatsapp-set-aside.jsonl`` for the operator.

A message the host rejected, or could not take after the account's ``dispatch_tries``, or that the channel
could not make sense of, is confirmed to the platform anyway so it stops sending it; its line here
(``{messageId, at, why, input}``, the input as the platform sent it) is what is left of it, to read or to
replay by hand. The file only grows by what was set aside, which is rare; the operator deletes it when read.
Lone surrogates are written as ``\\uXXXX`` escapes, so the file is always valid UTF-8.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio

__all__ = ["SET_ASIDE_FILE", "SetAsideFile"]

SET_ASIDE_FILE = "whatsapp-set-aside.jsonl"


class SetAsideFile:
    """Appends set-aside input to the file under ``directory`` (see the module docstring)."""

    def __init__(self, directory: Path, *, logger: logging.Logger):
        self.path = Path(directory, SET_ASIDE_FILE)
        self._logger = logger

    async def keep(self, message_id: str, data: Any, why: str, at: float) -> None:
        """Append one input; a failed write is logged, never raised (setting it aside must not stall)."""
        line = json.dumps({"messageId": message_id, "at": at, "why": why, "input": data}, default=repr)
        try:
            await anyio.to_thread.run_sync(self._append, line)
        except OSError as exc:
            self._logger.error("could not keep set-aside message %s in %s: %s", message_id, self.path, exc)

    def _append(self, line: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")
