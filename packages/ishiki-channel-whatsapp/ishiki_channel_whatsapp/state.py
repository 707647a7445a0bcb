"""What an account remembers across restarts of its trouble: ``<state_dir>/whatsapp-state.json``.

``{"account", "setAside", "lastSetAside", "failing": {<message id>: <failed tries>}}``: how many messages were set
aside so far, the last one, and the failed tries of each message the host could not take yet, so a restart
neither forgets a poison message's count nor the operator's tally. It is written (atomically) only when one of
those changes, which is rare; a file that cannot be read is moved aside as ``.bad`` and the account starts
afresh (repeats are still recognised: that is ``SeenIds``' job, not this file's).
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from ishiki_host import parse_json, read_text
from ishiki_host.errors import ConfigError

__all__ = ["FAILING_KEPT", "STATE_FILE", "AccountState", "StateStore"]

STATE_FILE = "whatsapp-state.json"
FAILING_KEPT = 1000
"""Messages whose failed tries are remembered (the oldest are forgotten first)."""


@dataclass(slots=True)
class AccountState:
    """The counts above (see the module docstring); ``failing`` is oldest first."""

    set_aside: int = 0
    last_set_aside: dict[str, Any] | None = None
    failing: OrderedDict[str, int] = field(default_factory=OrderedDict)

    def to_json(self, account: str) -> dict[str, Any]:
        """The file's object."""
        return {
            "account": account,
            "setAside": self.set_aside,
            "lastSetAside": self.last_set_aside,
            "failing": dict(self.failing),
        }

    @classmethod
    def from_json(cls, data: Any) -> AccountState:
        """Inverse of ``to_json``; ``ValueError`` names the part that is not what it should be."""
        if not isinstance(data, dict):
            raise ValueError("it is not an object")
        count, last, failing = data.get("setAside", 0), data.get("lastSetAside"), data.get("failing", {})
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError("'setAside' is not a count")
        if last is not None and not isinstance(last, dict):
            raise ValueError("'lastSetAside' is not an object")
        if not isinstance(failing, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in failing.values()
        ):
            raise ValueError("'failing' is not {message id: tries}")
        return cls(count, last, OrderedDict(failing))


class StateStore:
    """Loads and saves the ``AccountState`` of ``account`` (a sid) under ``directory``."""

    def __init__(self, directory: Path, account: str, *, logger: logging.Logger):
        self.path = Path(directory, STATE_FILE)
        self.account = account
        self._logger = logger
        self._lock = anyio.Lock()

    async def load(self) -> AccountState:
        """The saved state; an empty one when nothing is saved, the file is another account's, or unreadable."""
        return await anyio.to_thread.run_sync(self._load)

    async def save(self, state: AccountState) -> None:
        """Replace the saved state with ``state``; a failed write is logged, never raised."""
        text = json.dumps(state.to_json(self.account), default=repr)
        async with self._lock:
            try:
                await anyio.to_thread.run_sync(self._save, text)
            except OSError as exc:
                self._logger.error("could not save %s: %s", self.path, exc)

    def _load(self) -> AccountState:
        if not self.path.exists():
            return AccountState()
        try:  # the host's hardened loader: a mangled file is one error, not a crash loop
            data = parse_json(read_text(self.path, str(self.path), ConfigError), str(self.path), ConfigError).data
            if isinstance(data, dict) and data.get("account") != self.account:
                self._logger.warning(
                    "%s belongs to %s, not %s; starting afresh", self.path, data.get("account"), self.account
                )
                return AccountState()
            return AccountState.from_json(data)
        except (ConfigError, ValueError) as exc:
            self._move_aside(str(exc))
            return AccountState()

    def _save(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{STATE_FILE}.{os.getpid()}.tmp")
        temp.write_text(text, "utf-8")
        os.replace(temp, self.path)

    def _move_aside(self, why: str) -> None:
        aside = self.path.with_name(self.path.name + ".bad")
        self._logger.warning("%s cannot be read (%s); moved to %s, starting afresh", self.path, why, aside.name)
        try:
            os.replace(self.path, aside)
        except OSError as exc:
            self._logger.warning("could not move %s aside: %s", self.path, exc)
