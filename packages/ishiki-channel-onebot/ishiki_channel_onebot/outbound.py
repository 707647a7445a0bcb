"""What the bot sends: a reply's Markdown as OneBot messages (``render``), and files as image or record segments.

Each message goes out with ``send_private_msg`` or ``send_group_msg`` (by the channel id's kind), in order;
the first replies to the triggering message. A failure stops there and comes back as ``SendResult.error``
with the ids of the messages that did go out, so the model is told exactly what the person saw. Every id sent
is handed to ``on_sent``: the connection drops the implementation's echo of it (``message_sent`` events, or a
``message`` event of its own) by that id. v11 has no typing indicator: the host's typing delay is only a
delay, and ``send_typing`` does nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ishiki_host import SendResult, parse_channel_id
from ishiki_host.errors import EventInvalid

from ishiki_channel_onebot.errors import OneBotError
from ishiki_channel_onebot.render import render_messages
from ishiki_channel_onebot.segments import Segment, image, record

if TYPE_CHECKING:
    from ishiki_host import OutboundFile

    from ishiki_channel_onebot.api import OneBotAPI

__all__ = ["Sender"]


class Sender:
    """Sends the messages of one account through ``api``; ``on_sent(channel_id, message_id)`` for each one."""

    def __init__(self, api: OneBotAPI, *, limit: int, on_sent: Callable[[str, str], None]):
        self._api = api
        self._limit = limit
        self._on_sent = on_sent

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send ``text`` (Markdown) as one or more messages; the first replies to ``reply_to``."""
        return await self._send_all(channel_id, render_messages(text, self._limit, reply_to=reply_to))

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send each file as its own message: an image, or a voice record; others are refused."""
        messages: list[list[Segment]] = []
        for file in files:
            data = "base64://" + base64.b64encode(file.blob.data).decode("ascii")
            media = file.blob.media_type
            if media.startswith("image/"):
                segment = image(data)
            elif media.startswith("audio/"):
                segment = record(data)
            else:
                return SendResult(error=f"OneBot v11 sends images and voice records, not {media}")
            caption = render_messages(file.caption, self._limit)[0] if file.caption else []
            messages.append([segment, *caption])
        return await self._send_all(channel_id, messages)

    async def _send_all(self, channel_id: str, messages: list[list[Segment]]) -> SendResult:
        try:
            kind, target = parse_channel_id(channel_id)
            number = int(target)
        except (EventInvalid, ValueError):
            return SendResult(error=f"{channel_id!r} is not a OneBot chat (private:<qq> or group:<group id>)")
        ids: list[str] = []
        for message in messages:
            try:
                if kind == "private":
                    message_id = await self._api.send_private_msg(number, message)
                else:
                    message_id = await self._api.send_group_msg(number, message)
            except OneBotError as exc:
                return SendResult(tuple(ids), error=str(exc))
            self._on_sent(channel_id, message_id)
            ids.append(message_id)
        return SendResult(tuple(ids))
