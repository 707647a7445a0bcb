"""The account entry: defaults from the schema, what each mode needs, and errors that name the key without
quoting the token."""

from __future__ import annotations

import pytest
from ishiki_host.errors import HostConfigInvalid

from ishiki_channel_onebot.config import OneBotAccount


def test_defaults_come_from_the_schema():
    account = OneBotAccount.from_config({"url": "ws://127.0.0.1:3001/"})
    assert (account.mode, account.url, account.action_timeout, account.max_message_chars) == (
        "forward",
        "ws://127.0.0.1:3001",
        30.0,
        3000,
    )
    assert account.label == "at ws://127.0.0.1:3001"


@pytest.mark.parametrize(
    ("entry", "key", "words"),
    [
        ({"mode": "forward"}, "url", "needs the implementation's url"),
        ({"mode": "forward", "url": "http://x"}, "url", "needs a ws:// or wss:// url"),
        ({"mode": "reverse"}, "self_id", "needs the bot's QQ number"),
        ({"mode": "http", "url": "ws://x", "self_id": "10001"}, "url", "needs a http:// or https:// url"),
        ({"url": "ws://x", "self_id": "abc"}, "self_id", "does not match"),
        ({"url": "ws://x", "access_token": "${ONEBOT_TOKEN}"}, "access_token", "unexpanded"),
        ({"url": "ws://x", "colour": 1}, "", "Additional properties"),
    ],
)
def test_a_wrong_entry_names_its_key(entry, key, words):
    with pytest.raises(HostConfigInvalid) as invalid:
        OneBotAccount.from_config({"access_token": "s3cret", **entry})
    assert words in str(invalid.value)
    assert invalid.value.path.endswith(key)
    assert "s3cret" not in str(invalid.value)
