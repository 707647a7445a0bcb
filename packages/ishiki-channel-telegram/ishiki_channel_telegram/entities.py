"""Message entities: slicing by UTF-16 offsets, and whether a message addresses the bot.

Telegram gives entity ``offset`` and ``length`` in UTF-16 code units, so an emoji before a mention moves it by
two units while Python counts one code point. Slicing is done on the UTF-16 encoding; an entity whose range
falls outside the text or splits a surrogate pair is ignored rather than trusted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["BotIdentity", "entity_text", "mentions_bot"]


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is, from ``getMe``."""

    id: int
    username: str
    name: str = ""

    @property
    def handle(self) -> str:
        """``@username`` in lower case, for case-insensitive comparison."""
        return "@" + self.username.lower()


def entity_text(text: str, entity: Mapping[str, Any]) -> str | None:
    """The part of ``text`` that ``entity`` covers, or ``None`` when its range is not valid in ``text``."""
    offset, length = entity.get("offset"), entity.get("length")
    if not isinstance(offset, int) or not isinstance(length, int) or not _is_count(offset) or not _is_count(length):
        return None
    units = text.encode("utf-16-le", "surrogatepass")
    start, end = 2 * offset, 2 * (offset + length)
    if end > len(units):
        return None
    try:
        return units[start:end].decode("utf-16-le")
    except UnicodeDecodeError:  # the range cuts a surrogate pair in two
        return None


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def mentions_bot(text: str, entities: Iterable[Any], bot: BotIdentity) -> bool:
    """Whether an entity of ``text`` names the bot: ``@username`` (any case), a ``text_mention`` of its id, or a
    ``/command@username``."""
    for entity in entities:
        if not isinstance(entity, dict):  # updates come from the network: trust no shape
            continue
        kind = entity.get("type")
        if kind == "text_mention":
            user = entity.get("user")
            if isinstance(user, dict) and user.get("id") == bot.id:
                return True
        elif kind in ("mention", "bot_command") and _names_bot(kind, entity_text(text, entity), bot):
            return True
    return False


def _names_bot(kind: str, covered: str | None, bot: BotIdentity) -> bool:
    if covered is None or not bot.username:
        return False
    if kind == "mention":
        return covered.lower() == bot.handle
    _, at, target = covered.partition("@")
    return bool(at) and "@" + target.lower() == bot.handle
