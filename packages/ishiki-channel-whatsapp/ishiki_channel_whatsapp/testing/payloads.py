"""Builders of webhook notifications as Meta sends them, for tests (``WebhookDriver`` posts them signed).

Each builder returns plain JSON-ready dicts in the Cloud API's shapes::

    notification(PHONE_NUMBER_ID, messages=[text_message("4915112345678", "hello")],
                 contacts=[contact("4915112345678", "Alice")])

Message ids, when not given, are ``wamid.TEST<n>`` from one counter per process, so every message built is
distinct; timestamps are strings of seconds, as Meta writes them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "DEFAULT_DISPLAY_PHONE_NUMBER",
    "DEFAULT_PHONE_NUMBER_ID",
    "contact",
    "media_message",
    "message",
    "next_wamid",
    "notification",
    "status",
    "text_message",
]

DEFAULT_PHONE_NUMBER_ID = "106540352242922"
DEFAULT_DISPLAY_PHONE_NUMBER = "15550100000"
_COUNTER = itertools.count(1)


def next_wamid() -> str:
    """A message id no other builder call gave (``wamid.TEST<n>``)."""
    return f"wamid.TEST{next(_COUNTER):08d}"


def contact(wa_id: str, name: str | None = "Alice") -> dict[str, Any]:
    """An entry of ``contacts``: the sender's ``wa_id`` and profile name."""
    entry: dict[str, Any] = {"wa_id": wa_id}
    if name is not None:
        entry["profile"] = {"name": name}
    return entry


def message(
    sender: str,
    kind: str,
    body: Any = None,
    *,
    message_id: str | None = None,
    timestamp: float = 1_700_000_000,
    reply_to: str | None = None,
    reply_from: str = DEFAULT_DISPLAY_PHONE_NUMBER,
    **extra: Any,
) -> dict[str, Any]:
    """A message of any ``kind`` (``location``, ``reaction``, ``sticker``, ``unsupported``...) whose ``body``
    goes under the key of its kind (none when ``None``); ``reply_to`` adds ``context`` (a reply to that id, sent
    by ``reply_from``); ``extra`` keys are added as they are (``errors=[...]``, ``group_id=...``)."""
    item: dict[str, Any] = {
        "from": sender,
        "id": message_id or next_wamid(),
        "timestamp": str(int(timestamp)),
        "type": kind,
    }
    if body is not None:
        item[kind] = body
    if reply_to is not None:
        item["context"] = {"from": reply_from, "id": reply_to}
    item.update(extra)
    return item


def text_message(sender: str, text: str, **keys: Any) -> dict[str, Any]:
    """A text message (``message`` keywords apply)."""
    return message(sender, "text", {"body": text}, **keys)


def media_message(
    sender: str,
    kind: str,
    media_id: str,
    *,
    mime_type: str = "image/jpeg",
    caption: str | None = None,
    filename: str | None = None,
    **keys: Any,
) -> dict[str, Any]:
    """An ``image``, ``document``, ``audio``, ``video`` or ``sticker`` message of the media ``media_id``."""
    body: dict[str, Any] = {"id": media_id, "mime_type": mime_type, "sha256": "c2hhMjU2IG9mIHRoZSBmaWxl"}
    if caption is not None:
        body["caption"] = caption
    if filename is not None:
        body["filename"] = filename
    return message(sender, kind, body, **keys)


def status(
    message_id: str,
    state: str = "delivered",
    *,
    recipient: str = "4915112345678",
    timestamp: float = 1_700_000_000,
    errors: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """An entry of ``statuses``: ``sent``, ``delivered``, ``read`` or ``failed`` (with ``errors``)."""
    entry: dict[str, Any] = {
        "id": message_id,
        "status": state,
        "timestamp": str(int(timestamp)),
        "recipient_id": recipient,
    }
    if errors:
        entry["errors"] = [dict(error) for error in errors]
    return entry


def notification(
    phone_number_id: str = DEFAULT_PHONE_NUMBER_ID,
    *,
    messages: Iterable[Mapping[str, Any]] = (),
    statuses: Iterable[Mapping[str, Any]] = (),
    contacts: Iterable[Mapping[str, Any]] = (),
    errors: Iterable[Mapping[str, Any]] = (),
    display_phone_number: str = DEFAULT_DISPLAY_PHONE_NUMBER,
    business_account_id: str = "102290129340398",
    field: str = "messages",
) -> dict[str, Any]:
    """A whole notification with one change for ``phone_number_id``."""
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": display_phone_number, "phone_number_id": phone_number_id},
    }
    for key, items in (("contacts", contacts), ("messages", messages), ("statuses", statuses), ("errors", errors)):
        listed = [dict(item) for item in items]
        if listed:
            value[key] = listed
    change = {"value": value, "field": field}
    return {"object": "whatsapp_business_account", "entry": [{"id": business_account_id, "changes": [change]}]}
