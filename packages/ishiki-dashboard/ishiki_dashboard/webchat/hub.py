"""The web chat's meeting point: ``WebHub``, shared by the ``web`` channel and the dashboard's chat page.

The channel's connections and the dashboard are two plugins of one package that never hold each other: they
meet in the host's shared objects under ``WEB_HUB`` (``ChannelHost.shared`` on the channel's side,
``HostPluginContext.services`` on the dashboard's). Each running ``web`` account attaches itself (``attach``)
while its connection runs; the chat page lists the accounts, says a person's words into one (``say``: the
connection dispatches them into the host as an inbound message from ``web:<user>``), and follows a chat
(``subscribe``). Everything that happens in a chat, the sender's own words, the typing indicator, the reply
as the model writes it (its draft), each message the host sends, the tool calls of a turn and its end, is a
``ChatEvent`` published to the chat's subscribers.

A subscriber (a browser tab) has a bounded queue: ``publish`` never blocks, and when a tab reads too slowly
its oldest events are dropped and the next read starts with a ``dropped`` note saying how many, so the host's
``send`` never waits for a browser.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import anyio
from ishiki_host import ServiceKey
from ishiki_host.errors import ChannelError, ChannelUnavailable

if TYPE_CHECKING:
    from ishiki_host import Delivery

__all__ = [
    "DEFAULT_QUEUE",
    "WEB_HUB",
    "ChatEvent",
    "ChatEventKind",
    "Subscription",
    "WebAccount",
    "WebHub",
    "chat_of",
]

DEFAULT_QUEUE = 256
"""How many events a subscriber's queue holds before its oldest are dropped."""

ChatEventKind = Literal["said", "typing", "draft", "undraft", "sent", "file", "tool", "done", "failed", "dropped"]
"""``said``: the person's words (the echo); ``typing``; ``draft``: the reply written so far (``detail`` is the
draft's id; each one replaces the last); ``undraft``: the draft will not become a message (``text`` says why:
``tools``, ``failed``, ``aborted``); ``sent``: one message part the host sent (``detail``, on the first part of
a finished draft, is the draft it replaces); ``file``: a file it sent (its name); ``tool``: a tool call of the
turn and its result; ``done``: the turn ended (``text`` is how); ``failed``: why a turn failed (for the
operator); ``dropped``: events this subscriber missed."""


def chat_of(user: str) -> str:
    """The channel id of a web user's private chat: ``private:<user>``."""
    return f"private:{user}"


@dataclass(frozen=True, slots=True)
class ChatEvent:
    """One thing that happened in a web chat. ``seq`` counts the hub's events (1, 2, ...); ``sender`` is the
    user id for ``said``, ``None`` for what the host did; ``detail`` is a tool call's arguments and result, or the
    id of the draft a ``draft``, ``undraft`` or ``sent`` event belongs to."""

    seq: int
    kind: ChatEventKind
    account: str
    chat: str
    ts: float
    text: str = ""
    sender: str | None = None
    detail: str = ""


class WebAccount(Protocol):
    """What the hub needs of a running ``web`` connection."""

    @property
    def self_id(self) -> str:
        """The account's id (``web:<self_id>`` is its sid)."""
        ...

    def now(self) -> float:
        """The host's clock."""
        ...

    async def say(self, user: str, text: str) -> Delivery:
        """Dispatch ``text`` from ``web:<user>`` into the host (an inbound message of ``private:<user>``)."""
        ...


class Subscription:
    """One follower of one chat: a bounded queue of ``ChatEvent`` (see the module docstring).

    Iterate it (``async for event in subscription``) until it is closed; ``close`` ends the iteration and
    detaches it from the hub.
    """

    def __init__(self, account: str, chat: str, size: int, detach: Callable[[Subscription], None]):
        self.account = account
        self.chat = chat
        self._events: deque[ChatEvent] = deque(maxlen=size)
        self._wake = anyio.Event()
        self._dropped = 0
        self._closed = False
        self._detach = detach

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called (by the reader, or by the hub when the account went away)."""
        return self._closed

    def put(self, event: ChatEvent) -> None:
        """Queue ``event`` without waiting: a full queue drops its oldest event (counted)."""
        if self._closed:
            return
        if len(self._events) == self._events.maxlen:
            self._dropped += 1
        self._events.append(event)
        self._wake.set()

    async def next(self) -> ChatEvent | None:
        """The next event (a ``dropped`` note first when some were lost), or ``None`` once closed."""
        while not self._events and not self._closed:
            await self._wake.wait()
            self._wake = anyio.Event()
        if self._dropped:
            return self._note_dropped()
        return self._events.popleft() if self._events else None

    def _note_dropped(self) -> ChatEvent:
        count, self._dropped = self._dropped, 0
        first = self._events[0]
        text = f"{count} event{'s' if count != 1 else ''} dropped: this page read too slowly"
        return ChatEvent(first.seq, "dropped", self.account, self.chat, first.ts, text)

    def close(self) -> None:
        """End the iteration and leave the hub (idempotent)."""
        if not self._closed:
            self._closed = True
            self._wake.set()
            self._detach(self)

    async def __aiter__(self) -> AsyncIterator[ChatEvent]:
        while (event := await self.next()) is not None:
            yield event


class WebHub:
    """The web accounts running now and the followers of their chats (see the module docstring)."""

    def __init__(self, queue_size: int = DEFAULT_QUEUE):
        self.queue_size = queue_size
        self._accounts: dict[str, WebAccount] = {}
        self._subscribers: dict[tuple[str, str], set[Subscription]] = {}
        self._seq = itertools.count(1)
        self._changed = anyio.Event()

    # -- accounts -----------------------------------------------------------------------------------------

    def attach(self, account: WebAccount) -> Callable[[], None]:
        """Register a running account; returns the function that detaches it. ``ChannelError`` (fatal) when an
        account of that id is attached already (two ``web`` accounts of ``ishiki.yaml`` with one ``id``)."""
        name = account.self_id
        if name in self._accounts:
            raise ChannelError(f"web account {name!r} is declared twice in ishiki.yaml: give each its own id")
        self._accounts[name] = account
        self._signal()

        def detach() -> None:
            if self._accounts.get(name) is account:
                del self._accounts[name]
                self.close_account(name)  # its followers' streams end; their pages reconnect and say so
                self._signal()

        return detach

    def accounts(self) -> tuple[str, ...]:
        """The ids of the accounts running now, sorted."""
        return tuple(sorted(self._accounts))

    def running(self, account: str) -> bool:
        """Whether ``account`` is attached."""
        return account in self._accounts

    async def wait_changed(self) -> None:
        """Return at the next attach or detach (for a page that waits for an account to come up)."""
        await self._changed.wait()

    def _signal(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- chats --------------------------------------------------------------------------------------------

    async def say(self, account: str, user: str, text: str) -> Delivery:
        """Publish the person's words to the chat's followers, then dispatch them into the host through the
        account's connection; returns its ``Delivery``. ``ChannelUnavailable`` when the account is not running;
        the host's ``ChannelError`` when it did not take the message."""
        connection = self._accounts.get(account)
        if connection is None:
            raise ChannelUnavailable(f"the web account {account!r} is not running")
        self.publish(account, chat_of(user), "said", text, sender=user, ts=connection.now())
        return await connection.say(user, text)

    def subscribe(self, account: str, chat: str) -> Subscription:
        """Follow one chat from now on (close the subscription when done)."""
        subscription = Subscription(account, chat, self.queue_size, self._unsubscribe)
        self._subscribers.setdefault((account, chat), set()).add(subscription)
        return subscription

    def followers(self, account: str, chat: str) -> int:
        """How many subscriptions follow the chat."""
        return len(self._subscribers.get((account, chat), ()))

    def followers_of(self, account: str) -> int:
        """How many subscriptions follow the account's chats."""
        return sum(len(subs) for (name, _), subs in self._subscribers.items() if name == account)

    def publish(
        self,
        account: str,
        chat: str,
        kind: ChatEventKind,
        text: str = "",
        *,
        ts: float,
        sender: str | None = None,
        detail: str = "",
    ) -> ChatEvent:
        """Give an event to every follower of the chat, at once and without waiting."""
        event = ChatEvent(next(self._seq), kind, account, chat, ts, text, sender, detail)
        for subscription in tuple(self._subscribers.get((account, chat), ())):
            subscription.put(event)
        return event

    def close_account(self, account: str) -> None:
        """End every subscription of the account's chats (its connection stopped)."""
        for (name, _), subscriptions in tuple(self._subscribers.items()):
            if name == account:
                for subscription in tuple(subscriptions):
                    subscription.close()

    def _unsubscribe(self, subscription: Subscription) -> None:
        key = (subscription.account, subscription.chat)
        followers = self._subscribers.get(key)
        if followers is not None:
            followers.discard(subscription)
            if not followers:
                del self._subscribers[key]


WEB_HUB: ServiceKey[WebHub] = ServiceKey("ishiki-dashboard.web", WebHub)
"""Where the hub is shared: ``host.shared.setdefault(WEB_HUB, WebHub)`` (the channel) and
``ctx.services.setdefault(WEB_HUB, WebHub)`` (the dashboard) find the same one."""
