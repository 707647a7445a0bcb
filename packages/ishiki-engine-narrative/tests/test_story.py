"""The strict readers: the Narrator's decision and the story an update answers."""

from __future__ import annotations

import json

import pytest
from ishiki_host import Entry

from ishiki_engine_narrative import Decision, Narrative, RoleOutputInvalid, parse_decision, parse_narrative
from ishiki_engine_narrative.story import LIMITS

GOOD_STORY = {"present": ["Ana"], "situation": "Ana asks about hours.", "threads": ["hours"], "intent": "answer"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"intent": "act", "rationale": "look it up"}', Decision("act", "look it up")),
        ('  {"rationale": "say hi", "intent": "reply"}\n', Decision("reply", "say hi")),
        ('```json\n{"intent": "wait", "rationale": "let them talk"}\n```', Decision("wait", "let them talk")),
        ('<think>hmm</think>{"intent": "finish", "rationale": "done\\n  here"}', Decision("finish", "done here")),
    ],
)
def test_a_decision_is_read(text: str, expected: Decision) -> None:
    assert parse_decision(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("reply", "did not answer with one JSON object"),
        ('Sure! {"intent": "reply", "rationale": "x"}', "did not answer with one JSON object"),
        ('{"intent": "reply", "rationale": "x"} {"intent": "act"}', "did not answer with one JSON object"),
        ('["reply"]', "JSON that is not an object"),
        ('{"intent": "reply", "intent": "act", "rationale": "x"}', "duplicate keys ['intent']"),
        ('{"intent": "reply"}', "missing keys ['rationale']"),
        ('{"intent": "reply", "rationale": "x", "mood": "happy"}', "extra keys ['mood']"),
        ('{"intent": "shout", "rationale": "x"}', "chose intent 'shout'; expected one of act, reply, wait, finish"),
        ('{"intent": "reply", "rationale": "  "}', '"rationale" must be a non-empty string'),
        ('{"intent": "reply", "rationale": NaN}', "NaN is not a JSON number"),
    ],
)
def test_anything_else_is_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(RoleOutputInvalid, match="Narrator") as caught:
        parse_decision(text)
    assert message in str(caught.value)


def test_a_long_rationale_is_clipped() -> None:
    decision = parse_decision(json.dumps({"intent": "reply", "rationale": "x" * 1000}))
    assert len(decision.rationale) == LIMITS["rationale"]
    assert decision.rationale.endswith("…")


def test_a_story_is_read_and_rendered() -> None:
    narrative, clipped = parse_narrative(json.dumps(GOOD_STORY))
    assert (narrative, clipped) == (Narrative(("Ana",), "Ana asks about hours.", ("hours",), "answer"), False)
    assert narrative.render() == (
        "Present: Ana\nWhat is going on: Ana asks about hours.\nOpen threads:\n- hours\n"
        "The persona's current intent: answer"
    )
    assert Narrative().render().startswith("Present: (nobody known)\nWhat is going on: (nothing yet)")


def test_a_story_is_bounded() -> None:
    big = {
        "present": [f"person {i}" for i in range(40)],
        "situation": "s" * 5000,
        "threads": ["t" * 400, "", *[f"thread {i}" for i in range(20)]],
        "intent": "i",
    }
    narrative, clipped = parse_narrative(json.dumps(big))
    assert clipped
    assert len(narrative.present) == LIMITS["present"]
    assert len(narrative.threads) == LIMITS["threads"]
    assert len(narrative.threads[0]) == LIMITS["item"]
    assert len(narrative.situation) == LIMITS["situation"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mood": "calm"}, "unknown keys ['mood']"),
        ({"present": "Ana"}, '"present" must be a list of strings'),
        ({"threads": [1]}, '"threads" must be a list of strings'),
        ({"situation": None}, '"situation" must be a string, not NoneType'),
    ],
)
def test_a_story_of_another_shape_is_refused(change: dict[str, object], message: str) -> None:
    with pytest.raises(RoleOutputInvalid, match="narrative update") as caught:
        parse_narrative(json.dumps({**GOOD_STORY, **change}))
    assert message in str(caught.value)


def test_a_malformed_stored_story_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    assert Narrative.from_entry(Entry(7, "narrative", 0.0, {"upto": 3, **GOOD_STORY})) == Narrative(
        ("Ana",), "Ana asks about hours.", ("hours",), "answer"
    )
    assert Narrative.from_entry(Entry(8, "narrative", 0.0, {"upto": 3, "present": "Ana"})) is None
    assert "narrative entry 8 lacks" in caplog.text
