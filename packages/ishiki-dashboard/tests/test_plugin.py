"""The plugin itself: its entry point and config, the exposure check, and the generated token."""

from __future__ import annotations

import logging

import pytest
from ishiki_host.errors import ConfigError, HostPluginError
from ishiki_host.testing import discover, plugin_config

from ishiki_dashboard import DashboardPlugin
from ishiki_dashboard.html import esc, mask, masked
from ishiki_dashboard.plugin import check_exposure, is_loopback


def test_the_entry_point_is_installed() -> None:
    record = discover().record("ishiki.host.dashboard")
    assert record is not None, "not installed: run `pip install -e packages/ishiki-dashboard`"
    assert record.status == "ok", record.error
    assert record.plugin is DashboardPlugin


def test_the_config_has_defaults_and_refuses_unknown_keys() -> None:
    assert plugin_config(DashboardPlugin) == {
        "user": "admin",
        "session_hours": 12,
        "login_attempts_per_minute": 5,
        "log_lines": 500,
    }
    with pytest.raises(ConfigError, match="toke"):
        plugin_config(DashboardPlugin, {"toke": "x"})


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080/dashboard", True),
        ("http://127.5.0.1:8080/dashboard", True),
        ("http://[::1]:8080/dashboard", True),
        ("http://localhost:8080/dashboard", True),
        ("http://0.0.0.0:8080/dashboard", False),
        ("http://[::]:8080/dashboard", False),
        ("http://192.168.1.5:8080/dashboard", False),
        ("127.0.0.1:8080", True),
        ("[::1]:0", True),
        ("0.0.0.0:0", False),
        ("[::]:8080", False),
    ],
)
def test_loopback_addresses(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


def test_beyond_the_loopback_a_token_is_required() -> None:
    check_exposure("127.0.0.1:8080", None)
    check_exposure("0.0.0.0:8080", "a-token")
    with pytest.raises(HostPluginError, match=r"0\.0\.0\.0:8080.*plugins\.dashboard\.token") as refused:
        check_exposure("0.0.0.0:8080", None)
    assert refused.value.fatal


def test_masking() -> None:
    assert mask("sk-0123456789abcd") == "••••abcd"
    assert mask("short") == "••••"
    shown = masked({"apiKey": "sk-0123456789abcd", "nested": [{"api_key": "x" * 20, "token": "t" * 3}], "ok": 1})
    assert shown == {"apiKey": "••••abcd", "nested": [{"api_key": "••••xxxx", "token": "••••"}], "ok": 1}
    assert masked({"Authorization": "Bearer abcdefghijklmnop", "password": "hunter2"}) == {
        "Authorization": "••••mnop",
        "password": "••••",
    }


def test_escaping() -> None:
    assert esc('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    assert esc(None) == ""


@pytest.mark.anyio
async def test_listening_on_every_address_without_a_token_fails_the_plugin(make_dash) -> None:
    async with make_dash(token=None, listen="0.0.0.0:0") as dash:
        status = dash.plugin_status()
    assert status["state"] == "failed"
    assert "plugins.dashboard.token" in status["error"]


@pytest.mark.anyio
async def test_a_generated_token_is_told_once_and_works(make_dash, capsys, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="ishiki_host.hostplugin.dashboard")
    async with make_dash(token=None) as dash:
        err = capsys.readouterr().err
        told = [line for line in err.splitlines() if " with token " in line]
        assert len(told) == 1
        token = told[0].rsplit(" ", 1)[1]
        assert told[0] == f"dashboard: log in at {dash.base_url}/login with token {token}"
        logged = [r for r in caplog.records if "dashboard: log in at" in r.getMessage()]
        assert len(logged) == 1
        assert logged[0].levelno == logging.WARNING
        assert token not in logged[0].getMessage()  # logs are shipped and kept: the token is on stderr only
        async with dash.anonymous() as client:
            answer = await client.post("/login", data={"token": token})
        assert answer.status_code == 303
        async with dash.anonymous(headers={"Authorization": f"Bearer {token}"}) as client:
            logs = await client.get("/api/logs")
        assert logs.status_code == 200
        assert token not in logs.text
