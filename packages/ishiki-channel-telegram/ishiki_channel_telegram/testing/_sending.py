"""What the fake bot can do: send messages, photos and documents, show typing, and fetch files.

Each method checks what Telegram checks and refuses with Telegram's wording (``ApiError``); what goes out is
recorded in ``sent`` (the text as shown after HTML parsing, and the source as asked), ``actions`` and
``downloads``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ishiki_host import utf16_len

from ishiki_channel_telegram.testing._html import HtmlRejected, parse_html
from ishiki_channel_telegram.testing._http import Reply, Request
from ishiki_channel_telegram.testing._inbound import Inbound
from ishiki_channel_telegram.testing._wire import ApiError, error_reply
from ishiki_channel_telegram.testing.builders import SentMessage

__all__ = ["GETFILE_LIMIT", "Sending"]

GETFILE_LIMIT = 20 * 1024 * 1024
_ACTIONS = frozenset(
    [
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    ]
)


class Sending(Inbound):
    """The bot's own actions (a part of ``FakeBotAPI``)."""

    token: str
    bot: dict[str, Any]
    sent: list[SentMessage]
    actions: list[tuple[int, str]]
    downloads: list[str]
    blocked_chats: set[int]

    def _chat(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id = params.get("chat_id")
        if not isinstance(chat_id, int) or chat_id not in self.chats:
            raise ApiError(400, "Bad Request: chat not found")
        if chat_id in self.blocked_chats:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        return self.chats[chat_id]

    def _formatted(self, source: str, parse_mode: Any, limit: int, too_long: str) -> tuple[str, list[dict[str, Any]]]:
        text, entities = source, list[dict[str, Any]]()
        if parse_mode is not None:
            if str(parse_mode).lower() != "html":
                raise ApiError(400, f"Bad Request: unsupported parse_mode {parse_mode!r} in the fake")
            try:
                text, entities = parse_html(source)
            except HtmlRejected as exc:
                raise ApiError(400, f"Bad Request: can't parse entities: {exc}") from None
        if utf16_len(text) > limit:
            raise ApiError(400, too_long)
        return text, entities

    def _reply_target(self, chat_id: int, params: dict[str, Any]) -> int | None:
        reply = params.get("reply_parameters")
        target = reply.get("message_id") if isinstance(reply, dict) else params.get("reply_to_message_id")
        if target is None:
            return None
        allow = isinstance(reply, dict) and reply.get("allow_sending_without_reply") is True
        if (chat_id, target) not in self.messages and not allow:
            raise ApiError(400, "Bad Request: message to be replied not found")
        return int(target) if (chat_id, target) in self.messages else None

    def _bot_message(self, chat: dict[str, Any], reply_to: int | None, **fields: Any) -> dict[str, Any]:
        message = self.new_message(chat)
        message.update({"from": self.bot, **{key: value for key, value in fields.items() if value}})
        if reply_to is not None:
            message["reply_to_message"] = self.messages[(chat["id"], reply_to)]
        return message

    def _send_message(self, request: Request) -> dict[str, Any]:
        params = request.params
        chat = self._chat(params)
        source = params.get("text")
        if not isinstance(source, str) or not source.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        text, entities = self._formatted(source, params.get("parse_mode"), 4096, "Bad Request: message is too long")
        if not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        reply_to = self._reply_target(chat["id"], params)
        message = self._bot_message(chat, reply_to, text=text, entities=entities)
        record = SentMessage(chat["id"], message["message_id"], text, "sendMessage", params.get("parse_mode"), source)
        self.sent.append(_with(record, entities=tuple(entities), reply_to=reply_to))
        return message

    def _send_chat_action(self, request: Request) -> bool:
        chat = self._chat(request.params)
        action = request.params.get("action")
        if action not in _ACTIONS:
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        self.actions.append((chat["id"], str(action)))
        return True

    def _get_file(self, request: Request) -> dict[str, Any]:
        fake = self.files.get(str(request.params.get("file_id")))
        if fake is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        if fake.size > GETFILE_LIMIT:
            raise ApiError(400, "Bad Request: file is too big")
        return {
            "file_id": fake.file_id,
            "file_unique_id": fake.file_unique_id,
            "file_size": fake.size,
            "file_path": fake.path,
        }

    def _download(self, path: str) -> Reply:
        token, _, file_path = path.removeprefix("/file/bot").partition("/")
        if token != self.token:
            return error_reply(401, "Unauthorized")
        fake = next((f for f in self.files.values() if f.path == file_path), None)
        if fake is None:
            return error_reply(404, "Not Found")
        self.downloads.append(file_path)
        return Reply(200, fake.data, "application/octet-stream")

    def _send_file(self, request: Request, kind: str) -> dict[str, Any]:
        params = request.params
        chat = self._chat(params)
        upload = request.uploads.get(kind)
        if upload is None:
            raise ApiError(400, f"Bad Request: there is no {kind} in the request")
        if not upload.data:
            raise ApiError(400, "Bad Request: file must be non-empty")
        if kind == "photo" and len(upload.data) > 10 * 1024 * 1024:
            raise ApiError(400, "Bad Request: PHOTO_SAVE_FILE_INVALID")
        caption, _ = self._formatted(
            params.get("caption") or "", params.get("parse_mode"), 1024, "Bad Request: message caption is too long"
        )
        stored = self.add_file(upload.data, path=f"uploads/{upload.filename}")
        media: Any = (
            [stored.as_photo_size(1280, 960)]
            if kind == "photo"
            else stored.as_document(upload.filename, upload.media_type)
        )
        message = self._bot_message(chat, self._reply_target(chat["id"], params), caption=caption, **{kind: media})
        record = SentMessage(
            chat["id"], message["message_id"], caption, f"send{kind.title()}", params.get("parse_mode")
        )
        self.sent.append(_with(record, file=upload.data, file_name=upload.filename))
        return message


def _with(record: SentMessage, **changes: Any) -> SentMessage:
    return dataclasses.replace(record, **changes)
