"""The ``web`` channel: chats in the dashboard's browser tabs (``web:<id>``, channel ``private:<user>``).

Each account of ``channels.web.accounts`` in ``ishiki.yaml`` (``{id: ana}``) is one connection, ``web:<id>``,
that a profile claims like any other (``channels: {web:ana: ["*"]}``). It talks to no platform: while it runs
it attaches itself to the ``WebHub`` the host shares (``WEB_HUB``), where the dashboard's chat page finds it.
A person's words come in through the hub (``WebHub.say``) and go into the host as an inbound message of
``private:<user>`` from the user ``<user>`` (so ``web:<user>`` in a profile's ``trust.owners`` makes them an
owner); what the host sends, and its typing indicator, go out to the followers of that chat in the hub. A
send never waits for a browser: a tab that reads too slowly loses its oldest events (``WebHub``).

It is a ``DraftingConnection``: a reply the model is still writing goes out as ``draft`` events (the text so
far, under the draft's id), then either the final message (``sent``, naming the draft it replaces) or an
``undraft`` (the step called tools, or the turn failed or was aborted). Publishing never waits, so the drafts
come as fast as the model writes; a tab that cannot keep up loses the oldest, and the newest draft carries
the whole text anyway.

The dashboard's user is the host's operator, so a failed turn's reason (``show_failure``) is shown in the chat.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
from ishiki_host import Channel, IshikiEvent, SendResult, User, split_message

from ishiki_dashboard.webchat.hub import WEB_HUB, WebHub

if TYPE_CHECKING:
    from anyio.abc import TaskStatus
    from ishiki_host import ChannelHost, Delivery, Draft, DraftEnd, OutboundFile, PluginConfig

__all__ = ["PLATFORM", "WebChannel", "WebConnection"]

PLATFORM = "web"
_PART_LIMIT = 16_000
_CONNECTIONS = itertools.count(1)


class WebConnection:
    """One ``web`` account as a ``ChannelConnection`` (see the module docstring)."""

    def __init__(self, host: ChannelHost, *, account_id: str):
        self.host = host
        self._self_id = account_id
        self._ids = itertools.count(1)
        # Unique across runs and connections: a message id names one message, and repeats are ignored by id.
        self._id_prefix = f"{int(host.clock.now())}.{os.getpid()}.{next(_CONNECTIONS)}"

    @property
    def platform(self) -> str:
        """``web``."""
        return PLATFORM

    @property
    def self_id(self) -> str:
        """The account's ``id``."""
        return self._self_id

    @property
    def hub(self) -> WebHub:
        """The hub the host shares with the dashboard."""
        return self.host.shared.setdefault(WEB_HUB, WebHub)

    def now(self) -> float:
        """The host's clock."""
        return self.host.clock.now()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Attach to the hub, report readiness, and stay attached until cancelled."""
        detach = self.hub.attach(self)
        try:
            task_status.started()
            await anyio.sleep_forever()
        finally:
            detach()

    async def say(self, user: str, text: str) -> Delivery:
        """Dispatch ``text`` from ``user`` in ``private:<user>`` into the host; returns once it is durable."""
        event = IshikiEvent(
            kind="message.created",
            platform=PLATFORM,
            self_id=self._self_id,
            channel_id=f"private:{user}",
            message_id=f"{self._id_prefix}-{next(self._ids)}",
            timestamp=self.now(),
            user=User(user, user),
            content=text,
        )
        return await self.host.dispatch(event)

    # -- output -----------------------------------------------------------------------------------------

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Publish each part of ``text`` to the chat's followers (a tab that is not open misses it: the
        conversation page shows the fact log)."""
        return self._publish_parts(channel_id, text, "")

    async def show_draft(self, channel_id: str, draft: Draft) -> None:
        """Publish the reply written so far (a tab shows it in place of the previous draft)."""
        self.hub.publish(self._self_id, channel_id, "draft", draft.text, ts=self.now(), detail=draft.id)

    async def finish_draft(self, channel_id: str, draft: Draft, text: str) -> SendResult:
        """Publish the final message; its first part replaces the draft in the tabs."""
        return self._publish_parts(channel_id, text, draft.id)

    async def drop_draft(self, channel_id: str, draft: Draft, why: DraftEnd) -> None:
        """Tell the tabs the draft will not become a message (``why``)."""
        self.hub.publish(self._self_id, channel_id, "undraft", why, ts=self.now(), detail=draft.id)

    def _publish_parts(self, channel_id: str, text: str, draft_id: str) -> SendResult:
        ids = []
        for index, part in enumerate(split_message(text, _PART_LIMIT)):
            detail = draft_id if index == 0 else ""
            event = self.hub.publish(self._self_id, channel_id, "sent", part, ts=self.now(), detail=detail)
            ids.append(f"web-{event.seq}")
        return SendResult(tuple(ids))

    async def send_typing(self, channel_id: str) -> None:
        """Tell the chat's followers that the persona is writing."""
        self.hub.publish(self._self_id, channel_id, "typing", ts=self.now())

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Publish one line per file (its name, media type and size): the chat does not show files yet."""
        ids = []
        for item in files:
            name = item.blob.name or "file"
            line = f"{name} ({item.blob.media_type}, {len(item.blob.data)} bytes)"
            ids.append(f"web-{self.hub.publish(self._self_id, channel_id, 'file', line, ts=self.now()).seq}")
        return SendResult(tuple(ids))

    def show_failure(self, channel_id: str, reason: str) -> None:
        """Show why a turn failed in the chat: the dashboard's user is the operator."""
        self.hub.publish(self._self_id, channel_id, "failed", reason, ts=self.now())

    def status(self) -> Mapping[str, Any]:
        """The chats followed now (for ``ishiki status``)."""
        return {"followers": self.hub.followers_of(self._self_id)}


class WebChannel(Channel):
    """The dashboard's web chat as a channel (entry point ``web`` of ``ishiki.channel``)."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id"],
        "properties": {
            "id": {
                "type": "string",
                "pattern": "^[A-Za-z0-9_.~-]{1,64}$",
                "description": "The account's id: a profile claims it as web:<id>.",
            },
        },
    }

    def create(self, ctx: ChannelHost, account: PluginConfig) -> WebConnection:
        """The connection of one ``web`` account."""
        return WebConnection(ctx, account_id=str(account["id"]))
