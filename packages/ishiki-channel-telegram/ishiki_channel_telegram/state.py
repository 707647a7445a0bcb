"""The confirmed update offset of one bot, kept in ``<state_dir>/telegram-offset.json``.

Telegram forgets an update only when a later ``getUpdates`` asks for a higher ``offset``; until then it sends
it again. The connection confirms an update (moves the offset past it) only after the host said the event is
durable (or the update was set aside), and saves the offset here at once, so a restart asks for exactly the
updates not yet handled (and takes those Telegram was already told to forget from ``held``, below).

The file is replaced atomically (a temporary file, then a rename), so a crash leaves the old offset or the new
one, never half a file. ``OffsetSaver`` writes behind the poll loop: each confirmed offset is handed to it at
once, and it writes the latest one whenever the previous write is done, so a slow disk never slows dispatch and
the saved offset trails the confirmed one by at most the updates confirmed during one write. A state may be
handed over as a callable, asked for the state when the write begins (the intake's ``held`` is gathered once per
write, not at every change). ``written()`` waits for the state last handed over to be on the disk: polling
waits for it (or for the updates in hand to be handled) before asking past ``held``.

A lagging offset (the process died between the host's answer and the save, or the machine lost power before
the page cache reached the disk) can only make Telegram send an update again, never skip one; the event carries
its ``updateId`` so the host can recognise the repeat. A file that cannot be read is set aside and polling
starts from Telegram's own memory of what was confirmed.

Beside the offset the file keeps what a poison update needs to be recognised across restarts (``PollState``):
the update being retried and how many of its tries failed (``failing``), and how many updates were set aside
so far (``setAside``). They are left out while empty, so the file of a bot without trouble is
``{botId, offset}``.

Polling goes on while an update is still being dispatched (``ishiki_channel_telegram.intake``: a message that
joins a running turn is durable only when the turn's step ends, and a ``/stop`` sent meanwhile must be seen).
A ``getUpdates`` asking past an update makes Telegram forget it, so before such a poll the updates fetched and
not yet handled are written here in full (``held``, oldest first, the file synced to the disk): from then on
this file is what a restart takes them from. ``offset`` stays the confirmed one (every update before it is
handled), and ``recent`` lists the ids handled ahead of a held one (a command answered at once), so that a
restart recognises them if Telegram sends them again.

In webhook mode there is no offset to confirm (a 200 answer confirms an update; ``offset`` is ``null``), and
``recent`` keeps the ids of the last updates handled instead (at most ``RECENT_SAVED``): Telegram redelivers an
update whose 200 never reached it, after a restart too, and such an update, set aside or taken, is then
recognised without being tried again.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from ishiki_host import parse_json, read_text
from ishiki_host.errors import ConfigError

__all__ = ["RECENT_SAVED", "OffsetSaver", "OffsetStore", "PollState"]

_FILE = "telegram-offset.json"

RECENT_SAVED = 256
"""How many recent update ids webhook mode saves: more than Telegram has in flight at once (at most 100
connections), so every update a crash left unanswered is among them."""


@dataclass(frozen=True, slots=True)
class PollState:
    """What a restart resumes from: the confirmed ``offset`` (``None``: ask Telegram), the update being retried
    as ``(update_id, failed tries)``, how many updates were set aside so far, the ids of updates handled that
    the offset does not cover (webhook mode: the last ones handled; polling: those handled ahead of a held
    one), oldest first, and the updates fetched but not yet handled that Telegram may have forgotten already
    (``held``, whole, oldest first)."""

    offset: int | None = None
    failing: tuple[int, int] | None = None
    set_aside: int = 0
    recent: tuple[int, ...] = ()
    held: tuple[dict[str, Any], ...] = ()

    def to_json(self, bot_id: int) -> dict[str, Any]:
        """The file's object (empty parts left out)."""
        data: dict[str, Any] = {"botId": bot_id, "offset": self.offset}
        if self.failing is not None:
            data["failing"] = {"updateId": self.failing[0], "tries": self.failing[1]}
        if self.set_aside:
            data["setAside"] = self.set_aside
        if self.recent:
            data["recent"] = list(self.recent)
        if self.held:
            data["held"] = list(self.held)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PollState:
        """Inverse of ``to_json``; ``ValueError`` names the part that is not what it should be."""
        failing, set_aside = data.get("failing"), data.get("setAside", 0)
        if failing is not None:
            if not isinstance(failing, dict) or not all(_is_int(failing.get(k)) for k in ("updateId", "tries")):
                raise ValueError("'failing' is not {updateId, tries}")
            failing = (failing["updateId"], failing["tries"])
        if not _is_int(set_aside) or set_aside < 0:
            raise ValueError("'setAside' is not a count")
        recent = data.get("recent", [])
        if not isinstance(recent, list) or not all(_is_int(item) for item in recent):
            raise ValueError("'recent' is not a list of update ids")
        held = data.get("held", [])
        if not isinstance(held, list) or not all(isinstance(u, dict) and _is_int(u.get("update_id")) for u in held):
            raise ValueError("'held' is not a list of updates")
        return cls(data["offset"], failing, set_aside, tuple(recent[-RECENT_SAVED:]), tuple(held))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_offset(value: object) -> bool:
    """An update id, or ``None``: nothing confirmed yet (a poison update may fail before anything is)."""
    return value is None or _is_int(value)


class OffsetStore:
    """Load and save the ``PollState`` of bot ``bot_id`` under ``directory``."""

    def __init__(self, directory: Path, bot_id: int, *, logger: logging.Logger):
        self.path = Path(directory, _FILE)
        self.bot_id = bot_id
        self._logger = logger

    async def load(self) -> PollState:
        """The saved state; an empty one when nothing is saved, the file is another bot's, or unreadable."""
        return await anyio.to_thread.run_sync(self._load)

    async def save(self, state: PollState) -> None:
        """Replace the saved state with ``state``."""
        await anyio.to_thread.run_sync(self._save, state)

    def _load(self) -> PollState:
        if not self.path.exists():
            return PollState()
        try:  # the host's hardened loader: a mangled file nested 100,000 deep is one error, not a crash loop
            data = parse_json(read_text(self.path, str(self.path), ConfigError), str(self.path), ConfigError).data
        except ConfigError as exc:
            self._set_aside(f"cannot be read ({exc.message})")
            return PollState()
        if not isinstance(data, dict) or "offset" not in data or not _is_offset(data["offset"]):
            self._set_aside("does not hold {botId, offset}")
            return PollState()
        if data.get("botId") != self.bot_id:
            self._logger.warning(
                "%s belongs to bot %s, not %s (the token changed bots); starting from what Telegram holds",
                self.path,
                data.get("botId"),
                self.bot_id,
            )
            return PollState()
        try:
            return PollState.from_json(data)
        except ValueError as exc:
            self._logger.warning("%s: %s; only its offset is used", self.path, exc)
            return PollState(data["offset"])

    def _save(self, state: PollState) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{_FILE}.{os.getpid()}.tmp")
        with temp.open("w", encoding="utf-8") as file:
            file.write(json.dumps(state.to_json(self.bot_id)))
            if state.held:  # Telegram is about to forget these: this file must hold them through a power cut
                file.flush()
                os.fsync(file.fileno())
        os.replace(temp, self.path)
        if state.held:
            _sync_directory(self.path.parent)

    def _set_aside(self, why: str) -> None:
        aside = self.path.with_name(self.path.name + ".bad")
        self._logger.warning("%s %s; moved to %s, starting from what Telegram holds", self.path, why, aside.name)
        try:
            os.replace(self.path, aside)
        except OSError as exc:
            self._logger.warning("could not move %s aside: %s", self.path, exc)


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable, where the system can (a directory that cannot be opened or
    synced, as on Windows and some network file systems, is left to the system)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class OffsetSaver:
    """Writes the latest ``PollState`` behind the poll loop (see the module docstring).

    ``run`` is a service task; when it is cancelled it writes the latest state once more (shielded), so a
    clean stop leaves the exact offset on disk. A failed write is logged and retried with the next state.
    """

    def __init__(self, store: OffsetStore, *, logger: logging.Logger):
        self._store = store
        self._logger = logger
        self._latest: PollState | Callable[[], PollState] | None = None
        self._saved: PollState | None = None
        self._wake = anyio.Event()
        self._asked = 0  # how many states were handed over; the last one is ``_latest``
        self._done = 0  # the count of the last one written (or found written already)
        self._failed = 0  # the count of the last one whose write failed
        self._flushed = anyio.Event()

    def request(self, state: PollState | Callable[[], PollState]) -> None:
        """Save ``state`` (or a later one) soon; a callable is asked for the state when the write begins."""
        self._latest = state
        self._asked += 1
        self._wake.set()

    async def written(self) -> bool:
        """Wait until the state last requested (or a later one) is on the disk; False when writing it failed."""
        target = self._asked
        while self._done < target:
            if self._failed >= target:
                return False
            await self._flushed.wait()
        return True

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
        latest, count = self._latest, self._asked
        state = latest() if callable(latest) else latest
        try:
            if state is not None and state != self._saved:
                await self._store.save(state)
                self._saved = state
            self._done = count
        except OSError as exc:
            self._failed = count
            self._logger.error("could not save the telegram offset to %s: %s", self._store.path, exc)
        finally:
            self._flushed.set()
            self._flushed = anyio.Event()
