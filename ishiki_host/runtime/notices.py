"""The host's own one-line notices in a runtime's chats: command replies, refusals, what went wrong.

A notice is the host speaking, not the persona: it goes straight through the channel connection (its ids are
noted, so the platform's echo is dropped), never through the persona's outbox, and the fact log does not
record it. Without a target it goes where the persona replies (the runtime's own channel, or in cross mode
the channel of the running turn's newest message, else of the last inbound message).

``show_failure`` is for the operator, not the chat: it hands a failed turn's reason to a connection that has
the optional ``show_failure(channel_id, reason)`` (the console, whose user sits at the host: a dim line), and
does nothing on the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ishiki_host.addresses.ids import Target

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.runtime.outbound import Outlets

__all__ = ["Notices"]

logger = logging.getLogger("ishiki_host.runtime.notices")


class Notices:
    """The notices of one runtime (see the module docstring)."""

    def __init__(self, key: RuntimeKey, outlets: Outlets, default_target: Callable[[], Target | None]):
        self._key = key
        self._outlets = outlets
        self._default_target = default_target

    async def reply(self, event: IshikiEvent, text: str) -> bool:
        """Answer ``event`` in its channel (replying to it in group chats)."""
        reply_to = None if event.is_direct else event.message_id
        return await self.notice(text, Target(event.sid, event.channel_id), reply_to=reply_to)

    async def notice(self, text: str, target: Target | None = None, *, reply_to: str | None = None) -> bool:
        """Send one line to ``target`` (default: where the persona replies); whether it went out."""
        target = target or self._default_target()
        if target is None:
            logger.warning("%s: nowhere to send the notice %r", self._key, text)
            return False
        connection = self._outlets.connection(target.sid)
        if connection is None:
            logger.warning("%s: channel %s is not connected; notice not sent: %r", self._key, target.sid, text)
            return False
        try:
            result = await connection.send(target.channel_id, text, reply_to=reply_to)
        except Exception:
            logger.warning("%s: sending a notice to %s failed", self._key, target, exc_info=True)
            return False
        if result.ids:
            self._outlets.note_sent(target.sid, target.channel_id, result.ids)
        return result.error is None

    def show_failure(self, target: Target, reason: str) -> None:
        """Show why a turn failed to the operator of ``target``'s connection, if it has a place for that."""
        show = getattr(self._outlets.connection(target.sid), "show_failure", None)
        if not callable(show):
            return
        try:
            show(target.channel_id, reason)
        except Exception:
            logger.warning("%s: showing a failure on %s failed", self._key, target, exc_info=True)
