"""The Bot API's envelope on the fake's side: refusals, error answers, and parameters read as Telegram reads them."""

from __future__ import annotations

import json
import re
from typing import Any

from ishiki_channel_telegram.testing._http import Reply

__all__ = ["ApiError", "error_reply", "normalise"]

JSON_FIELDS = ("allowed_updates", "reply_parameters", "entities", "caption_entities", "link_preview_options")
INT_FIELDS = ("offset", "limit", "timeout", "chat_id", "reply_to_message_id", "message_id", "draft_id")


class ApiError(Exception):
    """A Bot API refusal: its HTTP status, Telegram's description and, for a 429, the ``retry_after`` asked."""

    def __init__(self, status: int, description: str, retry_after: int | None = None):
        self.status, self.description, self.retry_after = status, description, retry_after


def error_reply(status: int, description: str, retry_after: int | None = None) -> Reply:
    """Telegram's error envelope: ``{"ok": false, "error_code", "description", "parameters"?}``."""
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return Reply.of_json(body, status)


def normalise(raw: dict[str, Any]) -> dict[str, Any]:
    """Parameters as the Bot API reads them: JSON-serialised fields decoded, numbers from form strings."""
    params = dict(raw)
    for key in JSON_FIELDS:
        if isinstance(params.get(key), str):
            try:
                params[key] = json.loads(params[key])
            except ValueError:
                raise ApiError(400, f"Bad Request: can't parse {key} JSON object") from None
    for key in INT_FIELDS:
        value = params.get(key)
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            params[key] = int(value)
    return params
