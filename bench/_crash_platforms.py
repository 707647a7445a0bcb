"""The platforms the crash harness runs a bot on: each fakes its side over real HTTP and says what happened.

A platform starts its fake (``async with``), writes its part of the config (``channels`` of ishiki.yaml,
the profile's claim, the environment), takes the harness's messages (``push``) and reports what the
harness watches: the texts the bot sent, the input still to be confirmed, how often the host started to
listen (``ready_count``: Telegram's ``getUpdates``, WhatsApp's phone-number check at start), how many inputs
were confirmed (``confirmed``: an update past the offset, a webhook answered 200). ``until`` waits for a
predicate, woken by whatever the fake sees.

- ``TelegramPlatform``: the package's ``FakeBotAPI``; the host polls it, groups included.
- ``WhatsAppPlatform``: the package's ``FakeGraphAPI`` for what the bot sends, and Meta's side of the
  webhook played here: every message is posted, signed, to the host's HTTP ingress, and posted again until
  it is answered 200, as Meta redelivers for days. Four posts are in flight at a time. WhatsApp's Cloud API
  has no groups, so its plans have none.
- ``OneBotPlatform``: QQ over OneBot v11 in ``http`` mode, the package's ``FakeOneBot`` as the implementation
  (its HTTP API takes what the bot sends; its ``get_login_info`` is the host starting to listen), and the
  implementation's event posts played here: each message is posted to the host's ingress and posted again until
  it is answered 204, four at a time. (Over a WebSocket v11 has no acknowledgement, so only this mode can
  have an event sent again after a kill.) Group messages mention nobody, so they are recorded and not answered.
"""

from __future__ import annotations

import json
import math
import socket
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, Protocol, Self, TypeVar

import anyio
import httpx
from _crash_model import Message
from ishiki_channel_onebot.testing import FakeOneBot
from ishiki_channel_onebot.testing import group_message as onebot_group_message
from ishiki_channel_onebot.testing import private_message as onebot_private_message
from ishiki_channel_telegram.testing import DEFAULT_TOKEN, FakeBotAPI, group_chat, private_chat, user
from ishiki_channel_whatsapp.testing import (
    DEFAULT_ACCESS_TOKEN,
    DEFAULT_APP_SECRET,
    DEFAULT_PHONE_NUMBER_ID,
    DEFAULT_VERIFY_TOKEN,
    FakeGraphAPI,
    WebhookDriver,
    text_message,
)

__all__ = ["PLATFORMS", "OneBotPlatform", "Platform", "Redelivery", "TelegramPlatform", "WhatsAppPlatform"]

_FOREVER = 3600.0
T = TypeVar("T")


class Platform(Protocol):
    """What the harness needs of a platform (see the module docstring)."""

    name: str
    has_groups: bool

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None: ...

    def host_yaml(self) -> str:
        """The ``http`` and ``channels`` parts of ishiki.yaml."""
        ...

    def claim(self) -> str:
        """The profile's ``channels`` entry."""
        ...

    def env(self) -> dict[str, str]:
        """The variables the config reads."""
        ...

    def push(self, message: Message) -> None:
        """Send one message to the bot."""
        ...

    def sent(self) -> Iterable[str]:
        """The texts the bot sent."""
        ...

    def pending(self) -> bool:
        """Whether input waits to be confirmed."""
        ...

    def ready_count(self) -> int:
        """How often a host started to listen."""
        ...

    def confirmed(self) -> int:
        """How many inputs were confirmed."""
        ...

    async def until(self, predicate: Callable[[], bool]) -> None:
        """Return once ``predicate()`` holds."""
        ...

    async def hang_up(self) -> None:
        """A host died: drop what it left waiting on the platform's side, so it is not counted for the next."""
        ...


class TelegramPlatform:
    """Telegram: the package's fake Bot API, polled by the host."""

    name = "telegram"
    has_groups = True

    def __init__(self) -> None:
        self.bot = FakeBotAPI()

    async def __aenter__(self) -> Self:
        await self.bot.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.bot.__aexit__(None, None, None)

    def host_yaml(self) -> str:
        return (
            "channels:\n  telegram:\n"
            f"    accounts:\n      - token: ${{CRASH_BOT_TOKEN}}\n        api_base: {self.bot.url}\n"
            "        poll_timeout: 5\n        backoff_max: 1\n"
        )

    def claim(self) -> str:
        return f"telegram:{DEFAULT_TOKEN.split(':')[0]}: ['*']"

    def env(self) -> dict[str, str]:
        return {"CRASH_BOT_TOKEN": DEFAULT_TOKEN}

    def push(self, message: Message) -> None:
        text = f"hello {message.token}"
        if message.direct:
            self.bot.push_message(private_chat(user(10_000 + message.chat, f"P{message.chat}")), text)
        else:
            chat = group_chat(-1_000_000_000_000 - message.chat, f"G{message.chat}")
            self.bot.push_message(chat, f"chatter {message.token}", sender=user(20_000 + message.chat, "S"))

    def sent(self) -> Iterable[str]:
        return (m.text for m in self.bot.sent)

    def pending(self) -> bool:
        return bool(self.bot.pending)

    def ready_count(self) -> int:
        return self.bot.count("getUpdates")

    def confirmed(self) -> int:
        return self.bot.confirmed

    async def until(self, predicate: Callable[[], bool]) -> None:
        await self.bot.until(predicate, deadline=_FOREVER)

    async def hang_up(self) -> None:
        """A dead host's long poll would be counted as a host listening when its timeout ends: drop it."""
        if self.bot.polling:
            self.bot.offline = True
            await self.bot.until(lambda: not self.bot.polling, deadline=_FOREVER)
            self.bot.offline = False


class Redelivery(Generic[T]):
    """The platform's side of a push channel that sends input until the host confirms it (Meta's webhooks, a
    OneBot implementation's event posts): ``posters`` deliveries in flight at once, each repeated until
    ``deliver(item)`` says it was confirmed. Between two tries of a host that is down (or not listening yet)
    a poster waits for the next sign of life, ``requested()`` (the platform's fake taking a request: a host
    starts with one), or a short pause (a host that keeps running but answers "not yet")."""

    def __init__(
        self,
        deliver: Callable[[T], Awaitable[bool]],
        requested: Callable[[], int],
        wait_for_request: Callable[[int], Awaitable[None]],
        posters: int = 4,
    ):
        self._deliver = deliver
        self._requested = requested
        self._wait_for_request = wait_for_request
        self._posters = posters
        self._queue: deque[T] = deque()
        self._in_flight = 0
        self.confirmed = 0
        self._changed = anyio.Event()
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        for _ in range(self._posters):
            self._tg.start_soon(self._post_forever)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)

    def put(self, item: T) -> None:
        """Deliver ``item`` (after those queued before it)."""
        self._queue.append(item)
        self._notify()

    def pending(self) -> bool:
        """Whether an item waits to be confirmed."""
        return bool(self._queue) or self._in_flight > 0

    async def until(self, predicate: Callable[[], bool]) -> None:
        """Return once ``predicate()`` holds, checked after each confirmation and each request the fake takes
        (``wait_for_request(count)`` returns once it took more than ``count`` of them)."""
        with anyio.fail_after(_FOREVER):
            while not predicate():
                await self._next_change()

    async def _next_change(self) -> None:
        requested, changed = self._requested(), self._changed
        async with anyio.create_task_group() as tg:

            async def on_request() -> None:
                await self._wait_for_request(requested)
                tg.cancel_scope.cancel()

            async def on_confirmed() -> None:
                await changed.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(on_request)
            tg.start_soon(on_confirmed)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _post_forever(self) -> None:
        while True:
            while not self._queue:
                await self._next_change()
            item = self._queue.popleft()
            self._in_flight += 1
            try:
                while not await self._deliver(item):
                    with anyio.move_on_after(0.05):
                        await self._next_change()
            finally:
                self._in_flight -= 1
            self.confirmed += 1
            self._notify()


class WhatsAppPlatform:
    """WhatsApp's Cloud API: the fake Graph API, and Meta's webhook deliveries (see the module docstring)."""

    name = "whatsapp"
    has_groups = False

    def __init__(self) -> None:
        self.graph = FakeGraphAPI()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/hooks/whatsapp/0"
        self._client = httpx.AsyncClient(timeout=30.0, trust_env=False)
        self._driver = WebhookDriver(self.url, app_secret=DEFAULT_APP_SECRET, client=self._client)
        self._meta = Redelivery(self._deliver, lambda: len(self.graph.calls), self._graph_took_more)

    async def __aenter__(self) -> Self:
        await self.graph.__aenter__()
        await self._meta.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._meta.__aexit__()
        await self._client.aclose()
        await self.graph.__aexit__(None, None, None)

    def host_yaml(self) -> str:
        return (
            f"http: {{listen: '127.0.0.1:{self.port}'}}\nchannels:\n  whatsapp:\n    accounts:\n"
            f"      - backend: cloud\n        phone_number_id: '{DEFAULT_PHONE_NUMBER_ID}'\n"
            "        access_token: ${CRASH_WA_TOKEN}\n        app_secret: ${CRASH_WA_SECRET}\n"
            f"        verify_token: {DEFAULT_VERIFY_TOKEN}\n        graph_base: {self.graph.url}\n"
            "        backoff_max: 1\n"
        )

    def claim(self) -> str:
        return f"whatsapp:{DEFAULT_PHONE_NUMBER_ID}: ['*']"

    def env(self) -> dict[str, str]:
        return {"CRASH_WA_TOKEN": DEFAULT_ACCESS_TOKEN, "CRASH_WA_SECRET": DEFAULT_APP_SECRET}

    def push(self, message: Message) -> None:
        sender = str(4_915_100_000_000 + message.chat)
        self._meta.put(text_message(sender, f"hello {message.token}"))

    def sent(self) -> Iterable[str]:
        return (m.text for m in self.graph.sent if m.text is not None)

    def pending(self) -> bool:
        return self._meta.pending()

    def ready_count(self) -> int:
        return self.graph.count("phone")

    def confirmed(self) -> int:
        return self._meta.confirmed

    async def until(self, predicate: Callable[[], bool]) -> None:
        await self._meta.until(predicate)

    async def hang_up(self) -> None:
        """Nothing waits: each webhook is posted by the harness and answered, or posted again."""

    async def _graph_took_more(self, calls: int) -> None:
        await self.graph.until(lambda: len(self.graph.calls) > calls, deadline=math.inf)

    async def _deliver(self, message: dict[str, object]) -> bool:
        sender = str(message["from"])
        try:
            answer, _ = await self._driver.messages(message, names=[(sender, f"P{sender[-4:]}")])
        except httpx.TransportError:
            return False
        return answer.status_code == 200


class OneBotPlatform:
    """QQ over OneBot v11 in http mode: the package's fake implementation, and its event posts played here (see
    the module docstring)."""

    name = "onebot"
    has_groups = True

    def __init__(self) -> None:
        self.bot = FakeOneBot()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/hooks/onebot/0"
        self._client = httpx.AsyncClient(timeout=30.0, trust_env=False)
        self._posts = Redelivery(self._deliver, lambda: len(self.bot.calls), self._bot_took_more)

    async def __aenter__(self) -> Self:
        await self.bot.__aenter__()
        await self._posts.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._posts.__aexit__()
        await self._client.aclose()
        await self.bot.__aexit__(None, None, None)

    def host_yaml(self) -> str:
        return (
            f"http: {{listen: '127.0.0.1:{self.port}'}}\nchannels:\n  onebot:\n    accounts:\n"
            f"      - mode: http\n        url: {self.bot.http_url}\n        self_id: '{self.bot.self_id}'\n"
            "        access_token: ${CRASH_ONEBOT_TOKEN}\n        backoff_max: 1\n"
        )

    def claim(self) -> str:
        return f"onebot:{self.bot.self_id}: ['*']"

    def env(self) -> dict[str, str]:
        return {"CRASH_ONEBOT_TOKEN": str(self.bot.access_token)}

    def push(self, message: Message) -> None:
        bot = self.bot.self_id
        if message.direct:
            frame = onebot_private_message(bot, 10_000 + message.chat, f"hello {message.token}", nickname="P")
        else:
            frame = onebot_group_message(bot, 900_000 + message.chat, 20_000 + message.chat, f"chatter {message.token}")
        self._posts.put(json.dumps(frame).encode())

    def sent(self) -> Iterable[str]:
        return (m.text for m in self.bot.sent)

    def pending(self) -> bool:
        return self._posts.pending()

    def ready_count(self) -> int:
        return self.bot.count("get_login_info")

    def confirmed(self) -> int:
        return self._posts.confirmed

    async def until(self, predicate: Callable[[], bool]) -> None:
        await self._posts.until(predicate)

    async def hang_up(self) -> None:
        """Nothing waits: each event is posted by the harness and answered, or posted again."""

    async def _bot_took_more(self, calls: int) -> None:
        await self.bot.until(lambda: len(self.bot.calls) > calls, deadline=math.inf)

    async def _deliver(self, body: bytes) -> bool:
        headers = {"Authorization": f"Bearer {self.bot.access_token}", "Content-Type": "application/json"}
        try:
            answer = await self._client.post(self.url, content=body, headers=headers)
        except httpx.TransportError:
            return False
        return answer.status_code == 204


PLATFORMS: dict[str, Callable[[], Platform]] = {
    "onebot": OneBotPlatform,
    "telegram": TelegramPlatform,
    "whatsapp": WhatsAppPlatform,
}


def _free_port() -> int:
    """A port no one listens on now (the host binds it at each start; SO_REUSEADDR lets a restart have it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
