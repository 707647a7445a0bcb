"""One OneBot account's live connection, in one of three modes (``mode`` of the account):

- ``forward``: the host connects to the implementation's WebSocket server (``url``) with the access token,
  asks ``get_login_info`` who it is, and reads events and answers on that one link (``link``). A link that
  drops, or whose heartbeats stop, is reconnected: at once after a link that was up, then with back-off
  (jitter from the injected random source, waits on the host's clock) while attempts fail. A refused token
  (401/403) ends ``run`` with ``OneBotAuthError``, which is passing: the host restarts the channel with its
  own back-off, and its status (``ishiki status``, ``/status``) says why.
- ``reverse``: the implementation connects to the host's HTTP ingress at ``/hooks/onebot/<account>`` (a
  WebSocket route); a connection without the token is refused with 401 (logged once per burst, counted in
  ``refused``); one whose ``X-Self-ID`` names another bot with 403. Events and actions then flow as in forward
  mode; the implementation reconnects by itself.
- ``http``: the implementation posts each event to that path, answered 204 only once it is durable (503 when
  it must come again); actions go to its HTTP API (``url``), whose ``get_login_info`` is asked at start (a
  refused token ends ``run`` as in forward mode; an API that does not answer yet is logged).

Each mode has its module (``forward``, ``reverse``, ``posts``); what every link does is ``sides.LinkSide``.
What arrives goes through the ``Intake`` (shaping, repeats and own echoes dropped by id, dispatch, set aside);
what the model sends through the ``Sender``. While the connection runs, its ``OneBotAPI`` serves the account's
``onebot://`` resources (``bots``) and its attachment fetcher (``media``).
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from ishiki_host import RandomSource, SendResult
from ishiki_host.errors import ChannelError, ResourceError

from ishiki_channel_onebot.actions import Actions, HttpTransport
from ishiki_channel_onebot.api import OneBotAPI
from ishiki_channel_onebot.bots import ONEBOT_BOTS, OneBotBots
from ishiki_channel_onebot.errors import OneBotError
from ishiki_channel_onebot.forward import ForwardClient
from ishiki_channel_onebot.intake import Intake
from ishiki_channel_onebot.media import make_fetcher
from ishiki_channel_onebot.outbound import Sender
from ishiki_channel_onebot.posts import EventPosts
from ishiki_channel_onebot.reverse import ReverseServer
from ishiki_channel_onebot.seen import SeenEvents
from ishiki_channel_onebot.shaping import PLATFORM, Shaper
from ishiki_channel_onebot.sides import LinkSide
from ishiki_channel_onebot.status import LinkStatus

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus
    from ishiki_host import ChannelHost, Json, OutboundFile

    from ishiki_channel_onebot.config import OneBotAccount

__all__ = ["OneBotConnection"]

_OWN_KEPT = 4096
_QUOTE_DEADLINE = 5.0  # a quote's get_msg holds the events behind it: it gets less time than other actions


class OneBotConnection:
    """The ``ChannelConnection`` of one OneBot account (see the module docstring).

    ``rng`` draws the back-off jitter (seed it in tests); ``client`` replaces the httpx client each run makes
    for itself (HTTP API, media downloads; the caller closes it). ``run`` may be called again after it ended.
    """

    platform = PLATFORM

    def __init__(
        self,
        host: ChannelHost,
        account: OneBotAccount,
        *,
        rng: RandomSource | None = None,
        client: httpx.AsyncClient | None = None,
    ):
        self._host = host
        self._account = account
        self._rng: RandomSource = rng or random.Random()
        self._client = client
        self._log = host.logger
        self._self_id = account.self_id
        self.actions = Actions(host.clock, account.action_timeout, account.label)
        self.link = LinkStatus(host.clock)
        self._own: OrderedDict[str, None] = OrderedDict()
        self._intake: Intake | None = None
        self._sender: Sender | None = None
        self._api: OneBotAPI | None = None
        self._early: list[dict[str, Any]] = []
        self._last_counts: dict[str, Json] = {"setAside": 0, "lastSetAside": None}
        self._url: str | None = None
        self._side = LinkSide(account, host.clock, host.logger, self.actions, self.link, self._event)

    @property
    def account(self) -> OneBotAccount:
        """The account this connection serves."""
        return self._account

    @property
    def self_id(self) -> str:
        """The bot's QQ number: configured, or from ``get_login_info`` once connected."""
        if self._self_id is None:
            raise ChannelError(f"onebot account {self._account.label}: the QQ number is not known until it connects")
        return self._self_id

    @property
    def sid(self) -> str:
        """``onebot:<self_id>``, the key the host routes by."""
        return f"{PLATFORM}:{self.self_id}"

    @property
    def api(self) -> OneBotAPI | None:
        """The account's actions while it runs (``delete_msg``, ``get_msg``...)."""
        return self._api

    def status(self) -> dict[str, Json]:
        """``mode``, ``selfId``, the link (``link``, ``since``, ``error``, ``connects``, ``refused``,
        ``malformed``, ``heartbeats``), ``url`` (the host's own path in reverse and http modes) and the intake's
        counts (``taken``, ``repeats``, ``own``, ``setAside``, ``lastSetAside``)."""
        intake = self._intake.status() if self._intake is not None else self._last_counts
        link = self.link.describe()
        return {"mode": self._account.mode, "selfId": self._self_id, **link, "url": self._url, **intake}

    async def linked(self) -> None:
        """Return once a link to the implementation is up (at once in http mode once running)."""
        await self.link.until_up()

    async def heard_heartbeat(self) -> None:
        """Return once the current link's heartbeats stated their interval (from then on a silent link is
        taken for dead)."""
        await self._side.watch.known()

    async def settled(self) -> None:
        """Return once every event read so far is taken (at once when not running)."""
        if self._intake is not None:
            await self._intake.settled()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve the account in its mode until cancelled (see the module docstring)."""
        client = self._client or httpx.AsyncClient(timeout=httpx.Timeout(30.0), trust_env=False)
        seen = SeenEvents(self._host.state_dir, logger=self._log)
        await seen.load()
        api = self._api = OneBotAPI(self.actions, client, max_bytes=self._account.max_download_bytes)
        undo: list[Callable[[], None]] = []
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(seen.run)

                async def begin(self_id: str) -> None:
                    await self._begin(self_id, tg, seen, undo)

                await self._serve(api, client, begin, task_status.started)
        except BaseExceptionGroup as group:
            while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
                group = group.exceptions[0]
            raise group from None
        finally:
            for step in reversed(undo):
                step()
            if self._intake is not None:
                self._last_counts = self._intake.status()
            self._intake = self._sender = None
            self.link.down("stopped")
            if self._client is None:
                with anyio.CancelScope(shield=True):
                    await client.aclose()

    async def _serve(
        self,
        api: OneBotAPI,
        client: httpx.AsyncClient,
        begin: Callable[[str], Awaitable[None]],
        started: Callable[[], None],
    ) -> None:
        """Run the account's mode until cancelled: ``begin(self_id)`` starts serving as that QQ number, then
        ``started()`` reports readiness (forward mode: at once when the number is configured, else after the
        first login; reverse and http modes: once the path is mounted)."""
        account = self._account
        if account.mode == "forward":

            async def begin_ready(self_id: str) -> None:
                await begin(self_id)
                started()

            if self._self_id is not None:
                await begin_ready(self._self_id)
            await ForwardClient(self._side, api, self._host.clock, self._rng).run(self._self_id, begin_ready)
            return
        mount = self._host.http_mount()
        if account.mode == "reverse":
            mount.websocket("/", ReverseServer(self._side, self.self_id))
        else:
            self.actions.attach(HttpTransport(client, account.url or "", account.access_token))
            posts = EventPosts(self._side, lambda: self._intake)
            await posts.check(api, self.self_id)
            mount.route("/", posts, methods=("POST",))
        await begin(self.self_id)
        async with mount:
            self._url = mount.public_url or mount.local_url
            started()
            await anyio.sleep_forever()

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send one reply (Markdown), split at ``max_message_chars``; the first part replies to ``reply_to``.
        Failures come back as ``SendResult.error``, never raised."""
        if self._sender is None:
            return SendResult(error=self._not_running())
        return await self._sender.send(channel_id, text, reply_to=reply_to)

    async def send_typing(self, channel_id: str) -> None:
        """Nothing: OneBot v11 has no typing indicator (the host's typing delay is only a delay)."""

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send images and voice records; other files come back as ``SendResult.error``."""
        if self._sender is None:
            return SendResult(error=self._not_running())
        return await self._sender.send_files(channel_id, files)

    def _not_running(self) -> str:
        return f"onebot account {self._account.label} is not running (starting or stopped)"

    async def _begin(self, self_id: str, tg: TaskGroup, seen: SeenEvents, undo: list[Callable[[], None]]) -> None:
        """Start serving as ``self_id``: the intake's lane, the sender, the fetcher and ``onebot://``."""
        api = self._api
        assert api is not None
        self._self_id = self_id
        shaper = Shaper(self_id, self._account, fetcher=self.sid, lookup=self._lookup)
        self._intake = Intake(self._host, self._account, shaper, seen, self._rng, own=self._is_own)
        await tg.start(self._intake.run)
        self._sender = Sender(api, limit=self._account.max_message_chars, on_sent=self._sent)
        try:
            undo.append(self._host.fetchers.register(self.sid, make_fetcher(api)))
        except ResourceError:
            raise ChannelError(
                f"onebot account {self._account.label}: bot {self_id} already runs in this host "
                "(is the same account configured twice?)"
            ) from None
        undo.append(self._host.shared.setdefault(ONEBOT_BOTS, OneBotBots).register(self_id, api))
        for frame in self._early:
            await self._intake.submit(frame)
        self._early.clear()
        self._log.info("onebot account %s runs as %s (%s mode)", self._account.label, self.sid, self._account.mode)

    async def _event(self, frame: dict[str, Any]) -> None:
        """An event frame a WebSocket brought: to the intake (held until it exists, forward mode's start)."""
        if self._intake is None:
            self._early.append(frame)
            return
        await self._intake.submit(frame)

    async def _lookup(self, message_id: str) -> Mapping[str, Any] | None:
        """The replied-to message of a quote (``get_msg``, within ``_QUOTE_DEADLINE``); the bot's own, by id,
        when that fails."""
        api = self._api
        try:
            return await api.get_msg(message_id, deadline=_QUOTE_DEADLINE) if api is not None else None
        except OneBotError:
            if message_id in self._own and self._self_id is not None:
                return {"sender": {"user_id": self._self_id}, "message": ""}
            return None

    def _sent(self, channel_id: str, message_id: str) -> None:
        self._own[message_id] = None
        if len(self._own) > _OWN_KEPT:
            self._own.popitem(last=False)

    def _is_own(self, channel_id: str, message_id: str) -> bool:
        return message_id in self._own
