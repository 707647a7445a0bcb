"""DM pairing: the codes unlisted senders were given, and the senders an operator approved.

A profile with ``trust.unlisted: pairing`` answers an unlisted sender in a direct chat with a short code
(``issue``); ``ishiki pairing approve CODE`` (another process) turns the request into an approval
(``approve``): the sender is listed at a level for that profile from then on, until ``ishiki pairing revoke``
or the dashboard removes the approval (``revoke``). A request expires (``expires_at``); an expired one is kept
a while so an operator who types its code is told when it expired, then ``expire`` removes it. There is at
most one request per profile and sender: asking again while it is open gives the same code, and after it
expired a new one.

The running host reads the approvals for every message of an unlisted sender (``approved``). The answer is
remembered with SQLite's ``PRAGMA data_version``, which changes when another connection (the CLI) commits,
and a generation this repository moves with each of its own writes (the dashboard's, in the host's process):
one pragma per message, and the table is read again only after a write, an approval or a revocation alike.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from ishiki_host.core.tools import TRUST_ORDER
from ishiki_host.errors import PairingCodeError, StoreError

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.jsontypes import Json
    from ishiki_host.store.db import Database

__all__ = [
    "CODE_ALPHABET",
    "Issued",
    "PairedSender",
    "PairingRepo",
    "PairingRequest",
    "format_time",
    "normalize_code",
]

CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
"""The characters of a code: no 0/O, 1/I, so a code read aloud or copied by hand survives."""
KEEP_EXPIRED_SECONDS = 7 * 86_400  # an expired request still explains itself to `approve` for a week
_ISSUE_TRIES = 8  # a fresh code that collides with a stored one is drawn again
_REQUEST_COLUMNS = "code, profile, sender, channel, name, requested_at, expires_at, sent_at"
_PAIRED_COLUMNS = "profile, sender, level, code, approved_at, told_at"


@dataclass(frozen=True, slots=True)
class PairingRequest:
    """An unlisted sender's request: the code they were given, where they asked, and until when it holds.

    ``sender`` is ``platform:userId``, ``channel`` where they asked (``sid channel_id``), ``name`` the name the
    platform gave; the times are Unix seconds (``sent_at``: when the code was last sent to them).
    """

    code: str
    profile: str
    sender: str
    channel: str
    name: str | None
    requested_at: float
    expires_at: float
    sent_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> PairingRequest:
        """Build from a row selected with the repository's request columns."""
        return cls(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7])

    def to_json(self) -> dict[str, Json]:
        """The JSON form ``ishiki pairing list --json`` and the dashboard's ``/api/pairing`` give."""
        return {
            "code": self.code,
            "profile": self.profile,
            "sender": self.sender,
            "name": self.name,
            "channel": self.channel,
            "requestedAt": self.requested_at,
            "expiresAt": self.expires_at,
        }


@dataclass(frozen=True, slots=True)
class PairedSender:
    """An approved sender (``platform:userId``): listed at ``level`` for ``profile`` since ``approved_at``, with
    the ``code`` they asked with; ``told_at`` is when the host welcomed them (``None`` until their next message)."""

    profile: str
    sender: str
    level: TrustLevel
    code: str
    approved_at: float
    told_at: float | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> PairedSender:
        """Build from a row selected with the repository's approval columns."""
        return cls(row[0], row[1], cast("TrustLevel", row[2]), row[3], row[4], row[5])

    def to_json(self) -> dict[str, Json]:
        """The JSON form ``ishiki pairing list --json`` and the dashboard's ``/api/pairing`` give."""
        return {
            "profile": self.profile,
            "sender": self.sender,
            "level": self.level,
            "code": self.code,
            "approvedAt": self.approved_at,
            "toldAt": self.told_at,
        }


@dataclass(frozen=True, slots=True)
class Issued:
    """What ``issue`` found or made: the open request, and whether the code is to be sent now."""

    request: PairingRequest
    send: bool


def normalize_code(text: str) -> str:
    """A code as typed (any case, spaces or dashes) in its stored form."""
    return "".join(ch for ch in text.upper() if ch not in " -")


@dataclass(slots=True)
class _Approvals:
    """The approvals of each profile read so far, valid while ``data_version`` and ``generation`` hold."""

    data_version: int
    generation: int
    by_profile: dict[str, dict[str, PairedSender]]


class PairingRepo:
    """The ``pairing_requests`` and ``paired_senders`` tables (see the module docstring)."""

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock
        self._generation = 0  # moved by this process's own writes (data_version only sees other connections')
        self._approvals: _Approvals | None = None

    async def issue(
        self,
        profile: str,
        sender: str,
        *,
        channel: str,
        name: str | None,
        ttl: float,
        resend_after: float,
        new_code: Callable[[], str],
    ) -> Issued:
        """The open request of ``sender``, or a new one (code from ``new_code``) valid ``ttl`` seconds.

        ``send`` is true for a new request, and for an open one last sent ``resend_after`` seconds ago or more
        (then ``sent_at`` moves to now): a sender who keeps writing gets the same code, not one per message.
        """
        if ttl <= 0:
            raise StoreError(f"a pairing code must be valid for a positive time, got {ttl!r} seconds")
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> Issued:
            row = conn.execute(
                f"SELECT {_REQUEST_COLUMNS} FROM pairing_requests WHERE profile = ? AND sender = ?", (profile, sender)
            ).fetchone()
            if row is not None and row[6] > now:
                request = PairingRequest.from_row(row)
                if now - request.sent_at < resend_after:
                    return Issued(request, send=False)
                conn.execute("UPDATE pairing_requests SET sent_at = ? WHERE code = ?", (now, request.code))
                return Issued(dataclasses.replace(request, sent_at=now), send=True)
            conn.execute("DELETE FROM pairing_requests WHERE profile = ? AND sender = ?", (profile, sender))
            conn.execute("DELETE FROM pairing_requests WHERE expires_at < ?", (now - KEEP_EXPIRED_SECONDS,))
            request = PairingRequest(_fresh_code(conn, new_code), profile, sender, channel, name, now, now + ttl, now)
            conn.execute(
                f"INSERT INTO pairing_requests ({_REQUEST_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (request.code, profile, sender, channel, name, now, now + ttl, now),
            )
            return Issued(request, send=True)

        return await self._db.write(run)

    async def requests(self, *, profile: str | None = None, expired: bool = False) -> list[PairingRequest]:
        """The open requests (of ``profile``, or all), oldest first; ``expired=True`` adds the expired ones."""
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> list[PairingRequest]:
            rows = conn.execute(
                f"SELECT {_REQUEST_COLUMNS} FROM pairing_requests WHERE (? IS NULL OR profile = ?) "
                "AND (? OR expires_at > ?) ORDER BY requested_at, code",
                (profile, profile, int(expired), now),
            )
            return [PairingRequest.from_row(row) for row in rows]

        return await self._db.read(run)

    async def approve(self, code: str, level: TrustLevel) -> PairedSender:
        """List the sender of the open request ``code`` at ``level`` for its profile; the request is used up.

        ``PairingCodeError`` when no request has that code (``unknown``; ``approved`` when it was approved
        before) or it has expired (``expired``).
        """
        if level not in TRUST_ORDER:
            raise StoreError(f"level must be untrusted, trusted or owner, not {level!r}")
        wanted = normalize_code(code)
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> PairedSender:
            row = conn.execute(f"SELECT {_REQUEST_COLUMNS} FROM pairing_requests WHERE code = ?", (wanted,)).fetchone()
            if row is None:
                raise _not_pending(conn, wanted)
            request = PairingRequest.from_row(row)
            if request.expires_at <= now:
                raise PairingCodeError(
                    wanted, "expired", f"code {wanted} expired at {format_time(request.expires_at)}; ask for a new one"
                )
            conn.execute("DELETE FROM pairing_requests WHERE code = ?", (wanted,))
            conn.execute(
                f"INSERT INTO paired_senders ({_PAIRED_COLUMNS}) VALUES (?, ?, ?, ?, ?, NULL) "
                "ON CONFLICT (profile, sender) DO UPDATE SET level = excluded.level, code = excluded.code, "
                "approved_at = excluded.approved_at, told_at = NULL",
                (request.profile, request.sender, level, wanted, now),
            )
            self._generation += 1
            return PairedSender(request.profile, request.sender, level, wanted, now, None)

        return await self._db.write(run)

    async def approved(self, profile: str) -> Mapping[str, PairedSender]:
        """The approved senders of ``profile`` by ``platform:userId`` (remembered until the table changes)."""

        def run(conn: sqlite3.Connection) -> dict[str, PairedSender]:
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            known = self._approvals
            if known is None or known.data_version != version or known.generation != self._generation:
                known = self._approvals = _Approvals(version, self._generation, {})
            found = known.by_profile.get(profile)
            if found is None:
                rows = conn.execute(f"SELECT {_PAIRED_COLUMNS} FROM paired_senders WHERE profile = ?", (profile,))
                found = known.by_profile[profile] = {row[1]: PairedSender.from_row(row) for row in rows}
            return found

        return dict(await self._db.read(run))

    async def all_approved(self) -> list[PairedSender]:
        """Every approval, by profile then sender."""

        def run(conn: sqlite3.Connection) -> list[PairedSender]:
            rows = conn.execute(f"SELECT {_PAIRED_COLUMNS} FROM paired_senders ORDER BY profile, sender")
            return [PairedSender.from_row(row) for row in rows]

        return await self._db.read(run)

    async def revoke(self, profile: str, sender: str) -> PairedSender | None:
        """Remove the approval of ``sender`` for ``profile``; the approval removed, ``None`` when there was none.

        The running host refuses the sender from their next message (their next direct message gets a new code).
        """

        def run(conn: sqlite3.Connection) -> PairedSender | None:
            row = conn.execute(
                f"SELECT {_PAIRED_COLUMNS} FROM paired_senders WHERE profile = ? AND sender = ?", (profile, sender)
            ).fetchone()
            if row is None:
                return None
            conn.execute("DELETE FROM paired_senders WHERE profile = ? AND sender = ?", (profile, sender))
            self._generation += 1
            return PairedSender.from_row(row)

        return await self._db.write(run)

    async def mark_told(self, profile: str, sender: str) -> bool:
        """Record that ``sender`` was told of their approval; whether it was still untold."""
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> bool:
            changed = conn.execute(
                "UPDATE paired_senders SET told_at = ? WHERE profile = ? AND sender = ? AND told_at IS NULL",
                (now, profile, sender),
            ).rowcount
            self._generation += 1
            return changed > 0

        return await self._db.write(run)

    async def expire(self, *, keep: float = KEEP_EXPIRED_SECONDS) -> int:
        """Delete the requests that expired more than ``keep`` seconds ago; returns how many."""
        horizon = self._clock.now() - keep
        return await self._db.write(
            lambda conn: conn.execute("DELETE FROM pairing_requests WHERE expires_at < ?", (horizon,)).rowcount
        )


def format_time(timestamp: float) -> str:
    """A stored time as operators read it in messages: ``2024-05-01 12:30:00 UTC``."""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fresh_code(conn: sqlite3.Connection, new_code: Callable[[], str]) -> str:
    for _ in range(_ISSUE_TRIES):
        code = normalize_code(new_code())
        if not code:
            raise StoreError("the pairing code source gave an empty code")
        if conn.execute("SELECT 1 FROM pairing_requests WHERE code = ?", (code,)).fetchone() is None:
            return code
    raise StoreError(f"could not draw an unused pairing code in {_ISSUE_TRIES} tries")


def _not_pending(conn: sqlite3.Connection, code: str) -> PairingCodeError:
    row = conn.execute("SELECT profile, sender, approved_at FROM paired_senders WHERE code = ?", (code,)).fetchone()
    if row is not None:
        return PairingCodeError(
            code, "approved", f"code {code} was already approved at {format_time(row[2])} ({row[1]}, profile {row[0]})"
        )
    return PairingCodeError(code, "unknown", f"no pending request with code {code}")
