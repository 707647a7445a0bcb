"""A fake channel for tests: a connection that records what the host sends and feeds it input.

``FakeConnection`` implements ``ChannelConnection``: ``send`` splits at ``limit`` and records a
``SentMessage`` (ids ``out-1``, ``out-2``...), ``send_typing`` records the channel, and ``say(text)`` shapes an
event and dispatches it through the ``ChannelHost`` the connection was made with, returning the host's
``Delivery``. Inbound ids (``in-<n>``) are unique in the test process, as a platform's are: a host restarted
on the same data directory never takes new input for a repeat of old input. ``fail_sends`` scripts the next
sends: each entry is consumed by one send, an error text fails it, ``None`` lets it through. It has the
optional ``show_failure`` too: ``failures`` records ``(channel_id, reason)`` of each failed turn the host
reported (what the console shows its operator; never sent into the chat), and the optional ``show_activity``:
``activities`` records ``(channel_id, TurnActivity)`` as a person's turn moves on (``wait_activity(state)``
waits for one). ``FakeChannel`` is its plugin class
(platform ``fake``), for hosts built with ``registry_with``.

``DraftingFakeConnection`` is the same connection with ``DraftingConnection`` too (an account with
``drafts: true``): ``drafts`` records every ``show_draft`` / ``finish_draft`` / ``drop_draft`` as a
``DraftCall`` in order, so a test asserts a draft grew and then ended exactly once (``draft_calls(id)``);
``finish_draft`` also records its text in ``sent`` like ``send``, so ``texts()`` shows what the person got.
``draft_gate``, when set to an event, holds every ``show_draft`` until it is set (a slow platform; ``held``
counts the calls waiting there, ``wait_held(n)`` waits for them), and ``overlaps`` counts draft calls that
began while another was still running (the host must make none).
The plain ``FakeConnection`` has no draft methods: the host never streams to it.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import anyio

from ishiki_host.channels.base import Channel, SendResult
from ishiki_host.channels.events import IshikiEvent, Quote, User
from ishiki_host.channels.split import split_message
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ishiki_host.channels.base import (
        ChannelHost,
        Delivery,
        Draft,
        DraftEnd,
        InboundAttachment,
        OutboundFile,
        TurnActivity,
    )
    from ishiki_host.config.services import PluginConfig

__all__ = ["DraftCall", "DraftingFakeConnection", "FakeChannel", "FakeConnection", "SentMessage"]

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
        self.activities: list[tuple[str, TurnActivity]] = []
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

    def show_activity(self, channel_id: str, activity: TurnActivity) -> None:
        """Record what the turn answering ``channel_id`` is doing (``activities``)."""
        self.activities.append((channel_id, activity))
        self._notify()

    async def wait_activity(self, state: str) -> TurnActivity:
        """The first recorded activity in ``state`` (``thinking``, ``tool``, ...), once there is one (wrap it in
        a deadline)."""
        while not any(a.state == state for _, a in self.activities):
            await self._changed.wait()
        return next(a for _, a in self.activities if a.state == state)

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


@dataclass(frozen=True, slots=True)
class DraftCall:
    """One draft call the host made: ``show`` (``text`` the draft so far), ``finish`` (``text`` the final
    message, ``ids`` what it sent) or ``drop`` (``why``)."""

    kind: Literal["show", "finish", "drop"]
    channel_id: str
    draft_id: str
    text: str
    why: DraftEnd | None = None
    ids: tuple[str, ...] = ()


class DraftingFakeConnection(FakeConnection):
    """A ``FakeConnection`` that shows drafts (see the module docstring)."""

    def __init__(self, host: ChannelHost | None = None, **options: Any):
        super().__init__(host, **options)
        self.drafts: list[DraftCall] = []
        self.draft_gate: anyio.Event | None = None
        self.overlaps = 0
        self.held = 0
        self._in_call = 0

    async def show_draft(self, channel_id: str, draft: Draft) -> None:
        """Record the draft (after ``draft_gate``, when one is set)."""
        with self._draft_call():
            if self.draft_gate is not None:
                self.held += 1
                self._notify()
                try:
                    await self.draft_gate.wait()
                finally:
                    self.held -= 1
            self.drafts.append(DraftCall("show", channel_id, draft.id, draft.text))
            self._notify()

    async def finish_draft(self, channel_id: str, draft: Draft, text: str) -> SendResult:
        """Deliver ``text`` as ``send`` would (``sent``, ``fail_sends``) and record the end."""
        with self._draft_call():
            result = await self.send(channel_id, text, reply_to=draft.reply_to)
            self.drafts.append(DraftCall("finish", channel_id, draft.id, text, ids=result.ids))
            self._notify()
            return result

    async def drop_draft(self, channel_id: str, draft: Draft, why: DraftEnd) -> None:
        """Record the end."""
        with self._draft_call():
            self.drafts.append(DraftCall("drop", channel_id, draft.id, draft.text, why))
            self._notify()

    def draft_calls(self, draft_id: str | None = None) -> list[DraftCall]:
        """The draft calls, optionally of one draft only."""
        return [c for c in self.drafts if draft_id is None or c.draft_id == draft_id]

    async def wait_drafts(self, count: int) -> list[DraftCall]:
        """Wait until ``count`` draft calls were made in all (wrap it in a deadline)."""
        while len(self.drafts) < count:
            await self._changed.wait()
        return self.drafts

    async def wait_held(self, count: int = 1) -> None:
        """Wait until ``count`` ``show_draft`` calls wait at ``draft_gate`` (wrap it in a deadline)."""
        while self.held < count:
            await self._changed.wait()

    @contextlib.contextmanager
    def _draft_call(self) -> Iterator[None]:
        if self._in_call:
            self.overlaps += 1
        self._in_call += 1
        try:
            yield
        finally:
            self._in_call -= 1


class FakeChannel(Channel):
    """The plugin class of ``FakeConnection`` (platform ``fake``); an account may set ``self_id`` and ``limit``,
    ``drafts: true`` for a ``DraftingFakeConnection``, and ``exclusive: true`` for an account one host of a
    fleet runs at a time (by default every host runs it, as a webhook's)."""

    config_schema: ClassVar[Mapping[str, Json]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "self_id": {"type": "string", "minLength": 1, "default": "bot"},
            "limit": {"type": "integer", "minimum": 16, "default": 4096},
            "drafts": {"type": "boolean", "default": False},
            "exclusive": {"type": "boolean", "default": False},
        },
    }

    def exclusive(self, account: PluginConfig) -> bool:
        """The account's ``exclusive`` (see the class docstring)."""
        return bool(account.get("exclusive", False))

    def create(self, ctx: ChannelHost, account: PluginConfig) -> FakeConnection:
        """A connection dispatching to ``ctx``."""
        kind = DraftingFakeConnection if account.get("drafts", False) else FakeConnection
        return kind(ctx, self_id=account.get("self_id", "bot"), limit=account.get("limit", 4096))
