"""What the channel benchmarks share: a channel host whose ``dispatch`` returns at once (the WhatsApp benchmark
uses it too), and the updates the Telegram ones queue in the fake Bot API."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from ishiki_channel_telegram.testing import FakeBotAPI, group_chat, private_chat, user

from ishiki_host.channels.base import InboundAttachment
from ishiki_host.channels.events import IshikiEvent
from ishiki_host.config.host import HttpSettings
from ishiki_host.core.clock import SystemClock
from ishiki_host.ingress import HttpIngress, HttpMount
from ishiki_host.resources import AssetFetchers

__all__ = ["HOOK_PREFIX", "InstantHost", "queue_messages"]

HOOK_PREFIX = "/hooks/telegram/0"


@dataclass(frozen=True, slots=True)
class _Delivery:
    routed: bool = True
    runtime_key: str | None = "bench"
    entry_id: int | None = None

    async def settled(self) -> None:
        return None


class InstantHost:
    """A channel host whose dispatch returns at once (an instant model and fact log); ``done`` is set once
    ``expected`` events were dispatched. ``http`` is the server ``http_mount`` mounts on (webhook mode)."""

    def __init__(self, state_dir: Path, expected: int, http: HttpIngress | None = None, prefix: str = HOOK_PREFIX):
        self.clock = SystemClock()
        self.rng = random.Random(0)
        self.state_dir = state_dir
        self.fetchers = AssetFetchers()
        self.logger = logging.getLogger("bench.channel")
        self.http = http or HttpIngress(HttpSettings())
        self.count = 0
        self.expected = expected
        self.done = anyio.Event()
        self.prefix = prefix

    def http_mount(self) -> HttpMount:
        """The account's mount (the first Telegram account's, unless told otherwise), as a host gives it."""
        return self.http.mount(self.prefix)

    def command_names(self, channel_id: str) -> Sequence[str]:
        """No commands: every message is a plain one here."""
        return ()

    async def dispatch(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> _Delivery:
        """Count the event; returns at once."""
        self.count += 1
        if self.count == self.expected:
            self.done.set()
        return _Delivery(entry_id=self.count)


def queue_messages(server: FakeBotAPI, updates: int, chats: int) -> None:
    """Queue ``updates`` text messages across ``chats`` chats (half private, half groups)."""
    people = [user(1000 + n, f"Person {n}", username=f"person{n}") for n in range(chats)]
    rooms = [private_chat(p) if n % 2 else group_chat(-100_000 - n, f"Room {n}") for n, p in enumerate(people)]
    for n in range(updates):
        room = rooms[n % chats]
        server.push_message(room, f"message {n} with an emoji 😀 and some words", sender=people[n % chats])
