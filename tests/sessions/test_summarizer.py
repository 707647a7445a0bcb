"""The summarizer: strict JSON memories with a summary fallback, turn exchanges, a real provider over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ishiki_host.config.models import ModelsConfig
from ishiki_host.core.entries import Entry
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.errors import ModelUnavailable
from ishiki_host.gateway import Gateway
from ishiki_host.gateway.failover import FailoverPolicy
from ishiki_host.sessions.summarizer import (
    CONDENSE_SYSTEM,
    MAX_MEMORY_CHARS,
    Summarizer,
    exchange_entries,
    needs_compaction,
    parse_memory_reply,
    remember_turn,
)
from ishiki_host.sessions.transcript import render_transcript
from ishiki_host.testing import FakeOpenAIServer
from ishiki_host.testing.models import FunctionModel, reply
from ishiki_host.testing.sessions import SessionRig

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("kind", ["fact", "lesson", "reminder", "summary"])
def test_strict_json_gives_the_type(kind: str) -> None:
    assert parse_memory_reply(f'{{"type": "{kind}", "content": "  Ana likes tea. "}}') == (kind, "Ana likes tea.")


@pytest.mark.parametrize(
    "text",
    [
        "Ana likes tea.",
        '```json\n{"type": "fact", "content": "Ana likes tea."}\n```',
        '{"type": "opinion", "content": "Ana likes tea."}',
        '{"type": "fact", "content": "Ana likes tea.", "importance": 3}',
        '{"type": "fact", "type": "lesson", "content": "x"}',
        '{"type": "fact", "content": 42}',
        '{"type": "fact", "content": "   "}',
        '["fact", "Ana likes tea."]',
        '{"type": "fact", "content": "Ana likes tea."} and more',
    ],
)
def test_anything_else_is_stored_whole_as_a_summary(text: str) -> None:
    assert parse_memory_reply(text) == ("summary", text.strip())


def test_blank_and_long_replies() -> None:
    assert parse_memory_reply("  \n ") is None
    kind, content = parse_memory_reply("x" * (MAX_MEMORY_CHARS + 50))  # type: ignore[misc]
    assert (kind, len(content)) == ("summary", MAX_MEMORY_CHARS)


def test_needs_compaction() -> None:
    assert needs_compaction(900, 1000, 0.9)
    assert not needs_compaction(899, 1000, 0.9)
    assert not needs_compaction(10**9, 0, 0.9)
    assert not needs_compaction(10**9, 1000, 0)


def entry(id: int, turn: int | None = None, type: str = "message", **data: Any) -> Entry:
    return Entry(id, type, 0.0, data, turn)


def test_the_exchange_of_a_turn() -> None:
    log = [
        entry(1, role="user", parts=[{"type": "text", "text": "old question"}]),
        entry(2, 1, "event", name="turn.start"),
        entry(3, 1, role="assistant", parts=[{"type": "text", "text": "old answer"}]),
        entry(4, 1, "event", name="turn.done"),
        entry(5, role="user", parts=[{"type": "text", "text": "new question"}]),
        entry(6, 2, "event", name="turn.start"),
        entry(7, 2, role="assistant", parts=[], tool_calls=[{"id": "c", "name": "read", "arguments": {"url": "x"}}]),
        entry(8, 2, role="tool", parts=[{"type": "text", "text": "content"}], tool_call_id="c", tool_name="read"),
        entry(9, role="user", parts=[{"type": "text", "text": "joined meanwhile"}]),
        entry(10, 2, role="assistant", parts=[{"type": "text", "text": "new answer"}]),
        entry(11, 2, "event", name="turn.done"),
        entry(12, role="user", parts=[{"type": "text", "text": "after the turn"}]),
        entry(13, 3, "event", name="turn.start"),
    ]
    assert [e.id for e in exchange_entries(2)(iter(reversed(log)))] == [5, 7, 8, 9, 10]
    assert [e.id for e in exchange_entries(1)(iter(reversed(log)))] == [1, 3]
    assert render_transcript(exchange_entries(2)(iter(reversed(log)))).splitlines() == [
        "[user] new question",
        '[you → read] {"url": "x"}',
        "[read →] content",
        "[user] joined meanwhile",
        "[you] new answer",
    ]


def test_a_transcript_over_budget_keeps_the_seed_and_the_newest_lines() -> None:
    entries = [entry(1, type="session", summary="Earlier: a trip.")]
    entries += [
        entry(i, role="user", parts=[{"type": "text", "text": f"message {i} " + "x" * 40}]) for i in range(2, 40)
    ]
    text = render_transcript(entries, budget_tokens=100)
    lines = text.splitlines()
    assert lines[0] == "[summary of the conversation before] Earlier: a trip."
    assert lines[1] == "(earlier messages left out)"
    assert lines[-1].startswith("[user] message 39")
    assert 2 < len(lines) < 12


async def test_a_successful_turn_becomes_one_memory(tmp_path: Path) -> None:
    condense = FunctionModel(lambda r: reply('{"type": "fact", "content": "Ana drinks jasmine tea."}'))
    async with SessionRig(tmp_path) as rig:
        outcome = await rig.say("I only drink jasmine tea", sender="telegram:5", trust="trusted")
        remembered = await remember_turn(
            Summarizer(condense), rig.store, rig.rt.log, outcome, trust="trusted", profile="test",
            runtime_key=str(rig.rt.key), session_id=rig.sessions.session_id,
        )  # fmt: skip
        assert remembered is not None
        memory = remembered.memory
        assert (memory.type, memory.content, memory.min_trust) == ("fact", "Ana drinks jasmine tea.", "trusted")
        assert memory.session_id == rig.sessions.session_id
        request: ModelRequest = condense.requests[0]
        assert request.priority == "background"
        assert request.messages[0].text == CONDENSE_SYSTEM
        assert request.messages[1].text == "<exchange>\n[telegram:5] I only drink jasmine tea\n[you] ok\n</exchange>"


async def test_prose_is_stored_as_a_summary_readable_at_the_turn_level(tmp_path: Path) -> None:
    condense = FunctionModel(lambda r: reply("Someone said hello."))
    async with SessionRig(tmp_path) as rig:
        outcome = await rig.say("hello", sender="telegram:9", trust="untrusted")
        remembered = await remember_turn(
            Summarizer(condense), rig.store, rig.rt.log, outcome, trust="untrusted", profile="test",
            runtime_key="k", session_id=None,
        )  # fmt: skip
        assert remembered is not None
        memory = remembered.memory
        assert (memory.type, memory.min_trust) == ("summary", "untrusted")


async def test_a_failed_turn_adds_no_memory(tmp_path: Path) -> None:
    def down(request: ModelRequest) -> ModelResult:
        raise ModelUnavailable("gone")

    condense = FunctionModel(lambda r: reply('{"type": "fact", "content": "x"}'))
    async with SessionRig(tmp_path, persona=FunctionModel(down)) as rig:
        outcome = await rig.say("hello")
        assert outcome.status == "failed"
        memory = await remember_turn(
            Summarizer(condense), rig.store, rig.rt.log, outcome, trust="owner", profile="test", runtime_key="k",
            session_id=None,
        )  # fmt: skip
        assert memory is None
        assert condense.requests == []
        assert await rig.store.memories.count("test") == 0


async def test_a_failed_summary_call_adds_no_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def down(request: ModelRequest) -> ModelResult:
        raise ModelUnavailable("summarizer down")

    async with SessionRig(tmp_path) as rig:
        outcome = await rig.say("hello")
        memory = await remember_turn(
            Summarizer(FunctionModel(down)), rig.store, rig.rt.log, outcome, trust="owner", profile="test",
            runtime_key="k", session_id=None,
        )  # fmt: skip
        assert memory is None
        assert "summarizer down" in caplog.text


async def test_the_summarizer_over_a_real_provider(
    tmp_path: Path, fake_openai: FakeOpenAIServer, model_apis: Any, fake_clock: Any
) -> None:
    config = ModelsConfig(providers={"fake": fake_openai.provider("fake", ["small"])})
    fake_openai.reply('{"type": "lesson", "content": "Answer Ana in French."}')
    fake_openai.server_error(503)
    fake_openai.reply("Ana and the bot spoke French about tea.")
    async with Gateway(config, model_apis, clock=fake_clock) as gateway, SessionRig(tmp_path) as rig:
        summarizer = Summarizer(gateway.model("fake:small", failover=FailoverPolicy(attempts=1)))
        outcome = await rig.say("Réponds-moi en français, s'il te plaît")
        kwargs: dict[str, Any] = {"trust": "owner", "profile": "test", "runtime_key": "k", "session_id": None}
        remembered = await remember_turn(summarizer, rig.store, rig.rt.log, outcome, **kwargs)
        assert remembered is not None
        memory = remembered.memory
        assert (memory.type, memory.content) == ("lesson", "Answer Ana in French.")
        body = fake_openai.requests[0].json
        assert body["messages"][0] == {"role": "system", "content": CONDENSE_SYSTEM}
        assert "[console:local] Réponds-moi en français" in body["messages"][1]["content"]
        assert body["max_tokens"] == 300

        assert await remember_turn(summarizer, rig.store, rig.rt.log, outcome, **kwargs) is None  # the 503

        rig.sessions.summarizer = summarizer
        change = await rig.sessions.compact()
        assert change.status == "compacted"
        assert change.summary == "Ana and the bot spoke French about tea."
