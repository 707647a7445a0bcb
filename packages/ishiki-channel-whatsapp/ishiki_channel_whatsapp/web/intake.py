"""What a connection does with each ``Message`` event: recognise repeats and echoes, shape, dispatch, and only
then acknowledge (remember it as taken, send the read receipt).

Exactly once, as far as the library lets it be. whatsmeow acknowledges a message to WhatsApp's server as soon
as its own handler returns, and neonize's handler only queues the event for Python, so the server's delivery
ack cannot wait for the host: a process killed in the instant between the two loses that message (WhatsApp does
not send it again). What this channel controls is done in this order, for each message: it is

1. skipped when its id is among the ids taken (``SeenIds``, ``whatsapp-seen.jsonl`` in the state directory,
   eight days, shared with the cloud backend) or among the ids the device sent (its own echo);
2. shaped and awaited through ``host.dispatch`` (durable in the owning fact log, or known to have no owner); a
   failed dispatch is retried with back-off on the host's clock, and set aside when the host rejected it or after
   the account's ``dispatch_tries`` failed tries (a failure the host calls passing is not counted);
3. only then remembered as taken and marked read (the blue ticks mean "the host has it").

Steps 1 and the shaping are done as the events come (``submit``); the dispatch and what follows it run in one of
two lanes (``run``): plain messages one at a time, in the order they came, so the messages of a chat are
appended in order; a command the host answers at once goes ahead of them (``ishiki_channel_whatsapp.web.ahead``:
what counts as one, how many at once, what overtaking means). So a ``/stop`` is answered while a message before
it waits on the running turn (it joined the turn: durable only when the turn's step ends), and the life goes on
meanwhile (its deadlines, a disconnection). A message already in a lane is not taken again when it comes again.

Whatever whatsmeow delivers again (a message that failed to decrypt and came again once the phone re-sent it,
the offline backlog after a reconnect that overlaps what was seen) carries the same id, so step 1, and behind
it the host's own repeat detection by identity (kind, sid, channel, message id, ``editedAt``), drop it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import Backoff, RandomSource
from ishiki_host.errors import ChannelError, EventInvalid, EventRejected

from ishiki_channel_whatsapp.web import wire
from ishiki_channel_whatsapp.web.ahead import AHEAD, is_command
from ishiki_channel_whatsapp.web.client import QuoteRef
from ishiki_channel_whatsapp.web.errors import WhatsAppWebError

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
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


@dataclass(frozen=True, slots=True)
class _Taking:
    """A message on its way to the host: the event as it came, its ``SeenIds`` key, what it was shaped into (or why
    it is set aside), and the client of the life it came in (for the read receipt)."""

    raw: Any
    message: wire.WireMessage
    key: str
    shaped: Shaped | _SetAside
    client: WebClient


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
        self._in_hand: set[str] = set()  # the keys of the messages in a lane
        self._ahead = anyio.Semaphore(AHEAD)
        self._tasks: TaskGroup | None = None
        self._plain: MemoryObjectSendStream[_Taking] | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the lanes until cancelled (for as long as the connection runs: its lives come and go)."""
        send, receive = anyio.create_memory_object_stream[_Taking](math.inf)
        with send, receive:
            async with anyio.create_task_group() as tg:
                self._tasks, self._plain = tg, send
                tg.start_soon(self._plain_lane, receive)
                try:
                    task_status.started()
                    await anyio.sleep_forever()
                finally:
                    self._tasks = self._plain = None

    async def submit(self, event: Any, shaper: Shaper, client: WebClient) -> None:
        """Check and shape one ``Message`` event, then hand it to its lane (see the module docstring); a command
        may wait here for a free place."""
        taking = await self._prepare(event, shaper, client)
        tasks, plain = self._tasks, self._plain
        if taking is None:
            return
        if tasks is None or plain is None:
            raise RuntimeError("Intake.submit needs the lanes running (Intake.run)")
        self._in_hand.add(taking.key)
        shaped = taking.shaped
        if isinstance(shaped, _SetAside) or not is_command(shaped.event, self._host.command_names):
            plain.send_nowait(taking)
            return
        await self._ahead.acquire()
        tasks.start_soon(self._go_ahead, taking)

    async def _prepare(self, event: Any, shaper: Shaper, client: WebClient) -> _Taking | None:
        """Steps 1 and the shaping; ``None`` when there is nothing to dispatch."""
        try:
            message = wire.read_message(event)
        except EventInvalid as exc:
            await self._set_aside(_raw_id(event), event, _SetAside(str(exc), malformed=True))
            return None
        key = seen_key(message)
        if key in self._seen or key in self._in_hand or self._own(message.id):
            self._log.debug("whatsapp: message %s came again (or is the device's own); not dispatched", message.id)
            return None
        reason = shaper.drop_reason(message)
        if reason is not None:
            self._log.debug("whatsapp: message %s is not input: %s", message.id, reason)
            return None
        quoted = str(message.target_id) if message.kind == "edit" else message.id  # the id the host replies to
        self._quotes.add(quoted, QuoteRef(quoted, str(message.sender), message.text[:_QUOTE_TEXT]))
        name = None if message.push_name or message.from_me else await client.contact_name(str(message.person))
        try:
            shaped: Shaped | _SetAside = shaper.shape(message, name=name)
        except EventInvalid as exc:
            shaped = _SetAside(str(exc), malformed=True)
        return _Taking(event, message, key, shaped, client)

    async def _plain_lane(self, items: MemoryObjectReceiveStream[_Taking]) -> None:
        async for taking in items:
            await self._take(taking)

    async def _go_ahead(self, taking: _Taking) -> None:
        try:
            await self._take(taking)
        finally:
            self._ahead.release()

    async def _take(self, taking: _Taking) -> None:
        """Steps 2 and 3 of the module docstring."""
        try:
            if isinstance(taking.shaped, _SetAside):
                raise taking.shaped
            await self._dispatch(taking.shaped)
        except _SetAside as aside:
            await self._set_aside(taking.message.id, taking.raw, aside)
        await self._seen.add(taking.key)
        self._in_hand.discard(taking.key)
        self.taken += 1
        await self._mark_read(taking.message, taking.client)

    async def _dispatch(self, shaped: Shaped) -> None:
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
