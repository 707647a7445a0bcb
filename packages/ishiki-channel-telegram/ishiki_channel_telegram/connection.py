"""One bot account's live connection: ``getMe``, then long polling (or a webhook), dispatch, and confirmation.

The order of one update is fixed, and it is what makes "nothing lost" hold:

1. ``getUpdates(offset)`` returns it (Telegram keeps sending it until an ``offset`` past it is asked for);
2. its events are shaped and each is awaited through ``host.dispatch`` (durable in the owning fact log, or
   known to have no owner); a dispatch that fails is retried with back-off, and set aside only when the host
   rejected it or after the account's ``update_tries`` failed tries, so one poison update never holds back
   the ones after it (``ishiki_channel_telegram.intake``);
3. only then is the offset moved to its id + 1 (once the updates received before it are handled too) and
   handed to the ``OffsetSaver`` (written behind, at once).

Polling does not wait for step 2: a message that joins a running turn is durable only when the turn's step
ends, and a ``/stop`` sent meanwhile must be fetched, and answered ahead of it. The next ``getUpdates`` asks
past every update received, which makes Telegram forget them; those not yet handled are first written whole
to the state file (``held``, synced to the disk), and a restart takes them from there
(``ishiki_channel_telegram.intake``).

A malformed update is set aside (it could never be handled); an unknown kind is confirmed and logged at
debug level. A crash between 2 and 3 makes the update come again (from Telegram, or from ``held``): its
events carry the same ``extra.updateId`` (and message id), so the host can recognise the repeat. Update ids
may go backwards (Telegram renumbers after a long pause): repeats are recognised by id, never by "below the
offset". Back-off with jitter (from the injected random source) covers network errors and 5xx, a 429 waits
``retry_after``, a 409 is reported once per episode and retried; all waits go through the host's clock.
``status()`` reports the mode, the offset and the updates set aside; ``settled()`` waits until every update
received is handled.

Polling starts by deleting a webhook left set (``getUpdates`` is refused while one is). In webhook mode
(``mode: webhook``) Telegram posts each update to the host's HTTP server instead, and steps 1 and 3 are
"a request arrives" and "it is answered 200" (``ishiki_channel_telegram.webhook``); step 2 is the same.
"""

from __future__ import annotations

import dataclasses
import random
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import Backoff, RandomSource, SendResult
from ishiki_host.errors import ChannelError, ResourceError

from ishiki_channel_telegram.api import BotAPI
from ishiki_channel_telegram.drafts import Drafter
from ishiki_channel_telegram.entities import BotIdentity
from ishiki_channel_telegram.errors import (
    TelegramAuthError,
    TelegramConflict,
    TelegramError,
    TelegramRateLimited,
    TelegramUnavailable,
)
from ishiki_channel_telegram.intake import Intake
from ishiki_channel_telegram.media import make_fetcher
from ishiki_channel_telegram.outbound import Sender
from ishiki_channel_telegram.shaping import Shaper
from ishiki_channel_telegram.startup import connect
from ishiki_channel_telegram.state import OffsetSaver, OffsetStore, PollState
from ishiki_channel_telegram.webhook import WebhookReceiver, clear_webhook, serve_webhook

if TYPE_CHECKING:
    import httpx
    from anyio.abc import TaskStatus
    from ishiki_host import ChannelHost, Draft, DraftEnd, Json, OutboundFile

    from ishiki_channel_telegram.config import TelegramAccount

__all__ = ["DraftingTelegramConnection", "TelegramConnection", "make_connection"]

_OWN_MESSAGES_KEPT = 4096


class TelegramConnection:
    """The ``ChannelConnection`` of one Telegram bot (see the module docstring).

    ``rng`` draws the back-off jitter (seed it in tests); ``client`` replaces the httpx client each run
    makes for itself (the caller closes it). ``run`` may be called again after it ended (the host restarts a
    crashed channel): it resumes from the saved offset.
    """

    platform = "telegram"

    def __init__(
        self,
        host: ChannelHost,
        account: TelegramAccount,
        *,
        rng: RandomSource | None = None,
        client: httpx.AsyncClient | None = None,
    ):
        self._host = host
        self._account = account
        self._rng: RandomSource = rng or random.Random()
        self._client = client
        self._log = host.logger
        self._bot: BotIdentity | None = None
        self._sender: Sender | None = None
        self._drafter: Drafter | None = None
        self._own: OrderedDict[tuple[int, int], None] = OrderedDict()
        self._state = PollState()
        self._last_set_aside: dict[str, Json] | None = None
        self._intake: Intake | None = None
        self._receiver: WebhookReceiver | None = None

    @property
    def account(self) -> TelegramAccount:
        """The account this connection serves."""
        return self._account

    @property
    def self_id(self) -> str:
        """The bot's id: from ``getMe`` once running, before that from the token (``<bot id>:<secret>``)."""
        if self._bot is not None:
            return str(self._bot.id)
        bot_id = self._account.token.partition(":")[0]
        if not bot_id.isdigit():
            raise ChannelError(f"telegram account {self._account.label}: the bot id is not known until it runs")
        return bot_id

    @property
    def sid(self) -> str:
        """``telegram:<bot id>``, the key the host routes by."""
        return f"telegram:{self.self_id}"

    @property
    def bot(self) -> BotIdentity | None:
        """Who the bot is (``getMe``), once running."""
        return self._bot

    @property
    def offset(self) -> int | None:
        """The confirmed ``offset``: every update before it is handled (``None`` before the first run, or when
        nothing was saved)."""
        return self._intake.offset if self._intake is not None else self._state.offset

    def status(self) -> dict[str, Json]:
        """What the host's status shows of this bot: ``bot``, ``mode``, ``offset``, ``setAside`` (updates set
        aside so far, restarts included), ``lastSetAside`` (its id and why, while this object lives), ``failing``
        (the update being retried and its failed tries) and, in webhook mode, ``webhook`` (the requests refused
        with 401 and 400)."""
        intake = self._intake
        state = intake.status() if intake is not None else Intake.describe(self._state, self._last_set_aside)
        bot = f"@{self._bot.username}" if self._bot else None
        webhook = self._receiver.status() if self._receiver is not None else None
        return {"bot": bot, "mode": self._account.mode, **state, **({"webhook": webhook} if webhook else {})}

    async def settled(self) -> None:
        """Return once every update polling received so far is handled: durable in the host, a repeat, or set
        aside (Telegram forgets an update before that; see the module docstring). At once when not running."""
        if self._intake is not None:
            await self._intake.settled()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect (``getMe``), report readiness, then poll (or serve the webhook) until cancelled;
        ``TelegramAuthError`` for a refused token, ``TelegramUnavailable`` when the Bot API stayed unreachable
        for ``startup_timeout``; in webhook mode ``IngressError`` when the host serves no HTTP and
        ``HostConfigInvalid`` without ``http.public_url``."""
        api = BotAPI(self._account.token, self._account.api_base, client=self._client)
        try:
            backoff = Backoff(self._rng, maximum=self._account.backoff_max)
            self._bot = await connect(api, self._account, self._host.clock, backoff, self._log)
            store = OffsetStore(self._host.state_dir, self._bot.id, logger=self._log)
            self._state = await store.load()
            deregister = self._register_fetcher(api)
            try:
                mode = self._account.parse_mode
                self._sender = Sender(
                    api, clock=self._host.clock, logger=self._log, parse_mode=mode, on_sent=self._sent
                )
                self._drafter = Drafter(self._sender, self._account, clock=self._host.clock, logger=self._log)
                self._log.info(
                    "telegram account %s runs as @%s (%s)", self._account.label, self._bot.username, self.sid
                )
                await self._receive(api, store, Shaper(self._bot, self._account, fetcher=self.sid), task_status)
            finally:
                self._sender = self._drafter = None
                deregister()
        finally:
            with anyio.CancelScope(shield=True):
                await api.aclose()

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send one chat message, split at 4,096 UTF-16 units; the first part replies to ``reply_to``.

        Failures come back as ``SendResult.error`` (also when the connection is not running), never raised.
        """
        if self._sender is None:
            return SendResult(error=self._not_connected())
        return await self._sender.send(channel_id, text, reply_to=reply_to)

    async def send_typing(self, channel_id: str) -> None:
        """Show "typing..." in the chat for about five seconds."""
        if self._sender is not None:
            await self._sender.send_typing(channel_id)

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send photos and documents; failures come back as ``SendResult.error``."""
        if self._sender is None:
            return SendResult(error=self._not_connected())
        return await self._sender.send_files(channel_id, files)

    def _not_connected(self) -> str:
        return f"telegram account {self._account.label} is not connected (starting, reconnecting or stopped)"

    def _register_fetcher(self, api: BotAPI) -> Any:
        try:
            return self._host.fetchers.register(self.sid, make_fetcher(api, self._account.max_download_bytes))
        except ResourceError:
            raise ChannelError(
                f"telegram account {self._account.label}: bot {self.self_id} already runs in this host "
                "(is the same token configured twice?)"
            ) from None

    def _sent(self, chat: int, message_id: int) -> None:
        self._own[(chat, message_id)] = None
        if len(self._own) > _OWN_MESSAGES_KEPT:
            self._own.popitem(last=False)

    def _is_own(self, chat: int, message_id: int) -> bool:
        return (chat, message_id) in self._own

    async def _receive(self, api: BotAPI, store: OffsetStore, shaper: Shaper, task_status: TaskStatus[None]) -> None:
        """Poll or serve the webhook with the state saver beside it, reporting readiness when receiving; an
        error comes out as itself, not as an exception group."""
        saver = OffsetSaver(store, logger=self._log)
        webhook = self._account.mode == "webhook"
        state = dataclasses.replace(self._state, offset=None) if webhook else self._state  # a 200 confirms
        intake = self._intake = Intake(
            self._host, self._account, self._rng, saver, state, self._is_own, self._last_set_aside
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(saver.run)
                await tg.start(intake.run, shaper)
                if webhook:
                    self._receiver = WebhookReceiver(intake, shaper, self._account, logger=self._log)
                    await serve_webhook(self._host, api, self._account, self._receiver, task_status=task_status)
                else:
                    task_status.started()
                    await self._poll(api, intake, shaper)
        except BaseExceptionGroup as group:
            while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
                group = group.exceptions[0]
            raise group from None
        finally:
            self._state, self._last_set_aside, self._intake = intake.state, intake.last_set_aside, None

    async def _poll(self, api: BotAPI, intake: Intake, shaper: Shaper) -> None:
        backoff = Backoff(self._rng, maximum=self._account.backoff_max)
        trouble: str | None = None
        cleared = False  # a webhook left set (by webhook mode) is deleted before the first poll
        while True:
            offset = await intake.next_offset()
            try:
                if not cleared:
                    await clear_webhook(api, self._account, self._log)
                    cleared = True
                updates = await api.get_updates(
                    offset=offset,
                    poll_timeout=self._account.poll_timeout,
                    limit=self._account.poll_limit,
                    allowed_updates=self._account.allowed_updates,
                )
            except TelegramAuthError as exc:
                raise TelegramAuthError(
                    f"telegram account {self._account.label}: the Bot API now refuses the token ({exc.description})",
                    method=exc.method,
                    status=exc.status,
                ) from None
            except TelegramError as exc:
                trouble = self._report(exc, trouble)
                wait = exc.retry_after if isinstance(exc, TelegramRateLimited) else backoff.next_delay()
                await self._host.clock.sleep(wait)
                continue
            if trouble is not None:
                self._log.warning("telegram account %s: polling resumed", self._account.label)
                trouble = None
            backoff.reset()
            if not await intake.submit(updates, shaper):
                await self._host.clock.sleep(backoff.next_delay())

    def _report(self, exc: TelegramError, trouble: str | None) -> str:
        """Log a polling failure once per episode (a kind of failure repeating is one episode)."""
        kind = type(exc).__name__
        if kind == trouble:
            self._log.debug("telegram account %s: %s", self._account.label, exc)
            return kind
        label = self._account.label
        if isinstance(exc, TelegramConflict):
            self._log.error(
                "telegram account %s: getUpdates conflict (409): a webhook is set for this bot (remove it with "
                "deleteWebhook) or another process polls with the same token; retrying. Telegram said: %s",
                label,
                exc.description,
            )
        elif isinstance(exc, TelegramRateLimited):
            self._log.warning("telegram account %s: rate limited; polling again in %g s", label, exc.retry_after)
        elif isinstance(exc, TelegramUnavailable):
            self._log.warning("telegram account %s: the Bot API cannot be reached (%s); retrying", label, exc)
        else:
            self._log.error("telegram account %s: getUpdates failed (%s); retrying", label, exc)
        return kind


class DraftingTelegramConnection(TelegramConnection):
    """A ``TelegramConnection`` that also shows replies as they are written (``DraftingConnection``): the
    connection of an account whose ``drafts`` is not ``off`` (see ``ishiki_channel_telegram.drafts``)."""

    async def show_draft(self, channel_id: str, draft: Draft) -> None:
        """Show ``draft.text`` as the reply being written, then wait out the chat's pace; nothing while the
        connection is not running."""
        if self._drafter is not None:
            await self._drafter.show(channel_id, draft)

    async def finish_draft(self, channel_id: str, draft: Draft, text: str) -> SendResult:
        """Deliver the final ``text`` once, in place of what the draft showed; failures come back as
        ``SendResult.error``."""
        if self._drafter is None:
            return SendResult(error=self._not_connected())
        return await self._drafter.finish(channel_id, draft, text)

    async def drop_draft(self, channel_id: str, draft: Draft, why: DraftEnd) -> None:
        """Take back (``tools``) or mark as cut off (``failed``, ``aborted``) what the draft showed."""
        if self._drafter is not None:
            await self._drafter.drop(channel_id, draft, why)


def make_connection(
    host: ChannelHost,
    account: TelegramAccount,
    *,
    rng: RandomSource | None = None,
    client: httpx.AsyncClient | None = None,
) -> TelegramConnection:
    """The connection of ``account``: a ``DraftingTelegramConnection`` unless its ``drafts`` is ``off`` (the
    host asks ``isinstance(conn, DraftingConnection)`` to know whether to stream replies to it)."""
    kind = TelegramConnection if account.drafts == "off" else DraftingTelegramConnection
    return kind(host, account, rng=rng, client=client)
