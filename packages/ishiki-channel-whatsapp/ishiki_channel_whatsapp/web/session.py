"""Where a linked device keeps its session: files in the account's state directory (``host.state_dir``, under
the host's data directory; never the config directory, which people copy and commit).

- ``whatsapp-web-session.db``: whatsmeow's SQLite store (the device's keys: whoever has it *is* the device);
  with its journal files beside it;
- ``whatsapp-web-identity.json``: the number the device is linked to (``{"phone", "lid", "name"}``), so the sid
  ``whatsapp:<phone>`` is known at start, before connecting.

``clear`` removes them all: a device WhatsApp logged out can never connect again, and a stale session would
only make the next start fail the same way instead of showing a new QR code.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import anyio

from ishiki_channel_whatsapp.web.wire import Identity

__all__ = ["IDENTITY_FILE", "SESSION_FILE", "Session"]

SESSION_FILE = "whatsapp-web-session.db"
IDENTITY_FILE = "whatsapp-web-identity.json"
_JOURNALS = ("-journal", "-wal", "-shm")


class Session:
    """The session files of one account under ``directory`` (see the module docstring)."""

    def __init__(self, directory: Path, *, logger: logging.Logger):
        self.directory = Path(directory)
        self.database = self.directory / SESSION_FILE
        self.identity_path = self.directory / IDENTITY_FILE
        self._logger = logger

    def exists(self) -> bool:
        """Whether a session database is there (it may still hold no paired device)."""
        return self.database.is_file() and self.database.stat().st_size > 0

    async def load_identity(self) -> Identity | None:
        """The identity saved at the last connection (``None`` without a session, or when unreadable)."""
        return await anyio.to_thread.run_sync(self._load)

    async def save_identity(self, identity: Identity) -> None:
        """Remember who the device is linked to (written whole, then moved into place)."""
        data = {"phone": identity.phone, "lid": identity.lid, "name": identity.name}
        await anyio.to_thread.run_sync(self._write, json.dumps(data))

    async def clear(self) -> list[Path]:
        """Remove the session and the identity; the paths removed."""
        return await anyio.to_thread.run_sync(self._clear)

    def _load(self) -> Identity | None:
        if not self.exists():
            return None
        try:
            data = json.loads(self.identity_path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self._logger.warning("%s cannot be read (%s); the number is learnt when connected", self.identity_path, exc)
            return None
        phone = data.get("phone") if isinstance(data, dict) else None
        if not isinstance(phone, str) or not phone.isdigit():
            return None
        lid, name = data.get("lid"), data.get("name")
        return Identity(phone, lid if isinstance(lid, str) else None, name if isinstance(name, str) else None)

    def _write(self, text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        temp = self.identity_path.with_name(f".{IDENTITY_FILE}.{os.getpid()}.tmp")
        temp.write_text(text, "utf-8")
        os.replace(temp, self.identity_path)

    def _clear(self) -> list[Path]:
        paths = [self.database, *(self.database.with_name(SESSION_FILE + end) for end in _JOURNALS), self.identity_path]
        removed = []
        for path in paths:
            try:
                path.unlink()
                removed.append(path)
            except FileNotFoundError:
                pass
        return removed
