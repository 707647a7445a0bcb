"""``ishiki.yaml``: defaults, validation, time zones, the event loop, channel accounts checked by the channel's
schema."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ishiki_host.config.host import (
    AttachmentSettings,
    HeartbeatSettings,
    HostConfig,
    SchedulerSettings,
    load_host_config,
)
from ishiki_host.plugins.discovery import PluginRegistry


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "ishiki.yaml").write_text(text, encoding="utf-8")
    return tmp_path


def test_absent_file_gives_the_defaults(tmp_path: Path) -> None:
    host, errors = load_host_config(tmp_path, {})
    assert errors == []
    assert host == HostConfig(data_dir=tmp_path / "data")
    assert host.memory == {"limit": 20, "scope": "sender"}


def test_schema_defaults_equal_dataclass_defaults(tmp_path: Path) -> None:
    host, _ = load_host_config(write(tmp_path, "{}\n"), {})
    assert host == HostConfig(data_dir=tmp_path / "data", file=str(tmp_path / "ishiki.yaml"))


def test_values_are_read(tmp_path: Path) -> None:
    text = """\
data_dir: ${DATA:-state}
log_level: debug
timezone: Europe/Paris
runtime_idle_seconds: 60
fsync: always
event_loop: asyncio
scheduler: {interactive_grace_seconds: 0.5}
memory: {limit: 5, extra_for_memory_extension: true}
heartbeat: {catch_up_seconds: 10}
"""
    host, errors = load_host_config(write(tmp_path, text), {})
    assert errors == []
    assert host.data_dir == tmp_path / "state"
    assert (host.log_level, host.timezone, host.runtime_idle_seconds, host.fsync) == (
        "debug",
        "Europe/Paris",
        60.0,
        "always",
    )
    assert host.event_loop == "asyncio"
    assert host.scheduler == SchedulerSettings(0.5)
    assert host.memory == {"limit": 5, "scope": "sender", "extra_for_memory_extension": True}
    assert host.heartbeat == HeartbeatSettings(10.0)


def test_errors_name_key_and_line_and_fall_back_to_defaults(tmp_path: Path) -> None:
    text = "log_level: verbose\nfsync: allways\ntimezone: Mars/Olympus\nruntime_idle_seconds: -1\ndata_dri: x\n"
    host, errors = load_host_config(write(tmp_path, text), {})
    assert [(e.line, e.path, e.message) for e in errors] == [
        (1, "log_level", "must be one of 'debug', 'info', 'warning', 'error', 'critical'; got 'verbose'"),
        (2, "fsync", "must be one of 'always', 'turn', 'never'; got 'allways'; did you mean 'always'?"),
        (3, "timezone", "unknown time zone 'Mars/Olympus' (an IANA name such as 'Europe/Paris' or 'UTC')"),
        (4, "runtime_idle_seconds", "must be > 0; got -1"),
        (5, "data_dri", "unknown key 'data_dri'; did you mean 'data_dir'?"),
    ]
    assert (host.log_level, host.fsync, host.timezone) == ("info", "turn", "UTC")


def test_an_event_loop_that_is_not_installed_or_unknown_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as on a machine without uvloop: it cannot be imported
    host, errors = load_host_config(write(tmp_path, "log_level: debug\nevent_loop: uvloop\n"), {})
    assert [(e.line, e.path) for e in errors] == [(2, "event_loop")]
    assert "uvloop is not installed" in errors[0].message
    assert host.event_loop == "auto"  # which then takes asyncio's loop
    host, errors = load_host_config(write(tmp_path, "event_loop: fast\n"), {})
    assert [(e.line, e.path, e.message) for e in errors] == [
        (1, "event_loop", "must be one of 'auto', 'uvloop', 'asyncio'; got 'fast'"),
    ]


@pytest.mark.parametrize(
    ("written", "retention"),
    [("", "30d"), ("attachments: {retention: 12h}\n", "12h"), ("attachments: {retention: ' 7 d'}\n", "7 d"),
     ("attachments: {retention: '3600'}\n", "3600"), ("attachments: {retention: off}\n", None)],
)  # fmt: skip
def test_attachment_retention_defaults_to_30_days_and_off_keeps_them(
    tmp_path: Path, written: str, retention: str | None
) -> None:
    host, errors = load_host_config(write(tmp_path, written or "{}\n"), {})
    assert errors == []
    assert host.attachments == AttachmentSettings(retention)


@pytest.mark.parametrize("bad", ["0", "0d", "soon", "5 years", "-1h"])
def test_an_attachment_retention_that_is_not_a_positive_age_is_an_error(tmp_path: Path, bad: str) -> None:
    host, errors = load_host_config(write(tmp_path, f"attachments: {{retention: '{bad}'}}\n"), {})
    assert [(e.line, e.path) for e in errors] == [(1, "attachments.retention")]
    assert host.attachments == AttachmentSettings("30d")  # the default, as for every invalid value


def test_malformed_file_is_one_error(tmp_path: Path) -> None:
    host, errors = load_host_config(write(tmp_path, "a: [\n"), {})
    assert len(errors) == 1
    assert "invalid YAML" in errors[0].message
    assert host.fsync == "turn"


def test_channel_accounts_are_checked_by_the_channel(tmp_path: Path, plugin_registry: PluginRegistry) -> None:
    text = """\
channels:
  testchat:
    accounts:
      - token: ${CHAT_TOKEN}
      - mentionRequired: false
  testchta:
    accounts: []
  notinstalled:
    accounts: [{anything: 1}]
"""
    host, errors = load_host_config(write(tmp_path, text), {"CHAT_TOKEN": "t0k"}, catalog=plugin_registry)
    assert [(e.path, e.message) for e in errors] == [
        ("channels.testchat.accounts[1]", "missing required key 'token'"),
        ("channels.testchta", "no channel 'testchta' is installed; did you mean 'testchat'?"),
    ]
    assert host.channels["testchat"][0] == {"token": "t0k", "mentionRequired": True}
    assert host.channels["notinstalled"] == ({"anything": 1},)


def test_secrets_are_not_repeated_in_errors(tmp_path: Path, plugin_registry: PluginRegistry) -> None:
    text = "channels:\n  testchat:\n    accounts:\n      - token: 12345\n"
    _, errors = load_host_config(write(tmp_path, text), {}, catalog=plugin_registry)
    assert [(e.path, e.message) for e in errors] == [
        ("channels.testchat.accounts[0].token", "expected a string, got integer")
    ]


def test_an_account_with_an_unset_variable_is_listed_invalid_and_keeps_its_index(
    tmp_path: Path, plugin_registry: PluginRegistry
) -> None:
    text = """\
channels:
  testchat:
    accounts:
      - token: ${CHAT_TOKEN_ONE}
      - token: ${CHAT_TOKEN_TWO}
      - token: fine
"""
    host, errors = load_host_config(write(tmp_path, text), {"CHAT_TOKEN_TWO": "t2"}, catalog=plugin_registry)
    assert len(host.channels["testchat"]) == 3  # indices (and state directories) stay what the file says
    assert list(host.invalid_accounts) == [("testchat", 0)]
    (problem,) = host.invalid_accounts[("testchat", 0)]
    assert problem in errors
    assert (problem.file, problem.line, problem.path) == (
        str(tmp_path / "ishiki.yaml"),
        4,
        "channels.testchat.accounts[0].token",
    )
    assert "environment variable CHAT_TOKEN_ONE is not set" in problem.message
