"""What people do, as the fake Bot API sees it: messages, edits, deletions and files, queued as updates."""

from __future__ import annotations

import collections
import hashlib
import itertools
from collections.abc import Callable
from typing import Any

from ishiki_channel_telegram.testing.builders import FakeFile

__all__ = ["Inbound"]


class Inbound:
    """The update queue of a fake bot and the chats, messages and files it knows.

    ``now`` gives message dates (seconds); ``on_push`` is called after each update is queued.
    """

    def __init__(self, *, first_update_id: int, now: Callable[[], float], on_push: Callable[[], None]):
        self.updates: collections.deque[dict[str, Any]] = collections.deque()  # in update_id order
        self.chats: dict[int, dict[str, Any]] = {}
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.files: dict[str, FakeFile] = {}
        self._update_ids = itertools.count(first_update_id)
        self.numbering: set[int] | None = None  # the ids given since ``renumber`` (None: never renumbered)
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._now = now
        self._on_push = on_push

    def push_update(self, payload: dict[str, Any]) -> int:
        """Queue ``{"update_id": <next>, **payload}`` (any payload: malformed and unknown kinds too)."""
        update_id = next(self._update_ids)
        if self.numbering is not None:
            self.numbering.add(update_id)
        self.updates.append({"update_id": update_id, **payload})
        self._on_push()
        return update_id

    def renumber(self, next_update_id: int) -> None:
        """The next update gets ``next_update_id`` and the ones after it count on from there, as Telegram does
        after a week without updates ("the identifier of the next update will be chosen randomly instead of
        sequentially"): the new ids may be below every id before. Afterwards an ``offset`` beyond every id of
        the new numbering is stale: it confirms none of the new updates, which are sent again and again until
        an ``offset`` past one of them is asked for."""
        self._update_ids = itertools.count(next_update_id)
        self.numbering = set()

    def push_message(
        self,
        chat: dict[str, Any],
        text: str | None = None,
        *,
        sender: dict[str, Any] | None = None,
        entities: list[dict[str, Any]] | None = None,
        reply_to: dict[str, Any] | None = None,
        caption: str | None = None,
        caption_entities: list[dict[str, Any]] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """A person (``sender``; in a private chat, its owner) sends a message; returns the ``Message``.

        A ``channel`` chat makes a ``channel_post`` from the channel itself. ``fields`` adds anything else
        (``photo=[...]``, ``document={...}``, ``voice``, ``sticker``, ``message_thread_id``...).
        """
        message = self.new_message(chat)
        if chat["type"] == "channel":
            message["sender_chat"] = chat
        else:
            message["from"] = sender or self._owner(chat)
        for key, value in (
            ("text", text),
            ("entities", entities),
            ("caption", caption),
            ("caption_entities", caption_entities),
        ):
            if value is not None:
                message[key] = value
        if reply_to is not None:
            message["reply_to_message"] = {k: v for k, v in reply_to.items() if k != "reply_to_message"}
        message.update(fields)
        self.push_update({"channel_post" if chat["type"] == "channel" else "message": message})
        return message

    def edit_message(
        self, message: dict[str, Any], text: str, *, entities: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The sender edits ``message`` to ``text``; returns the edited ``Message``."""
        edited = {key: value for key, value in message.items() if key != "entities"}
        edited.update({"text": text, "edit_date": int(self._now())})
        if entities is not None:
            edited["entities"] = entities
        self.messages[(message["chat"]["id"], message["message_id"])] = edited
        kind = "edited_channel_post" if message["chat"]["type"] == "channel" else "edited_message"
        self.push_update({kind: edited})
        return edited

    def delete_business_messages(self, chat: dict[str, Any], message_ids: list[int]) -> int:
        """Messages of a business chat are deleted (the only deletions the Bot API reports)."""
        payload = {"business_connection_id": "fake-business", "chat": chat, "message_ids": message_ids}
        return self.push_update({"deleted_business_messages": payload})

    def add_file(self, data: bytes, *, size: int | None = None, path: str | None = None) -> FakeFile:
        """A file the bot can fetch; ``size`` may claim more than ``data`` holds (limit tests)."""
        digest = hashlib.sha256(data + str(len(self.files)).encode()).hexdigest()
        fake = FakeFile(
            file_id=f"AgAC{digest[:24]}",
            file_unique_id=f"AQAD{digest[24:36]}",
            data=data,
            size=len(data) if size is None else size,
            path=path or f"files/file_{len(self.files)}",
        )
        self.files[fake.file_id] = fake
        return fake

    def new_message(self, chat: dict[str, Any]) -> dict[str, Any]:
        """A stored message with the chat's next id and the current date (the caller fills the rest)."""
        self.chats[chat["id"]] = chat
        ids = self._message_ids.setdefault(chat["id"], itertools.count(1))
        message_id = next(ids)
        message: dict[str, Any] = {"message_id": message_id, "date": int(self._now()), "chat": chat}
        self.messages[(chat["id"], message_id)] = message
        return message

    def _owner(self, chat: dict[str, Any]) -> dict[str, Any]:
        if chat["type"] != "private":
            raise ValueError("a group message needs a sender (sender=user(...))")
        person = {"id": chat["id"], "is_bot": False, "first_name": chat.get("first_name", "someone")}
        person.update({key: chat[key] for key in ("last_name", "username") if key in chat})
        return person
