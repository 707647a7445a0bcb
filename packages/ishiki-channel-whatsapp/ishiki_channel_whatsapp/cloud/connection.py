"""One cloud account's live connection: the start-up check, the webhook on the host's HTTP ingress, and sending.

``run`` checks the token and the number (``startup``), loads what the account remembers (``SeenIds``, the
``AccountState``), registers the media fetcher, mounts the webhook at ``/`` of the account's prefix
(``/hooks/whatsapp/<account>``) and only then reports readiness. From there Meta drives it: each notification
is answered by ``WebhookHandler``, 200 only once its messages are durable. ``run`` ends only when cancelled,
or when the Graph API refuses the token while it serves (a send, a download, a read receipt answered 190):
then it raises one fatal ``WhatsAppAuthError`` and the host stops the channel and shows why in its status.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import Backoff, RandomSource, SendResult
from ishiki_host.errors import ChannelError, IngressError, ResourceError

from ishiki_channel_whatsapp.cloud.graph import GraphAPI
from ishiki_channel_whatsapp.cloud.intake import Intake
from ishiki_channel_whatsapp.cloud.media import make_fetcher
from ishiki_channel_whatsapp.cloud.outbound import Sender
from ishiki_channel_whatsapp.cloud.shaping import Shaper
from ishiki_channel_whatsapp.cloud.startup import PhoneNumber, connect
from ishiki_channel_whatsapp.cloud.statuses import StatusBook
from ishiki_channel_whatsapp.cloud.webhook import WebhookHandler
from ishiki_channel_whatsapp.errors import WhatsAppAuthError
from ishiki_channel_whatsapp.seen import SeenIds
from ishiki_channel_whatsapp.state import AccountState, StateStore

if TYPE_CHECKING:
    import httpx
    from anyio.abc import TaskStatus
    from ishiki_host import ChannelHost, HttpMount, IshikiEvent, Json, OutboundFile

    from ishiki_channel_whatsapp.config import CloudAccount

__all__ = ["CloudConnection"]

_OWN_MESSAGES_KEPT = 4096


class CloudConnection:
    """The ``ChannelConnection`` of one WhatsApp Business Cloud API number (see the module docstring).

    ``rng`` draws the back-off jitter (the host's ``rng`` by default; seed it in tests); ``client`` replaces the
    httpx client each run makes for itself (the caller closes it). ``run`` may be called again after it ended.
    """

    platform = "whatsapp"

    def __init__(
        self,
        host: ChannelHost,
        account: CloudAccount,
        *,
        rng: RandomSource | None = None,
        client: httpx.AsyncClient | None = None,
    ):
        self._host = host
        self._account = account
        self._rng: RandomSource = rng or random.Random()
        self._client = client
        self._log = host.logger
        self._phone: PhoneNumber | None = None
        self._sender: Sender | None = None
        self._own: OrderedDict[str, None] = OrderedDict()
        self._last_inbound: dict[str, str] = {}
        self._statuses = StatusBook(account.label, host.logger)
        self._intake: Intake | None = None
        self._handler: WebhookHandler | None = None
        self._state = AccountState()
        self._failed_sends = 0
        self._webhook: str | None = None
        self._fatal: ChannelError | None = None
        self._tripped = anyio.Event()

    @property
    def account(self) -> CloudAccount:
        """The account this connection serves."""
        return self._account

    @property
    def self_id(self) -> str:
        """The phone number id (known from the account, before ``run``)."""
        return self._account.phone_number_id

    @property
    def sid(self) -> str:
        """``whatsapp:<phone_number_id>``, the key the host routes by."""
        return self._account.sid

    @property
    def phone(self) -> PhoneNumber | None:
        """Which number this is (the start-up check's answer), once running."""
        return self._phone

    def status(self) -> dict[str, Json]:
        """What the host's status shows of this number: ``phoneNumberId``, ``displayPhoneNumber``, ``webhook``
        (where Meta must post), ``setAside`` and ``lastSetAside`` (restarts included), ``failing`` (messages the
        host failed to take, with their tries), ``statuses`` (counts of sent, delivered, read, failed...),
        ``failedSends`` and ``refused`` (webhook requests refused, by reason)."""
        intake = self._intake
        state = (
            intake.status()
            if intake is not None
            else {
                "setAside": self._state.set_aside,
                "lastSetAside": self._state.last_set_aside,
                "failing": dict(self._state.failing),
            }
        )
        return {
            "phoneNumberId": self._account.phone_number_id,
            "displayPhoneNumber": self._phone.display_phone_number if self._phone else None,
            "webhook": self._webhook,
            **state,
            "statuses": dict(self._statuses.counts),
            "failedSends": self._failed_sends,
            "refused": self._handler.status() if self._handler is not None else {},
        }

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Check the number, mount the webhook, report readiness, then serve until cancelled (see the module
        docstring); ``WhatsAppAuthError`` for a refused token, ``IngressError`` when the host serves no HTTP."""
        self._fatal, self._tripped = None, anyio.Event()
        api = GraphAPI(
            self._account.access_token, self._account.graph_base, self._account.graph_version, client=self._client
        )
        try:
            backoff = Backoff(self._rng, maximum=self._account.backoff_max)
            self._phone = await connect(api, self._account, self._host.clock, backoff, self._log)
            seen = SeenIds(self._host.state_dir, clock=self._host.clock, logger=self._log)
            await seen.load()
            store = StateStore(self._host.state_dir, self.sid, logger=self._log)
            self._state = await store.load()
            deregister = self._register_fetcher(api)
            try:
                self._serve_with(api, seen, store)
                await self._serve(task_status)
            finally:
                self._stopped()
                deregister()
        finally:
            with anyio.CancelScope(shield=True):
                await api.aclose()

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send one chat message, split at 4,096 characters; the first part replies to ``reply_to``.

        Failures come back as ``SendResult.error`` (also when the connection is not running), never raised.
        """
        if self._sender is None:
            return SendResult(error=self._not_connected())
        return await self._sender.send(channel_id, text, reply_to=reply_to)

    async def send_typing(self, channel_id: str) -> None:
        """Mark the chat's newest message read and show "typing..." (unless ``mark_read`` is false)."""
        if self._sender is not None:
            await self._sender.send_typing(channel_id)

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send images and documents; failures come back as ``SendResult.error``."""
        if self._sender is None:
            return SendResult(error=self._not_connected())
        return await self._sender.send_files(channel_id, files)

    def _serve_with(self, api: GraphAPI, seen: SeenIds, store: StateStore) -> None:
        """Make this run's sender, intake and webhook handler."""
        self._sender = Sender(
            api,
            self._account,
            clock=self._host.clock,
            rng=self._rng,
            logger=self._log,
            on_sent=self._sent,
            on_auth_error=self._refused_token,
            last_inbound=self._last_inbound.get,
            on_failed=self._send_failed,
        )
        shaper = Shaper(self._account.phone_number_id, fetcher=self.sid, own=self._is_own)
        self._intake = Intake(
            self._host, self._account, shaper, seen, store, self._state, own=self._is_own, on_arrival=self._arrived
        )
        self._handler = WebhookHandler(self._account, self._intake, self._statuses, self._host.clock, self._log)

    async def _serve(self, task_status: TaskStatus[None]) -> None:
        assert self._handler is not None
        try:
            async with self._host.http_mount() as mount:
                mount.route("/", self._handler, methods=("GET", "POST"))
                self._webhook = mount.public_url or mount.local_url
                self._announce(mount)
                task_status.started()
                await self._tripped.wait()
        except IngressError as exc:
            raise IngressError(
                f"whatsapp account {self._account.label} receives its messages by webhook, through the host's "
                f"HTTP server: {exc} (set http.listen, and http.public_url behind a reverse proxy, in ishiki.yaml)"
            ) from None
        assert self._fatal is not None
        raise self._fatal

    def _announce(self, mount: HttpMount) -> None:
        phone = self._phone
        number = phone.display_phone_number if phone and phone.display_phone_number else self.self_id
        name = f" ({phone.verified_name})" if phone and phone.verified_name else ""
        self._log.info(
            "whatsapp account %s runs as %s%s (%s); webhook at %s",
            self._account.label,
            number,
            name,
            self.sid,
            self._webhook,
        )
        if mount.public_url is None:
            self._log.warning(
                "whatsapp account %s: http.public_url is not set; Meta must reach %s at your reverse proxy's URL "
                "(set it as the callback URL in the app's WhatsApp > Configuration)",
                self._account.label,
                mount.prefix,
            )

    def _stopped(self) -> None:
        if self._intake is not None:
            self._state = self._intake.state
        self._sender = self._intake = None

    def _refused_token(self, exc: WhatsAppAuthError) -> None:
        """The Graph API refused the token while serving: stop the connection with one clear error."""
        if self._fatal is not None:
            return
        self._fatal = WhatsAppAuthError(
            f"whatsapp account {self._account.label}: the Graph API now refuses the access token ({exc.details}); "
            "it expired or was revoked: make a new one, set channels.whatsapp.accounts[].access_token and restart",
            what=exc.what,
            status=exc.status,
            code=exc.code,
        )
        self._tripped.set()

    def _not_connected(self) -> str:
        return f"whatsapp account {self._account.label} is not connected (starting, stopped or failed)"

    def _register_fetcher(self, api: GraphAPI) -> Any:
        fetcher = make_fetcher(api, self._account.max_download_bytes, self._refused_token)
        try:
            return self._host.fetchers.register(self.sid, fetcher)
        except ResourceError:
            raise ChannelError(
                f"whatsapp account {self._account.label}: {self.sid} already runs in this host (is the same "
                "phone_number_id configured twice?)"
            ) from None

    def _sent(self, wamid: str) -> None:
        self._own[wamid] = None
        if len(self._own) > _OWN_MESSAGES_KEPT:
            self._own.popitem(last=False)

    def _is_own(self, wamid: str) -> bool:
        return wamid in self._own

    def _send_failed(self) -> None:
        self._failed_sends += 1

    def _arrived(self, event: IshikiEvent) -> None:
        self._last_inbound[event.channel_id] = event.message_id
        if self._sender is not None:
            self._sender.reopened(event.channel_id)
