"""The package as a plugin: its entry points, its account schema and the parsed account."""

from __future__ import annotations

from importlib.metadata import entry_points

import jsonschema
import pytest
from ishiki_host import ChannelConnection
from ishiki_host.errors import HostConfigInvalid

from ishiki_channel_telegram import ACCOUNT_SCHEMA, TelegramAccount, TelegramChannel, TelegramConnection
from ishiki_channel_telegram.config import TELEGRAM_GETFILE_LIMIT

TOKEN = "123456:AAsecretPartOfTheToken"


def test_registered_in_ishiki_channel_as_telegram():
    (point,) = [ep for ep in entry_points(group="ishiki.channel") if ep.name == "telegram"]
    channel = point.load()
    assert channel is TelegramChannel
    assert channel.api_version == "1.0"
    assert channel.config_schema is ACCOUNT_SCHEMA


def test_pytest_plugin_is_registered():
    names = {ep.value for ep in entry_points(group="pytest11")}
    assert "ishiki_channel_telegram.testing.fixtures" in names


def test_schema_is_valid_and_documents_every_key():
    jsonschema.Draft202012Validator.check_schema(ACCOUNT_SCHEMA)
    for key, spec in ACCOUNT_SCHEMA["properties"].items():
        assert spec.get("description"), key


def test_create_makes_a_connection_with_defaults(tmp_path, telegram_host):
    connection = TelegramChannel().create(telegram_host, {"token": TOKEN})
    assert isinstance(connection, TelegramConnection)
    assert isinstance(connection, ChannelConnection)
    assert connection.platform == "telegram"
    assert connection.self_id == "123456"
    assert connection.sid == "telegram:123456"
    account = connection.account
    assert account.api_base == "https://api.telegram.org"
    assert account.mention_required is True
    assert (account.poll_timeout, account.poll_limit, account.parse_mode) == (30, 100, "html")
    assert account.max_download_bytes == TELEGRAM_GETFILE_LIMIT
    assert account.chats == {}
    assert "message" in account.allowed_updates
    assert "edited_message" in account.allowed_updates
    assert (account.mode, account.webhook_secret, account.webhook_max_connections) == ("polling", None, 40)
    assert connection.status()["mode"] == "polling"


def test_create_draws_jitter_from_the_hosts_rng(telegram_host):
    import random

    telegram_host.rng = random.Random(7)
    connection = TelegramChannel().create(telegram_host, {"token": TOKEN})
    assert connection._rng is telegram_host.rng


def test_policy_per_chat():
    account = TelegramAccount.from_config(
        {"token": TOKEN, "mention_required": False, "chats": {"group:-1001": {"mention_required": True}}}
    )
    assert account.requires_mention("group:-1001") is True
    assert account.requires_mention("group:-1002") is False
    assert account.requires_mention("private:5") is False


@pytest.mark.parametrize(
    ("account", "path", "words"),
    [
        ({"token": ""}, "token", "missing or empty"),
        ({"token": "${TELEGRAM_BOT_TOKEN}"}, "token", "unexpanded"),
        ({"token": TOKEN, "poll_timout": 5}, "channels.telegram.accounts[]", "poll_timout"),
        ({"token": TOKEN, "poll_limit": 500}, "poll_limit", "500"),
        ({"token": TOKEN, "parse_mode": "markdown"}, "parse_mode", "markdown"),
        ({"token": TOKEN, "api_base": "ftp://x"}, "api_base", "ftp://x"),
        ({"token": TOKEN, "chats": {"-1001": {"mention_required": False}}}, "chats", "-1001"),
        ({"token": TOKEN, "chats": {"group:-1001": {"mention": False}}}, "chats.group:-1001", "mention"),
        ({"token": TOKEN, "mode": "hook"}, "mode", "hook"),
        ({"token": TOKEN, "webhook_max_connections": 0}, "webhook_max_connections", "minimum of 1"),
    ],
)
def test_bad_accounts_name_the_key_and_never_the_token(account, path, words):
    with pytest.raises(HostConfigInvalid) as caught:
        TelegramAccount.from_config(account)
    assert caught.value.path.endswith(path)
    assert words in str(caught.value)
    assert "AAsecretPartOfTheToken" not in str(caught.value)


def test_account_repr_hides_the_token():
    assert "secret" not in repr(TelegramAccount.from_config({"token": TOKEN}))
    assert TelegramAccount.from_config({"token": TOKEN, "name": "shop"}).label == "'shop'"
    assert TelegramAccount.from_config({"token": TOKEN}).label == "bot 123456"


@pytest.mark.parametrize("module", ["ishiki_channel_telegram", "ishiki_channel_telegram.testing"])
def test_public_names_are_exact(module):
    import importlib

    mod = importlib.import_module(module)  # (ruff's RUF022 keeps __all__ sorted)
    public = {name for name in vars(mod) if not name.startswith("_")} - {"annotations"}
    submodules = {name for name in public if type(getattr(mod, name)).__name__ == "module"}
    assert set(mod.__all__) == public - submodules
