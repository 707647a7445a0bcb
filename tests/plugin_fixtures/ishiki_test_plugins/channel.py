"""A channel whose accounts need a token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ishiki_host import Channel


class TestChat(Channel):
    """A chat platform for tests; each account in ishiki.yaml needs a token."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["token"],
        "properties": {
            "token": {"type": "string", "minLength": 1},
            "mentionRequired": {"type": "boolean", "default": True},
        },
    }

    def create(self, ctx: Any, account: Mapping[str, Any]) -> Mapping[str, Any]:
        return account
