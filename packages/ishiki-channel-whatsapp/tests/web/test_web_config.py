"""The ``web`` block: its schema inside the account schema, its defaults, and each bad value named by its key."""

from __future__ import annotations

import pytest
from ishiki_host.errors import HostConfigInvalid

from ishiki_channel_whatsapp.config import ACCOUNT_SCHEMA, WEB_SCHEMA
from ishiki_channel_whatsapp.web.config import WebSettings, normalize_phone
from ishiki_channel_whatsapp.web.connection import create_web_connection


def _error(account) -> HostConfigInvalid:
    with pytest.raises(HostConfigInvalid) as caught:
        WebSettings.from_config(account)
    return caught.value


def test_the_account_schema_holds_the_web_schema():
    assert ACCOUNT_SCHEMA["properties"]["web"] is WEB_SCHEMA


def test_defaults_come_from_the_schemas():
    settings = WebSettings.from_config({"backend": "web"})
    assert (settings.pairing, settings.phone, settings.mention_required, settings.self_chat) == ("qr", None, True, True)
    assert (settings.pairing_timeout, settings.reconnect_timeout, settings.device_name) == (180, 120, "Ishiki Host")
    for key in ("max_download_bytes", "backoff_max", "dispatch_tries", "startup_timeout"):
        assert getattr(settings, key) == ACCOUNT_SCHEMA["properties"][key]["default"], key


@pytest.mark.parametrize(
    ("written", "digits"),
    [("+49 151 1234567", "491511234567"), ("+1 (415) 555-0100", "14155550100"), (491511234567, "491511234567")],
)
def test_a_phone_is_kept_as_its_digits(written, digits):
    assert normalize_phone(written) == digits
    assert WebSettings.from_config({"backend": "web", "web": {"phone": written}}).phone == digits


@pytest.mark.parametrize(
    ("phone", "says"),
    [
        ("0151 1234567", "starts with 0"),
        ("0049 151 1234567", "starts with 0"),
        ("+49 151 CALL-ME", "not a phone number"),
        ("+49 12", "7 to 15"),
        ("+49 1511 2345 6789 0123", "7 to 15"),
    ],
)
def test_a_bad_phone_is_named(phone, says):
    error = _error({"backend": "web", "web": {"phone": phone}})
    assert error.path == "channels.whatsapp.accounts[].web.phone"
    assert says in error.message


def test_pairing_by_code_needs_the_phone():
    error = _error({"backend": "web", "web": {"pairing": "code"}})
    assert error.path == "channels.whatsapp.accounts[].web.phone"
    assert "pairing: code needs phone" in error.message


def test_an_unknown_pairing_is_named():
    error = _error({"backend": "web", "web": {"pairing": "nfc"}})
    assert error.path.endswith("web.pairing")


def test_an_unknown_web_key_is_refused():
    error = _error({"backend": "web", "web": {"phonenumber": "+491511234567"}})
    assert "phonenumber" in error.message


def test_cloud_keys_do_not_belong_to_a_web_account():
    error = _error({"backend": "web", "phone_number_id": "1234"})
    assert error.path.endswith(".phone_number_id")
    assert "backend cloud" in error.message


def test_a_cloud_account_is_not_a_web_one():
    error = _error(
        {"backend": "cloud", "phone_number_id": "1", "access_token": "t", "app_secret": "s", "verify_token": "v"}
    )
    assert error.path.endswith(".backend")


def test_group_overrides_are_keyed_by_the_full_jid():
    web = {"chats": {"group:120363000000000001@g.us": {"mention_required": False}, "group:1203-99": {}}}
    settings = WebSettings.from_config({"backend": "web", "web": {"mention_required": True, **web}})
    assert settings.requires_mention("120363000000000001@g.us") is False
    assert settings.requires_mention("1203-99@g.us") is True


def test_create_validates_the_account(channel_host):
    with pytest.raises(HostConfigInvalid):
        create_web_connection(channel_host, {"backend": "web", "web": {"pairing": "code"}})
    connection = create_web_connection(channel_host, {"backend": "web", "web": {"phone": "+491511234567"}})
    assert connection.sid == "whatsapp:491511234567"


def test_the_readme_account_is_valid():
    import re
    from pathlib import Path

    import yaml

    readme = (Path(__file__).parents[2] / "README.md").read_text("utf-8")
    (block,) = [code for code in re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL) if "backend: web" in code]
    (account,) = yaml.safe_load(block)["channels"]["whatsapp"]["accounts"]
    settings = WebSettings.from_config(account)
    assert (settings.phone, settings.pairing, settings.id) == ("4915123456789", "qr", "home")
