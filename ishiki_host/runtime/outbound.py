"""Sending: where a message may go, and how it goes out through a channel connection.

``RuntimeOutbox`` is the ``Outbox`` behind the kernel ``send_message`` tool and ``reply_with_text``. It
resolves the target (channel mode: the runtime's own channel; cross mode: a target the profile's claims
allow, and one the turn is answering unless the turn is at least ``trusted``), waits the optional typing
delay (showing typing meanwhile), sends each message through the connection (which splits it), notes the ids
for echo dropping and emits ``message.sent`` on the runtime's bus. A reply streamed as a draft
(``runtime.drafts``) is delivered through the draft's ``finish_draft`` instead of ``send`` (no typing delay:
the person watched it being written), with the same bookkeeping.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from ishiki_host.addresses.ids import Target
from ishiki_host.channels.base import SendResult
from ishiki_host.core.tools import trust_allows
from ishiki_host.errors import FactLogError

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.channels.base import ChannelConnection
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.bus import EventBus
    from ishiki_host.core.clock import Clock
    from ishiki_host.plugins.runtime_api import TurnView
    from ishiki_host.runtime.drafts import OpenDraft

__all__ = ["Fence", "Outlets", "RuntimeOutbox", "typing_delay"]

logger = logging.getLogger(__name__)


class Outlets(Protocol):
    """The channel connections runtimes send through (the host's live connections)."""

    def connection(self, sid: str) -> ChannelConnection | None:
        """The running connection of ``platform:selfId``, if any."""
        ...

    def note_sent(self, sid: str, channel_id: str, ids: Sequence[str]) -> None:
        """Remember ids the host sent, so their echoes are dropped when the platform reports them back."""
        ...


Fence = Callable[[], Awaitable[None]]
"""Awaited before each send of a runtime's messages; raises ``FactLogError`` when the host may no longer speak
for the runtime (``SharedParts.fence``: a fleet's lease that is gone)."""


def typing_delay(text: str, chars_per_second: float, max_delay_ms: int) -> float:
    """Seconds to "type" ``text``: its length at ``chars_per_second``, at most ``max_delay_ms``."""
    return min(len(text) / chars_per_second, max_delay_ms / 1000)


class RuntimeOutbox:
    """The outbox of one runtime (see the module docstring)."""

    def __init__(
        self,
        key: RuntimeKey,
        profile: Profile,
        outlets: Outlets,
        bus: EventBus,
        clock: Clock,
        turn: Callable[[], TurnView],
        fallback: Callable[[], Target | None] = lambda: None,
        fence: Fence | None = None,
    ):
        self._key = key
        self._profile = profile
        self._outlets = outlets
        self._bus = bus
        self._clock = clock
        self._turn = turn
        self._fallback = fallback
        self._fence = fence

    @property
    def needs_target(self) -> bool:
        """Cross-mode runtimes serve many channels: every send names one."""
        return self._key.mode == "cross"

    def default_target(self) -> Target | None:
        """Where a reply goes without a target: the own channel, or (cross) the turn's newest inbound channel."""
        if self._key.sid is not None and self._key.channel_id is not None:
            return Target(self._key.sid, self._key.channel_id)
        return self._turn().latest_target() or self._fallback()

    def connection(self, target: Target) -> ChannelConnection | None:
        """The running connection ``target`` is sent through, if any."""
        return self._outlets.connection(target.sid)

    def check_target(self, target: Target | None) -> Target | str:
        """The target to use, or why the model may not send there."""
        own = self.default_target() if self._key.mode == "channel" else None
        if self._key.mode == "channel":
            assert own is not None
            if target is not None and target != own:
                return f"this persona runs in channel mode: send_message answers {own} only; leave target out"
            return own
        if target is None:
            return "target is required in cross mode: give the sid and channelId shown with the message"
        if not self._profile.claims.matches(target.sid, target.channel_id):
            return f"{target} is not a channel profile '{self._profile.id}' claims ({_claims(self._profile)})"
        turn = self._turn()
        if target not in turn.targets() and not trust_allows(turn.trust, "trusted"):
            return f"sending to a channel this turn is not answering needs trust 'trusted'; this turn is '{turn.trust}'"
        return target

    async def send(
        self, messages: Sequence[str], target: Target | None, reply_to: str | None, *, draft: OpenDraft | None = None
    ) -> SendResult:
        """Send ``messages`` in order to ``target`` (checked); stop at the first failure.

        ``draft``: the first message is the reply that draft showed; it is delivered through its
        ``finish_draft`` (when it goes where the draft is; otherwise the draft is dropped and it is sent).
        """
        resolved = self.check_target(target)
        connection = self._outlets.connection(resolved.sid) if not isinstance(resolved, str) else None
        if draft is not None and (not _same(connection, draft.connection) or resolved != draft.target):
            await draft.drop("aborted")
            draft = None
        if isinstance(resolved, str):
            return SendResult(error=resolved)
        if connection is None:
            return SendResult(error=f"channel {resolved.sid} is not connected right now")
        if self._fence is not None:
            try:
                await self._fence()
            except FactLogError as exc:  # nothing goes out: the runtime's log refuses its next entry too
                if draft is not None:
                    await draft.drop("aborted")
                return SendResult(error=f"not sent: {exc}")
        ids: list[str] = []
        for index, text in enumerate(messages):
            first_reply = reply_to if index == 0 else None
            if index == 0 and draft is not None:
                result, error = await self._finish_draft(draft, text, first_reply)
            else:
                result, error = await self._send_one(connection, resolved, text, first_reply)
            if result is not None:
                ids.extend(result.ids)
                if result.ids:
                    await self._sent(resolved, result.ids, text, first_reply)
                error = error or result.error
            if error is not None:
                return SendResult(tuple(ids), f"message {index + 1} of {len(messages)}: {error}")
        return SendResult(tuple(ids))

    async def _send_one(
        self, connection: ChannelConnection, target: Target, text: str, reply_to: str | None
    ) -> tuple[SendResult | None, str | None]:
        typing = self._profile.typing
        try:
            if typing is not None:
                await self._type(connection, target, typing_delay(text, typing.chars_per_second, typing.max_delay_ms))
            return await connection.send(target.channel_id, text, reply_to=reply_to), None
        except Exception as exc:
            logger.warning("sending to %s failed", target, exc_info=True)
            return None, f"{type(exc).__name__}: {exc}"

    async def _finish_draft(
        self, draft: OpenDraft, text: str, reply_to: str | None
    ) -> tuple[SendResult | None, str | None]:
        try:
            return await draft.finish(text, reply_to), None
        except Exception as exc:
            logger.warning("finishing draft %s in %s failed", draft.id, draft.target, exc_info=True)
            return None, f"{type(exc).__name__}: {exc}"

    async def _type(self, connection: ChannelConnection, target: Target, delay: float) -> None:
        if delay <= 0:
            return
        try:
            await connection.send_typing(target.channel_id)
        except Exception:
            logger.debug("typing indicator to %s failed", target, exc_info=True)
        await self._clock.sleep(delay)

    async def _sent(self, target: Target, ids: Sequence[str], text: str, reply_to: str | None) -> None:
        self._outlets.note_sent(target.sid, target.channel_id, ids)
        await self._bus.emit(
            "message.sent", channel_id=target.channel_id, sid=target.sid, ids=list(ids), text=text, reply_to=reply_to
        )


def _same(connection: object, other: object) -> bool:
    """Whether both are the one connection object (a restarted channel's draft is not this connection's)."""
    return connection is other


def _claims(profile: Profile) -> str:
    shown = []
    for sid, claim in profile.claims.by_sid.items():
        patterns = [str(p) for p in claim.includes] + [f"!{p}" for p in claim.excludes]
        shown.append(f"{sid}: {', '.join(patterns)}")
    return "; ".join(shown) or "none"
