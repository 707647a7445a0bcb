"""Compact-and-retry after a context_length failure, the safety valve, and the summarizer modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_host.core.entries import Entry
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tokens import estimate_messages_tokens
from ishiki_host.core.window import SUMMARY_HEADER
from ishiki_host.errors import ContextLengthExceeded
from ishiki_host.memory.overflow import (
    OVERFLOW_FAILED_NOTICE,
    RETRY_NOTICE,
    OverflowRecovery,
    SessionPolicy,
    unanswered_from,
)
from ishiki_host.sessions.threshold import AUTO_COMPACT_NOTICE, compact_if_needed
from ishiki_host.testing.models import FunctionModel, reply
from ishiki_host.testing.sessions import SessionRig

pytestmark = pytest.mark.anyio

LIMIT = 600  # tokens the persona's model accepts
SUMMARY = "They talked about mountains; Ana asked for a packing list."


class Persona:
    """Answers the last user message, or fails like a provider when the request is over ``LIMIT``."""

    def __init__(self, limit: int = LIMIT):
        self.limit = limit

    def __call__(self, request: ModelRequest) -> ModelResult:
        size = estimate_messages_tokens(request.messages)
        if size > self.limit:
            raise ContextLengthExceeded(f"prompt is {size} tokens; the model takes {self.limit}", model="test")
        last = next(m.text for m in reversed(request.messages) if m.role == "user")
        return reply(f"answered: {last[:40]}")


def paragraph(topic: str) -> str:
    return f"{topic}: " + "the trail climbs through pine forest and over a ridge. " * 8


class Notices:
    def __init__(self) -> None:
        self.lines: list[str] = []

    async def __call__(self, text: str) -> None:
        self.lines.append(text)


async def test_an_overflowing_turn_is_compacted_and_retried_once(tmp_path: Path) -> None:
    budget = Persona()
    persona = FunctionModel(budget)
    summarizer = FunctionModel(lambda request: reply(SUMMARY))
    async with SessionRig(tmp_path, persona=persona, summarizer=summarizer) as rig:
        for topic in ("north", "south", "east"):
            assert (await rig.say(paragraph(topic))).status == "done"
        budget.limit = estimate_messages_tokens(persona.requests[-1].messages) + 5  # the next request is over
        failed = await rig.say("What should Ana pack for the hike?")
        assert failed.kind == "context_length"
        question = next(e for e in reversed(list(rig.rt.log.iter_forward())) if e.data.get("role") == "user")

        notices = Notices()
        recovery = OverflowRecovery(rig.sessions, rig.rt.agent, notices)
        handle = await recovery.handle(failed)
        assert handle is not None
        assert recovery.is_retry(handle.number)
        retried = await handle
        assert retried.status == "done"
        assert notices.lines == [RETRY_NOTICE]

        request = persona.requests[-1]
        texts = [m.text for m in request.messages]
        assert texts[1] == f"{SUMMARY_HEADER}\n{SUMMARY}"
        assert texts.count("What should Ana pack for the hike?") == 1
        assert retried.result is not None
        assert retried.result.text == "answered: What should Ana pack for the hike?"
        boundary = next(e for e in rig.rt.log.iter_forward() if e.type == "session")
        assert (boundary.data["reason"], boundary.data["upto"]) == ("overflow", question.id - 1)
        copy = next(e for e in rig.rt.log.iter_forward() if e.data.get("carried") == question.id)
        assert copy.id > boundary.id
        assert copy.data["source"] == question.data["source"]

        assert await recovery.handle(retried) is None  # a successful retry ends the matter
        assert not recovery.is_retry(handle.number)


async def test_a_second_overflow_surfaces_the_error(tmp_path: Path) -> None:
    budget = Persona()
    persona = FunctionModel(budget)
    async with SessionRig(tmp_path, persona=persona, summarizer=FunctionModel(lambda r: reply(SUMMARY))) as rig:
        await rig.say("hello")
        budget.limit = 0  # from now on nothing fits
        await rig.post("are you there?")
        first = await rig.say("please answer")
        notices = Notices()
        recovery = OverflowRecovery(rig.sessions, rig.rt.agent, notices)
        handle = await recovery.handle(first)
        assert handle is not None
        second = await handle
        assert second.kind == "context_length"
        assert await recovery.handle(second) is None
        assert notices.lines == [RETRY_NOTICE, OVERFLOW_FAILED_NOTICE.format(why=second.error)]
        starts = [e for e in rig.rt.log.iter_forward() if e.name == "turn.start"]
        assert len(starts) == 3
        assert rig.rt.agent.queued == 0


async def test_a_single_message_too_large_cannot_be_helped(tmp_path: Path) -> None:
    persona = FunctionModel(Persona(limit=50))
    async with SessionRig(tmp_path, persona=persona, summarizer=FunctionModel(lambda r: reply(SUMMARY))) as rig:
        failed = await rig.say(paragraph("everything at once"))
        notices = Notices()
        assert await OverflowRecovery(rig.sessions, rig.rt.agent, notices).handle(failed) is None
        assert notices.lines == [OVERFLOW_FAILED_NOTICE.format(why="This session is empty; nothing to compact.")]
        assert not any(e.type == "session" for e in rig.rt.log.iter_forward())


async def test_other_outcomes_are_left_alone(tmp_path: Path) -> None:
    async with SessionRig(tmp_path) as rig:
        done = await rig.say("hi")
        notices = Notices()
        assert await OverflowRecovery(rig.sessions, rig.rt.agent, notices).handle(done) is None
        assert notices.lines == []


async def test_the_safety_valve(tmp_path: Path) -> None:
    async with SessionRig(tmp_path, summarizer=FunctionModel(lambda r: reply(SUMMARY))) as rig:
        await rig.say(paragraph("north"))
        size = await rig.sessions.size()
        notices = Notices()
        below = await compact_if_needed(rig.sessions, context_window=size.tokens * 2, threshold=0.9, notify=notices)
        assert below is None
        assert notices.lines == []
        reached = await compact_if_needed(
            rig.sessions, context_window=int(size.tokens / 0.9), threshold=0.9, notify=notices
        )
        assert reached is not None
        assert reached.status == "compacted"
        assert notices.lines == [AUTO_COMPACT_NOTICE]
        assert (await rig.sessions.size()).tokens < size.tokens


async def test_a_failed_valve_says_so(tmp_path: Path) -> None:
    async with SessionRig(tmp_path, summarizer=FunctionModel(lambda r: reply(""))) as rig:
        await rig.say("hello")
        notices = Notices()
        change = await compact_if_needed(rig.sessions, context_window=1, threshold=0.5, notify=notices)
        assert change is not None
        assert change.status == "failed"
        assert notices.lines[0].startswith("(The conversation is getting long, but summarizing it failed:")


def entry(id: int, type: str = "message", turn: int | None = None, **data: object) -> Entry:
    return Entry(id, type, 0.0, data, turn)


def test_unanswered_from() -> None:
    window = [
        entry(1, role="user"),
        entry(2, "event", 1, name="turn.start"),
        entry(3, role="assistant", turn=1),
        entry(4, "event", 1, name="turn.done"),
        entry(5, role="user"),
        entry(6, role="user"),
        entry(7, "event", 2, name="turn.start"),
        entry(8, role="user", wake=True),
        entry(9, "event", 2, name="turn.failed"),
    ]
    assert unanswered_from(window, 2) == 5
    assert unanswered_from(window[:4] + window[6:], 2) == 7  # nothing inbound: from the turn's start
    assert unanswered_from(window, 3) is None


def test_what_each_mode_does() -> None:
    assert SessionPolicy.for_mode("auto") == SessionPolicy(remember_turns=True, retry_on_overflow=True)
    assert SessionPolicy.for_mode("manual") == SessionPolicy(remember_turns=False, retry_on_overflow=True)
    assert SessionPolicy.for_mode("off") == SessionPolicy(remember_turns=False, retry_on_overflow=False)
    with pytest.raises(ValueError, match="auto, manual or off"):
        SessionPolicy.for_mode("sometimes")


async def test_a_compaction_never_folds_a_message_no_turn_answered(tmp_path: Path) -> None:
    """Issue 20, item 7: a compaction that landed while a message waited folded it into the summary; the
    overflow recovery then found "nothing new", queued no retry, and the message was never answered."""
    budget = Persona()
    persona = FunctionModel(budget)
    summarizer = FunctionModel(lambda request: reply(SUMMARY))
    async with SessionRig(tmp_path, persona=persona, summarizer=summarizer) as rig:
        for topic in ("north", "south"):
            assert (await rig.say(paragraph(topic))).status == "done"
        budget.limit = estimate_messages_tokens(persona.requests[-1].messages) + 5
        failed = await rig.say("What should Ana pack for the hike?")
        assert failed.kind == "context_length"
        await rig.post("And how long is the trail?")  # arrives before anything answered the question
        compacted = await rig.sessions.compact(reason="auto")  # as /compact, or the valve, would
        assert compacted.status == "compacted"
        folded = summarizer.requests[-1].messages[-1].text
        assert "What should Ana pack" not in folded
        assert "how long is the trail" not in folded
        assert [e.data["parts"][0]["text"] for e in compacted.carried if e.data.get("role") == "user"] == [
            "What should Ana pack for the hike?",
            "And how long is the trail?",
        ]
        notices = Notices()
        handle = await OverflowRecovery(rig.sessions, rig.rt.agent, notices).handle(failed)
        assert handle is not None  # nothing new to compact, and still the one retry
        retried = await handle
        assert retried.status == "done"
        assert notices.lines == [RETRY_NOTICE]
        asked = [m.text for m in persona.requests[-1].messages if m.role == "user"]
        assert "What should Ana pack for the hike?" in asked
        assert "And how long is the trail?" in asked


async def test_the_compaction_before_a_turn_is_interactive_and_the_only_one(tmp_path: Path) -> None:
    summarizer = FunctionModel(lambda request: reply(SUMMARY))
    async with SessionRig(tmp_path, summarizer=summarizer) as rig:
        await rig.say(paragraph("north"))
        size = await rig.sessions.size()
        change = await compact_if_needed(rig.sessions, context_window=size.tokens, threshold=0.9, notify=Notices())
        assert change is not None
        assert change.status == "compacted"
    assert [r.priority for r in summarizer.requests] == ["interactive"]
