"""What a connection does with each ``Message`` event: recognise repeats and echoes, shape, dispatch, and only
then acknowledge (remember it as taken, send the read receipt).

Exactly once, as far as the library lets it be. whatsmeow acknowledges a message to WhatsApp's server as soon
as its own handler returns, and neonize's handler only queues the event for Python, so the server's delivery
ack cannot wait for the host: a process killed in the instant between the two loses that message (WhatsApp does
not send it again). What this channel controls is done in order: a message is

1. skipped when its id is among the ids taken (``SeenIds``, ``whatsapp-seen.jsonl`` in the state directory,
   eight days, shared with the cloud backend) or among the ids the device sent (its own echo);
2. shaped and awaited through ``host.dispatch`` (durable in the owning fact log, or known to have no owner); a
   failed dispatch is retried with back-off on the host's clock, and set aside when the host rejected it or after
   the account's ``dispatch_tries`` failed tries (a failure the host calls passing is not counted);
3. only then remembered as taken and marked read (the blue ticks mean "the host has it").

Whatever whatsmeow delivers again (a message that failed to decrypt and came again once the phone re-sent it,
the offline backlog after a reconnect that overlaps what was seen) carries the same id, so step 1, and behind
it the host's own repeat detection by identity (kind, sid, channel, message id, ``editedAt``), drop it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ishiki_host import Backoff, RandomSource
from ishiki_host.errors import ChannelError, EventInvalid, EventRejected

from ishiki_channel_whatsapp.web import wire
from ishiki_channel_whatsapp.web.client import QuoteRef
from ishiki_channel_whatsapp.web.errors import WhatsAppWebError

if TYPE_CHECKING:
    from ishiki_host import ChannelHost, Json

    from ishiki_channel_whatsapp.aside import SetAsideFile
    from ishiki_channel_whatsapp.seen import SeenIds
    from ishiki_channel_whatsapp.web.client import WebClient
    from ishiki_channel_whatsapp.web.config import WebSettings
    from ishiki_channel_whatsapp.web.recent import Recent
    from ishiki_channel_whatsapp.web.shaping import Shaped, Shaper

__all__ = ["Intake", "seen_key"]

_QUOTE_TEXT = 200


class _SetAside(Exception):
    """The message being handled is set aside (``why``); ``malformed``: the channel's own finding."""

    def __init__(self, why: str, *, malformed: bool = False):
        self.why = why
        self.malformed = malformed
        super().__init__(why)


def seen_key(message: wire.WireMessage) -> str:
    """How ``SeenIds`` names a message: its chat and id (ids are unique per sender, so the chat disambiguates)."""
    return f"{message.chat}/{message.id}"


class Intake:
    """The messages of one running device (see the module docstring); ``own(id)`` tells the device's own sends."""

    def __init__(
        self,
        host: ChannelHost,
        settings: WebSettings,
        *,
        seen: SeenIds,
        aside: SetAsideFile,
        rng: RandomSource,
        own: Callable[[str], bool],
        quotes: Recent[QuoteRef],
    ):
        self._host = host
        self._settings = settings
        self._seen = seen
        self._aside = aside
        self._rng = rng
        self._own = own
        self._quotes = quotes
        self._log = host.logger
        self.set_aside = 0
        self.last_set_aside: dict[str, Json] | None = None
        self.taken = 0

    async def take(self, event: Any, shaper: Shaper, client: WebClient) -> None:
        """Handle one ``Message`` event, in the order of the module docstring."""
        try:
            message = wire.read_message(event)
        except EventInvalid as exc:
            await self._set_aside(_raw_id(event), event, _SetAside(str(exc), malformed=True))
            return
        key = seen_key(message)
        if key in self._seen or self._own(message.id):
            self._log.debug("whatsapp: message %s came again (or is the device's own); not dispatched", message.id)
            return
        reason = shaper.drop_reason(message)
        if reason is not None:
            self._log.debug("whatsapp: message %s is not input: %s", message.id, reason)
            return
        quoted = str(message.target_id) if message.kind == "edit" else message.id  # the id the host replies to
        self._quotes.add(quoted, QuoteRef(quoted, str(message.sender), message.text[:_QUOTE_TEXT]))
        try:
            await self._dispatch(message, shaper, client)
        except _SetAside as aside:
            await self._set_aside(message.id, event, aside)
        await self._seen.add(key)
        self.taken += 1
        await self._mark_read(message, client)

    async def _dispatch(self, message: wire.WireMessage, shaper: Shaper, client: WebClient) -> None:
        name = None if message.push_name or message.from_me else await client.contact_name(str(message.person))
        try:
            shaped = shaper.shape(message, name=name)
        except EventInvalid as exc:
            raise _SetAside(str(exc), malformed=True) from None
        backoff = Backoff(self._rng, maximum=self._settings.backoff_max)
        failed = 0
        while True:
            try:
                await self._host.dispatch(shaped.event, shaped.attachments)
                return
            except EventRejected as exc:
                raise _SetAside(f"the host rejected it ({exc})") from None
            except Exception as exc:
                failed = await self._failed(exc, shaped, failed, backoff.next_delay())

    async def _failed(self, exc: Exception, shaped: Shaped, failed: int, delay: float) -> int:
        """Count a failed try (unless the host called it passing), set aside after the last, else wait."""
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ChannelError) and not exc.fatal:
            tries = "the host cannot take input for now"
        else:
            failed += 1
            if failed >= self._settings.dispatch_tries:
                raise _SetAside(f"{failed} tries failed, the last with {error}") from None
            tries = f"try {failed} of {self._settings.dispatch_tries}"
        self._log.error(
            "whatsapp account %s: dispatching message %s failed (%s), %s; retrying in %.1f s",
            self._settings.label,
            shaped.event.message_id,
            error,
            tries,
            delay,
        )
        await self._host.clock.sleep(delay)
        return failed

    async def _set_aside(self, message_id: str, event: Any, aside: _SetAside) -> None:
        what = "malformed message" if aside.malformed else "message"
        self.set_aside += 1
        self.last_set_aside = {"updateId": message_id, "why": f"{what}: {aside.why}"}
        await self._aside.keep(message_id, _describe(event), f"{what}: {aside.why}", self._host.clock.now())
        self._log.log(
            logging.WARNING if aside.malformed else logging.ERROR,
            "whatsapp account %s: set aside %s %s: %s; later messages go on (kept in %s)",
            self._settings.label,
            what,
            message_id,
            aside.why,
            self._aside.path.name,
        )

    async def _mark_read(self, message: wire.WireMessage, client: WebClient) -> None:
        if not self._settings.mark_read or message.from_me or message.kind == "revoke":
            return
        try:
            await client.mark_read(str(message.chat), str(message.sender), [message.id])
        except WhatsAppWebError as exc:  # a receipt is a courtesy: the message is the host's already
            self._log.debug("whatsapp: could not mark %s read: %s", message.id, exc)


def _raw_id(event: Any) -> str:
    info = getattr(event, "Info", None)
    return str(getattr(info, "ID", "") or "(no id)")


def _describe(event: Any) -> Json:
    """The event as the set-aside file keeps it: its protobuf text form (readable, and parseable again)."""
    return str(event)
