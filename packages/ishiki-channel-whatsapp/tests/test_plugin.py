"""The package as a plugin: its entry points, its account schema and the parsed account."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

import jsonschema
import pytest
from ishiki_host import ChannelConnection
from ishiki_host.errors import HostConfigInvalid

from ishiki_channel_whatsapp import ACCOUNT_SCHEMA, CloudAccount, CloudConnection, WhatsAppChannel
from ishiki_channel_whatsapp.config import WEB_SCHEMA

SECRET = "EAAsecretPartOfTheToken"
CLOUD = {
    "backend": "cloud",
    "phone_number_id": "106540352242922",
    "access_token": SECRET,
    "app_secret": "app-secret-value",
    "verify_token": "verify-token-value",
}


def test_registered_in_ishiki_channel_as_whatsapp():
    (point,) = [ep for ep in entry_points(group="ishiki.channel") if ep.name == "whatsapp"]
    channel = point.load()
    assert channel is WhatsAppChannel
    assert channel.api_version == "1.0"
    assert channel.config_schema is ACCOUNT_SCHEMA


def test_pytest_plugin_is_registered():
    names = {ep.value for ep in entry_points(group="pytest11")}
    assert "ishiki_channel_whatsapp.testing.fixtures" in names


def _documented(schema, where):
    for key, spec in schema.get("properties", {}).items():
        assert spec.get("description") or spec is WEB_SCHEMA, f"{where}.{key}"
        _documented(spec, f"{where}.{key}")


def test_schema_is_valid_and_documents_every_key():
    jsonschema.Draft202012Validator.check_schema(ACCOUNT_SCHEMA)
    _documented(ACCOUNT_SCHEMA, "account")


def test_the_web_backend_has_one_schema_entry_of_its_own():
    assert ACCOUNT_SCHEMA["properties"]["web"] is WEB_SCHEMA


def test_create_makes_a_cloud_connection_with_defaults(channel_host):
    connection = WhatsAppChannel().create(channel_host, CLOUD)
    assert isinstance(connection, CloudConnection)
    assert isinstance(connection, ChannelConnection)
    assert (connection.platform, connection.self_id, connection.sid) == (
        "whatsapp",
        "106540352242922",
        "whatsapp:106540352242922",
    )
    account = connection.account
    assert (account.graph_base, account.graph_version, account.mark_read) == (
        "https://graph.facebook.com",
        "v23.0",
        True,
    )
    assert (account.send_tries, account.dispatch_tries, account.template_on_window_closed) == (5, 3, None)


def test_create_draws_jitter_from_the_hosts_rng(channel_host):
    import random

    channel_host.rng = random.Random(7)
    connection = WhatsAppChannel().create(channel_host, CLOUD)
    assert connection._rng is channel_host.rng


def test_a_phone_number_id_written_as_a_number_is_read_as_its_digits():
    assert CloudAccount.from_config({**CLOUD, "phone_number_id": 106540352242922}).phone_number_id == "106540352242922"


def test_the_template_takes_a_language():
    account = CloudAccount.from_config(
        {**CLOUD, "template_on_window_closed": {"name": "hello_again", "language": "de"}}
    )
    assert (account.template_on_window_closed.name, account.template_on_window_closed.language) == ("hello_again", "de")
    default = CloudAccount.from_config({**CLOUD, "template_on_window_closed": {"name": "hello_again"}})
    assert default.template_on_window_closed.language == "en_US"


def _without(key):
    return {k: v for k, v in CLOUD.items() if k != key}


@pytest.mark.parametrize(
    ("account", "path", "words"),
    [
        (_without("backend"), "accounts[]", "'backend' is a required property"),
        ({**CLOUD, "backend": "sms"}, "backend", "'sms'"),
        (_without("phone_number_id"), "accounts[]", "'phone_number_id' is a required property"),
        ({**CLOUD, "phone_number_id": "+1 555 0100"}, "phone_number_id", "+1 555 0100"),
        ({**CLOUD, "phone_number_id": True}, "phone_number_id", "digits"),
        ({**CLOUD, "access_token": ""}, "access_token", "missing or empty"),
        ({**CLOUD, "access_token": "${WHATSAPP_TOKEN}"}, "access_token", "unexpanded"),
        (_without("access_token"), "access_token", "missing or empty"),
        (_without("app_secret"), "app_secret", "App settings > Basic"),
        ({**CLOUD, "app_secret": "${WHATSAPP_APP_SECRET}"}, "app_secret", "unexpanded"),
        ({**CLOUD, "verify_token": "  "}, "verify_token", "missing or empty"),
        ({**CLOUD, "graph_version": "21"}, "graph_version", "'21'"),
        ({**CLOUD, "graph_base": "ftp://graph"}, "graph_base", "ftp://graph"),
        ({**CLOUD, "phone_number": "1555"}, "accounts[]", "phone_number"),
        ({**CLOUD, "template_on_window_closed": {"language": "de"}}, "template_on_window_closed", "'name'"),
        ({**CLOUD, "send_tries": 0}, "send_tries", "0"),
        ({**CLOUD, "web": {}}, "web", "backend web"),
    ],
)
def test_bad_accounts_name_the_key_and_never_a_secret(account, path, words):
    with pytest.raises(HostConfigInvalid) as caught:
        CloudAccount.from_config(account)
    assert caught.value.path.endswith(path)
    assert words in str(caught.value)
    for secret in (SECRET, "app-secret-value", "verify-token-value"):
        assert secret not in str(caught.value)


def test_a_bad_account_is_refused_by_create_too(channel_host):
    with pytest.raises(HostConfigInvalid, match="unexpanded"):
        WhatsAppChannel().create(channel_host, {**CLOUD, "access_token": "${WHATSAPP_TOKEN}"})


def test_account_repr_hides_the_secrets_and_the_label_names_the_account():
    shown = repr(CloudAccount.from_config(CLOUD))
    assert all(secret not in shown for secret in (SECRET, "app-secret-value", "verify-token-value"))
    assert CloudAccount.from_config(CLOUD).label == "phone number id 106540352242922"
    assert CloudAccount.from_config({**CLOUD, "id": "shop"}).label == "'shop'"


@pytest.mark.parametrize("module", ["ishiki_channel_whatsapp", "ishiki_channel_whatsapp.testing"])
def test_public_names_are_exact(module):
    mod = importlib.import_module(module)  # (ruff's RUF022 keeps __all__ sorted)
    public = {name for name in vars(mod) if not name.startswith("_")} - {"annotations"}
    submodules = {name for name in public if type(getattr(mod, name)).__name__ == "module"}
    assert set(mod.__all__) == public - submodules


def test_a_web_account_goes_to_the_linked_device_backend(channel_host):
    connection = WhatsAppChannel().create(channel_host, {"backend": "web"})
    assert not isinstance(connection, CloudConnection)
    assert connection.platform == "whatsapp"  # (its self_id is known once it is paired)
