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
"""

from __future__ import annotations

import math
import socket
from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol, Self

import anyio
import httpx
from _crash_model import Message
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

__all__ = ["PLATFORMS", "Platform", "TelegramPlatform", "WhatsAppPlatform"]

_FOREVER = 3600.0


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


class WhatsAppPlatform:
    """WhatsApp's Cloud API: the fake Graph API, and Meta's webhook deliveries (see the module docstring)."""

    name = "whatsapp"
    has_groups = False
    posters = 4

    def __init__(self) -> None:
        self.graph = FakeGraphAPI()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/hooks/whatsapp/0"
        self._queue: deque[dict[str, object]] = deque()
        self._in_flight = 0
        self._confirmed = 0
        self._changed = anyio.Event()
        self._tg: anyio.abc.TaskGroup | None = None
        self._client = httpx.AsyncClient(timeout=30.0, trust_env=False)
        self._driver = WebhookDriver(self.url, app_secret=DEFAULT_APP_SECRET, client=self._client)

    async def __aenter__(self) -> Self:
        await self.graph.__aenter__()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        for _ in range(self.posters):
            self._tg.start_soon(self._post_forever)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
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
        self._queue.append(text_message(sender, f"hello {message.token}"))
        self._notify()

    def sent(self) -> Iterable[str]:
        return (m.text for m in self.graph.sent if m.text is not None)

    def pending(self) -> bool:
        return bool(self._queue) or self._in_flight > 0

    def ready_count(self) -> int:
        return self.graph.count("phone")

    def confirmed(self) -> int:
        return self._confirmed

    async def until(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(_FOREVER):
            while not predicate():
                await self._next_change()

    async def hang_up(self) -> None:
        """Nothing waits: each webhook is posted by the harness and answered, or posted again."""

    async def _next_change(self) -> None:
        """Until the fake Graph API takes a request or a webhook is answered."""
        calls, changed = len(self.graph.calls), self._changed
        async with anyio.create_task_group() as tg:

            async def on_graph() -> None:
                await self.graph.until(lambda: len(self.graph.calls) > calls, deadline=math.inf)
                tg.cancel_scope.cancel()

            async def on_webhook() -> None:
                await changed.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(on_graph)
            tg.start_soon(on_webhook)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _post_forever(self) -> None:
        """Meta's side: post the next message until it is answered 200. Between two tries of a host that is
        down (or not listening yet), wait for the next sign of life: a request to the Graph API (a host
        starts with one), or a short pause (a host that keeps running but answers 503)."""
        while True:
            while not self._queue:
                await self._next_change()
            message = self._queue.popleft()
            self._in_flight += 1
            try:
                while not await self._deliver(message):
                    with anyio.move_on_after(0.05):
                        await self._next_change()
            finally:
                self._in_flight -= 1
            self._confirmed += 1
            self._notify()

    async def _deliver(self, message: dict[str, object]) -> bool:
        sender = str(message["from"])
        try:
            answer, _ = await self._driver.messages(message, names=[(sender, f"P{sender[-4:]}")])
        except httpx.TransportError:
            return False
        return answer.status_code == 200


PLATFORMS: dict[str, Callable[[], Platform]] = {"telegram": TelegramPlatform, "whatsapp": WhatsAppPlatform}


def _free_port() -> int:
    """A port no one listens on now (the host binds it at each start; SO_REUSEADDR lets a restart have it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
