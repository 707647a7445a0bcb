"""A fake channel for tests: a connection that records what the host sends and feeds it input.

``FakeConnection`` implements ``ChannelConnection``: ``send`` splits at ``limit`` and records a
``SentMessage`` (ids ``out-1``, ``out-2``...), ``send_typing`` records the channel, and ``say(text)`` shapes an
event and dispatches it through the ``ChannelHost`` the connection was made with, returning the host's
``Delivery``. Inbound ids (``in-<n>``) are unique in the test process, as a platform's are: a host restarted
on the same data directory never takes new input for a repeat of old input. ``fail_sends`` scripts the next
sends: each entry is consumed by one send, an error text fails it, ``None`` lets it through. It has the
optional ``show_failure`` too: ``failures`` records ``(channel_id, reason)`` of each failed turn the host
reported (what the console shows its operator; never sent into the chat). ``FakeChannel`` is its plugin class
(platform ``fake``), for hosts built with ``registry_with``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ishiki_host.channels.base import Channel, SendResult
from ishiki_host.channels.events import IshikiEvent, Quote, User
from ishiki_host.channels.split import split_message
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ishiki_host.channels.base import ChannelHost, Delivery, InboundAttachment, OutboundFile
    from ishiki_host.config.services import PluginConfig

__all__ = ["FakeChannel", "FakeConnection", "SentMessage"]

_INBOUND_IDS = itertools.count(1)  # shared by every connection of the process (see the module docstring)


@dataclass(frozen=True, slots=True)
class SentMessage:
    """One ``send`` the host made: where, what, in reply to what, and the ids of its parts."""

    channel_id: str
    text: str
    reply_to: str | None
    ids: tuple[str, ...]


class FakeConnection:
    """A recording ``ChannelConnection`` (see the module docstring)."""

    def __init__(
        self, host: ChannelHost | None = None, *, platform: str = "fake", self_id: str = "bot", limit: int = 4096
    ):
        self.host = host
        self._platform = platform
        self._self_id = self_id
        self.limit = limit
        self.sent: list[SentMessage] = []
        self.typing: list[str] = []
        self.files: list[tuple[str, int]] = []
        self.fail_sends: list[str | None] = []
        self.failures: list[tuple[str, str]] = []
        self.runs = 0
        self._ids = itertools.count(1)
        self._changed = anyio.Event()

    @property
    def platform(self) -> str:
        """``fake`` unless given."""
        return self._platform

    @property
    def self_id(self) -> str:
        """``bot`` unless given."""
        return self._self_id

    @property
    def sid(self) -> str:
        """``platform:selfId``."""
        return f"{self._platform}:{self._self_id}"

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Ready at once; then idle until cancelled."""
        self.runs += 1
        task_status.started()
        await anyio.sleep_forever()

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Record the message (split at ``limit``); a queued failure in ``fail_sends`` fails it instead."""
        failure = self.fail_sends.pop(0) if self.fail_sends else None
        if failure is not None:
            return SendResult((), failure)
        parts = split_message(text, self.limit)
        ids = tuple(f"out-{next(self._ids)}" for _ in parts)
        self.sent.append(SentMessage(channel_id, text, reply_to, ids))
        self._notify()
        return SendResult(ids)

    async def send_typing(self, channel_id: str) -> None:
        """Record the channel."""
        self.typing.append(channel_id)

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Record how many files went to the channel."""
        self.files.append((channel_id, len(files)))
        return SendResult(tuple(f"file-{next(self._ids)}" for _ in files))

    def show_failure(self, channel_id: str, reason: str) -> None:
        """Record why a turn answering ``channel_id`` failed (``failures``)."""
        self.failures.append((channel_id, reason))

    def texts(self, channel_id: str | None = None) -> list[str]:
        """The texts sent, optionally to one channel only."""
        return [m.text for m in self.sent if channel_id is None or m.channel_id == channel_id]

    async def wait_sent(self, count: int) -> list[SentMessage]:
        """Wait until ``count`` messages were sent in all (wrap it in a deadline)."""
        while len(self.sent) < count:
            await self._changed.wait()
        return self.sent

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def event(
        self,
        text: str,
        *,
        channel_id: str = "private:1",
        user_id: str = "1",
        user_name: str | None = None,
        message_id: str | None = None,
        mentions_self: bool = False,
        quote: Quote | None = None,
        timestamp: float | None = None,
    ) -> IshikiEvent:
        """A ``message.created`` event as this channel would shape it."""
        return IshikiEvent(
            kind="message.created",
            platform=self._platform,
            self_id=self._self_id,
            channel_id=channel_id,
            message_id=message_id or f"in-{next(_INBOUND_IDS)}",
            timestamp=timestamp if timestamp is not None else (self.host.clock.now() if self.host else 0.0),
            user=User(user_id, user_name),
            content=text,
            quote=quote,
            mentions_self=mentions_self,
        )

    async def say(self, text: str, *, attachments: Sequence[InboundAttachment] = (), **fields: Any) -> Delivery:
        """Dispatch ``event(text, **fields)`` through the host; returns its ``Delivery``."""
        if self.host is None:
            raise RuntimeError("this FakeConnection has no ChannelHost to dispatch to")
        return await self.host.dispatch(self.event(text, **fields), attachments)


class FakeChannel(Channel):
    """The plugin class of ``FakeConnection`` (platform ``fake``); an account may set ``self_id`` and ``limit``."""

    config_schema: ClassVar[Mapping[str, Json]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "self_id": {"type": "string", "minLength": 1, "default": "bot"},
            "limit": {"type": "integer", "minimum": 16, "default": 4096},
        },
    }

    def create(self, ctx: ChannelHost, account: PluginConfig) -> FakeConnection:
        """A connection dispatching to ``ctx``."""
        return FakeConnection(ctx, self_id=account.get("self_id", "bot"), limit=account.get("limit", 4096))
