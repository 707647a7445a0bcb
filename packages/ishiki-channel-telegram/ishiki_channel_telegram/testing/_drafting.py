"""What the fake bot does with a reply being written: ``sendMessageDraft``, ``editMessageText``, ``deleteMessage``.

``sendMessageDraft`` (Bot API 9.3+) shows an ephemeral draft in a private chat: ``chat_id``, a non-zero
``draft_id`` (frames with the same id animate into each other), ``text`` of 1 to 4,096 units once parsed,
``parse_mode``; it answers ``true``, stores no message, and refuses a group (``TEXTDRAFT_PEER_INVALID``).
``drafts_refused`` makes it refuse as an older server or a bot without the method would: ``"method"`` answers
404 ``Not Found: method not found``, ``"chat"`` answers 400 ``TEXTDRAFT_PEER_INVALID`` in every chat.

``editMessageText`` replaces the text of one of the bot's own messages, with Telegram's refusals (``message to
edit not found``, ``message can't be edited``, ``message is not modified`` for the same text and entities,
``MESSAGE_TOO_LONG``); with ``min_edit_seconds`` set, an edit in a chat sooner than that after the previous
one (on the fake's clock) answers 429 with ``retry_after``, as Telegram's flood control does.
``deleteMessage`` deletes a message (``message to delete not found``).

Records: ``drafts`` (every frame shown), ``edits`` (every edit made, as ``SentMessage`` with the new text),
``deleted`` (``(chat_id, message_id)``); ``shown(chat_id, message_id)`` is a message's text now.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ishiki_channel_telegram.testing._http import Request
from ishiki_channel_telegram.testing._sending import Sending
from ishiki_channel_telegram.testing._wire import ApiError
from ishiki_channel_telegram.testing.builders import SentMessage

__all__ = ["DraftFrame", "Drafting"]

_PEER_INVALID = "Bad Request: TEXTDRAFT_PEER_INVALID"
_NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same "
    "as a current content and reply markup of the message"
)


@dataclass(frozen=True, slots=True)
class DraftFrame:
    """One ``sendMessageDraft`` the fake showed: the chat, the draft id, the text shown and the source asked."""

    chat_id: int
    draft_id: int
    text: str
    parse_mode: str | None = None
    source: str = ""


class Drafting(Sending):
    """Drafts, edits and deletions (a part of ``FakeBotAPI``)."""

    drafts: list[DraftFrame]
    edits: list[SentMessage]
    deleted: list[tuple[int, int]]
    drafts_refused: Literal["method", "chat"] | None
    min_edit_seconds: float | None
    _last_edit: dict[int, float]
    _clock_now: Callable[[], float]

    def _init_drafting(self, now: Callable[[], float]) -> None:
        self.drafts, self.edits, self.deleted = [], [], []
        self.drafts_refused = None
        self.min_edit_seconds = None
        self._last_edit = {}
        self._clock_now = now

    def shown(self, chat_id: int, message_id: int) -> str | None:
        """The text message ``message_id`` of ``chat_id`` shows now (``None``: no such message, or deleted)."""
        message = self.messages.get((chat_id, message_id))
        return None if message is None else str(message.get("text", ""))

    def _draft_methods(self) -> dict[str, Callable[[Request], Any]]:
        return {
            "sendMessageDraft": self._send_message_draft,
            "editMessageText": self._edit_message_text,
            "deleteMessage": self._delete_message,
        }

    def _send_message_draft(self, request: Request) -> bool:
        params = request.params
        if self.drafts_refused == "method":
            raise ApiError(404, "Not Found: method not found")
        chat = self._chat(params)
        if chat.get("type") != "private" or self.drafts_refused == "chat":
            raise ApiError(400, _PEER_INVALID)
        draft_id = params.get("draft_id")
        if not isinstance(draft_id, int) or isinstance(draft_id, bool) or draft_id == 0:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        source = params.get("text")
        if not isinstance(source, str) or not source.strip():
            raise ApiError(400, "Bad Request: text must be non-empty")
        text, _ = self._formatted(source, params.get("parse_mode"), 4096, "Bad Request: text is too long")
        self.drafts.append(DraftFrame(chat["id"], draft_id, text, params.get("parse_mode"), source))
        return True

    def _own_message(self, params: dict[str, Any], missing: str) -> tuple[dict[str, Any], dict[str, Any]]:
        chat = self._chat(params)
        message_id = params.get("message_id")
        message = self.messages.get((chat["id"], message_id)) if isinstance(message_id, int) else None
        if message is None:
            raise ApiError(400, f"Bad Request: {missing}")
        return chat, message

    def _edit_message_text(self, request: Request) -> dict[str, Any]:
        params = request.params
        chat, message = self._own_message(params, "message to edit not found")
        if message.get("from", {}).get("id") != self.bot["id"] or "text" not in message:
            raise ApiError(400, "Bad Request: message can't be edited")
        source = params.get("text")
        if not isinstance(source, str) or not source.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        text, entities = self._formatted(source, params.get("parse_mode"), 4096, "Bad Request: MESSAGE_TOO_LONG")
        if text == message.get("text") and entities == message.get("entities", []):
            raise ApiError(400, _NOT_MODIFIED)
        now = self._clock_now()
        last = self._last_edit.get(chat["id"])
        if self.min_edit_seconds is not None and last is not None and now - last < self.min_edit_seconds:
            retry_after = max(1, math.ceil(self.min_edit_seconds - (now - last)))
            raise ApiError(429, f"Too Many Requests: retry after {retry_after}", retry_after)
        self._last_edit[chat["id"]] = now
        edited = {**message, "text": text, "entities": entities, "edit_date": int(now)}
        self.messages[(chat["id"], message["message_id"])] = edited
        record = SentMessage(chat["id"], message["message_id"], text, "editMessageText", params.get("parse_mode"))
        self.edits.append(dataclasses.replace(record, source=source, entities=tuple(entities)))
        return edited

    def _delete_message(self, request: Request) -> bool:
        chat, message = self._own_message(request.params, "message to delete not found")
        del self.messages[(chat["id"], message["message_id"])]
        self.deleted.append((chat["id"], message["message_id"]))
        return True
