"""DM pairing in the command layer: what a ``trust.unlisted: pairing`` profile says to unlisted senders.

An unlisted sender of such a profile is refused until an operator approves them, and again once the approval
is revoked. Before each admission of an unlisted sender, ``Pairing.refresh`` hands the profile's approvals
(``store.repos.pairing``, in the memory database, written by ``ishiki pairing approve`` and ``revoke`` from
another process, or by the dashboard in this one) to the ``TrustPolicy``, whole: a revoked sender is simply
missing from them. The repository remembers them until the database changes, so this costs one data-version
check a message.

A refused sender in a direct chat gets a code (``PAIRING_TEXT``) and nothing else: the same code while it
holds, sent again at most every ``RESEND_SECONDS``, a new one after it expired. In a group chat a code would
be read by everyone, so an unlisted sender there is refused as with ``unlisted: refuse``. An approved sender
is welcomed once (``WELCOME_TEXT``) on their next message, which then goes on as any other.

Without a memory database there is nowhere to keep codes: every unlisted sender is refused (logged once).
Codes are ``CODE_LENGTH`` characters of ``CODE_ALPHABET`` drawn from the runtime's random source (seeded
in tests, from the OS otherwise).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ishiki_host.errors import StoreError
from ishiki_host.store.repos.pairing import CODE_ALPHABET

if TYPE_CHECKING:
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.runtime.trust import TrustPolicy
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.pairing import PairedSender

__all__ = ["CODE_LENGTH", "PAIRING_TEXT", "RESEND_SECONDS", "WELCOME_TEXT", "Pairing"]

logger = logging.getLogger(__name__)

CODE_LENGTH = 6
RESEND_SECONDS = 60.0
PAIRING_TEXT = (
    "I only talk with people my owner let in. Your pairing code is {code}: give it to my owner, "
    "who can let you in with it. It expires in {expiry}."
)
WELCOME_TEXT = "My owner let you in: welcome! I am listening now."


class Pairing:
    """The pairing side of one runtime's command layer (see the module docstring)."""

    def __init__(self, runtime: RuntimeContext, policy: TrustPolicy):
        self._rt = runtime
        self._policy = policy
        self._warned = False

    @property
    def on(self) -> bool:
        """Whether the profile pairs unlisted senders (``trust.unlisted: pairing``)."""
        return self._policy.mode == "pairing"

    async def refresh(self, sender: str | None) -> PairedSender | None:
        """Give the policy the current approvals when ``sender`` is unlisted; ``sender``'s approval, if any."""
        if not self.on or sender is None or self._policy.listed(sender):
            return None
        store = self._store()
        if store is None:
            return None
        try:
            approved = await store.pairing.approved(self._rt.profile.id)
        except StoreError as exc:  # the approvals cannot be read: the sender stays unadmitted, the host serves on
            logger.error("%s: cannot read the pairing approvals: %s", self._rt.key, exc)
            return None
        self._policy.use_paired({who: paired.level for who, paired in approved.items()})
        return approved.get(sender)

    async def welcome(self, paired: PairedSender) -> str | None:
        """``WELCOME_TEXT`` the first time an approved sender writes (recorded), else ``None``."""
        store = self._store()
        if paired.told_at is not None or store is None:
            return None
        try:
            first = await store.pairing.mark_told(paired.profile, paired.sender)
        except StoreError as exc:
            logger.error("%s: cannot record that %s was welcomed: %s", self._rt.key, paired.sender, exc)
            return None
        return WELCOME_TEXT if first else None

    async def code_text(self, sender: str, event: IshikiEvent) -> str | None:
        """What a refused ``sender`` gets in the direct chat of ``event``: their code, or ``None`` while it was
        sent less than ``RESEND_SECONDS`` ago (or when codes cannot be kept)."""
        store = self._store()
        if store is None:
            return None
        trust = self._rt.profile.trust
        try:
            issued = await store.pairing.issue(
                self._rt.profile.id,
                sender,
                channel=f"{event.sid} {event.channel_id}",
                name=event.user.name if event.user is not None else None,
                ttl=trust.pairing_expiry_seconds,
                resend_after=RESEND_SECONDS,
                new_code=self._new_code,
            )
        except StoreError as exc:
            logger.error("%s: cannot issue a pairing code to %s: %s", self._rt.key, sender, exc)
            return None
        if not issued.send:
            return None
        request = issued.request
        logger.info(
            "%s: pairing code %s for %s (ishiki pairing approve %s)", self._rt.key, request.code, sender, request.code
        )
        remaining = request.expires_at - self._rt.clock.now()
        return PAIRING_TEXT.format(code=request.code, expiry=duration(remaining))

    def _new_code(self) -> str:
        return "".join(self._rt.rng.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))

    def _store(self) -> MemoryStore | None:
        store = self._rt.services.memory
        if store is None and not self._warned:
            self._warned = True
            logger.warning(
                "%s: trust.unlisted is pairing but the memory database is not open (%s): unlisted senders are refused",
                self._rt.key,
                self._rt.services.memory_error or "no database",
            )
        return store


def duration(seconds: float) -> str:
    """``1 hour``, ``90 minutes``, ``45 seconds``: a span as a sender reads it (rounded up, never ``0``)."""
    whole = max(1, int(-(-seconds // 1)))
    for size, unit in ((3600, "hour"), (60, "minute")):
        if (whole >= size and whole % size == 0) or whole >= 2 * size:
            count = -(-whole // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{whole} second{'s' if whole != 1 else ''}"
