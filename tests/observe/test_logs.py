"""The answered-message line (text and fields) and ``log_format``: the JSON formatter and a bad format name."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import anyio
import pytest

from ishiki_host.config.host import load_host_config
from ishiki_host.observe import ANSWERS_LOGGER, JsonFormatter
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


async def test_an_answered_message_is_one_info_line_with_its_fields(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.push(Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["hello!"]}),), usage=(1234, 56)))
    caplog.set_level(logging.INFO, logger=ANSWERS_LOGGER)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        delivery = await th.channel().say("hi", channel_id="private:42")
        with anyio.fail_after(10):
            await delivery.settled()
    lines = [r for r in caplog.records if r.name == ANSWERS_LOGGER]
    assert [r.levelname for r in lines] == ["INFO"]
    assert lines[0].getMessage() == (
        "ana answered 1 message in fake:bot private:42 in 0.00 s (turn 0.00 s): 1,234 tokens in, 56 out "
        "(fake:fake-model); tools: send_message"
    )
    fields = {k: getattr(lines[0], k) for k in ("profile", "runtime", "channel", "chat", "messages", "tools", "sent")}
    assert fields == {
        "profile": "ana",
        "runtime": "ana/fake:bot/private:42",
        "channel": "fake:bot",
        "chat": "private:42",
        "messages": 1,
        "tools": ["send_message"],
        "sent": 1,
    }
    assert (lines[0].input_tokens, lines[0].output_tokens, lines[0].model) == (1234, 56, "fake:fake-model")


async def test_a_failed_turn_logs_no_answered_line(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.error(401, "bad key", type="invalid_api_key")
    caplog.set_level(logging.INFO, logger=ANSWERS_LOGGER)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        delivery = await th.channel().say("hi")
        with anyio.fail_after(10):
            await delivery.settled()
    assert [r for r in caplog.records if r.name == ANSWERS_LOGGER] == []


def test_a_json_line_holds_time_level_logger_message_and_the_fields() -> None:
    record = logging.LogRecord("ishiki_host.answers", logging.INFO, __file__, 1, "ana answered %d", (1,), None)
    record.__dict__.update({"profile": "ana", "tools": ["send_message"], "where": Path("/x"), "level": "shadowed"})
    line = json.loads(JsonFormatter().format(record))
    assert line.pop("time").count("T") == 1
    assert line == {
        "level": "INFO",
        "logger": "ishiki_host.answers",
        "message": "ana answered 1",
        "profile": "ana",
        "tools": ["send_message"],
        "where": "/x",  # what JSON cannot hold is written as its str()
    }


def test_a_json_line_carries_the_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("x").makeRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed"
    assert "ValueError: boom" in line["exception"]
    assert "\n" not in JsonFormatter().format(record)


@pytest.mark.parametrize(("written", "expected"), [("json", "json"), ("text", "text"), (None, "text")])
def test_log_format_is_read_from_ishiki_yaml(tmp_path: Path, written: str | None, expected: str) -> None:
    (tmp_path / "ishiki.yaml").write_text(f"log_format: {written}\n" if written else "log_level: info\n")
    config, errors = load_host_config(tmp_path)
    assert (config.log_format, errors) == (expected, [])


def test_an_unknown_log_format_names_the_key_line_and_choices(tmp_path: Path) -> None:
    (tmp_path / "ishiki.yaml").write_text("log_level: info\nlog_format: xml\n")
    config, errors = load_host_config(tmp_path)
    assert [(e.path, e.line) for e in errors] == [("log_format", 2)]
    assert "'text'" in errors[0].message
    assert "'json'" in errors[0].message
    assert config.log_format == "text"
