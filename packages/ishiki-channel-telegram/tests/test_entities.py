"""Entity slicing in UTF-16 units and the four ways a message names the bot (unit level)."""

from __future__ import annotations

import pytest

from ishiki_channel_telegram.entities import BotIdentity, entity_text, mentions_bot
from ishiki_channel_telegram.testing import entity

BOT = BotIdentity(id=99, username="HelperBot")


@pytest.mark.parametrize("prefix", ["", "😀", "👩‍👩‍👧", "𝕏𝕐", "é\u0301", "中文", "🇫🇷 "])
def test_slices_after_any_prefix(prefix):
    text = f"{prefix}@HelperBot!"
    assert entity_text(text, entity(text, "@HelperBot", "mention")) == "@HelperBot"


@pytest.mark.parametrize(
    "bad",
    [
        {"offset": 0, "length": 50},  # past the end
        {"offset": -1, "length": 2},
        {"offset": 1, "length": 1},  # the middle of a surrogate pair
        {"offset": "0", "length": 2},
        {"offset": True, "length": 2},
        {},
    ],
)
def test_invalid_ranges_are_ignored(bad):
    assert entity_text("😀abc", bad) is None


def test_the_four_ways_and_their_near_misses():
    text = "hi @helperbot"
    assert mentions_bot(text, [entity(text, "@helperbot", "mention")], BOT)
    assert not mentions_bot("hi @helperbots", [entity("hi @helperbots", "@helperbots", "mention")], BOT)
    assert mentions_bot("hey you", [{"type": "text_mention", "offset": 4, "length": 3, "user": {"id": 99}}], BOT)
    assert not mentions_bot("hey you", [{"type": "text_mention", "offset": 4, "length": 3, "user": {"id": 98}}], BOT)
    command = "/ask@HELPERBOT what"
    assert mentions_bot(command, [entity(command, "/ask@HELPERBOT", "bot_command")], BOT)
    assert not mentions_bot("/ask what", [entity("/ask what", "/ask", "bot_command")], BOT)
    assert not mentions_bot(text, ["junk", {"type": "mention"}, None], BOT)


def test_a_bot_without_username_is_only_named_by_id():
    anonymous = BotIdentity(id=99, username="")
    assert not mentions_bot("@", [{"type": "mention", "offset": 0, "length": 1}], anonymous)
    assert mentions_bot("x", [{"type": "text_mention", "offset": 0, "length": 1, "user": {"id": 99}}], anonymous)
