"""The window: only what came after the story, capped; a catch-up update folds a pile of messages first."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from ishiki_host import Entry, Message, ModelRequest, ModelResult
from ishiki_host.testing import FunctionModel, reply, tool_call

from ishiki_engine_narrative import ENTRY_TYPE, UPDATE_KIND
from ishiki_engine_narrative.window import latest_narrative, project_window, scan_window

pytestmark = pytest.mark.anyio

Records = Callable[[list[Entry], str], list[Entry]]


def story(situation: str) -> str:
    return json.dumps({"present": ["Ana", "Bo"], "situation": situation, "threads": [], "intent": "listen"})


class Roles:
    """An in-process model answering each role: the Narrator's intents come from ``intents``, in order."""

    def __init__(
        self, which_role: Callable[[ModelRequest], str], update: Callable[[int], ModelResult], intents: list[str]
    ):
        self.which_role = which_role
        self.update = update
        self.intents = intents
        self.calls: list[tuple[str, ModelRequest]] = []
        self.model = FunctionModel(self.answer)

    def answer(self, request: ModelRequest) -> ModelResult:
        role = self.which_role(request)
        self.calls.append((role, request))
        if role == "narrator":
            return reply(json.dumps({"intent": self.intents.pop(0), "rationale": "keep it short"}))
        if role == "decoder":
            return reply("", tool_call("lookup", {"query": "gossip"}))
        if role == "replyer":
            return reply("Interesting!")
        return self.update(sum(1 for r, _ in self.calls if r == "update"))

    def prompts(self, role: str) -> list[str]:
        return [request.messages[-1].text for r, request in self.calls if r == role]


async def chatter(rt: Any, count: int) -> None:
    """Group messages that start no turn (the wakeup engine only records them)."""
    for number in range(1, count + 1):
        source = {"platform": "test", "user": {"id": str(40 + number % 2), "name": ["Ana", "Bo"][number % 2]}}
        await rt.agent.send({**Message.user(f"chatter {number}").to_dict(), "source": source})


async def test_a_pile_of_messages_is_folded_before_the_turn_sees_it(
    make_runtime: Any, chat: Any, run_turn: Any, which_role: Any
) -> None:
    roles = Roles(which_role, lambda n: reply(story(f"update {n}")), ["reply"])
    async with make_runtime(roles.model, chat, context={"max_messages": 4, "recent_messages": 0}) as rt:
        await chatter(rt, 7)
        outcome = await run_turn(rt, "Kiri, what do you think?")
        entries = list(rt.log.iter_forward())
    assert outcome.reason == "sent"
    assert [role for role, _ in roles.calls] == ["update", "narrator", "replyer", "update"]
    catch_up, after_turn = (request for role, request in roles.calls if role == "update")
    folded = roles.prompts("update")[0]
    assert "USER: Bo (41): chatter 1" in folded
    assert "USER: Ana (40): chatter 6" in folded
    assert "chatter 7" not in folded
    assert catch_up.priority == "interactive"  # the turn waits for it
    assert after_turn.priority == "background"
    events = roles.prompts("narrator")[0].split("## Recent events (oldest first)\n")[1]
    assert "chatter 6" not in events
    assert "USER: Bo (41): chatter 7" in events
    assert "USER: Kiri, what do you think?" in events
    assert "What is going on: update 1" in roles.prompts("narrator")[0]
    stories = [e for e in entries if e.type == ENTRY_TYPE]
    assert [(s.data["reason"], s.data["folded"]) for s in stories] == [("catchup", 6), ("turn", 4)]


async def test_when_the_catch_up_fails_the_window_is_still_capped(
    make_runtime: Any, chat: Any, run_turn: Any, which_role: Any, records: Records
) -> None:
    roles = Roles(which_role, lambda n: reply("not a story"), ["act", "reply"])
    async with make_runtime(roles.model, chat, context={"max_messages": 4, "recent_messages": 0}) as rt:
        await chatter(rt, 7)
        await run_turn(rt, "Kiri?")
        entries = list(rt.log.iter_forward())
    # one catch-up attempt per turn, then the update after the turn: both failed, both recorded
    calls = ["update", "narrator", "decoder", "narrator", "replyer", "update"]
    assert [role for role, _ in roles.calls] == calls
    assert [e.data["reason"] for e in records(entries, UPDATE_KIND)] == ["catchup", "turn"]
    first, second = roles.prompts("narrator")
    assert first.split("## Recent events (oldest first)\n")[1].count("USER: ") == 4
    assert "chatter 5" in first
    assert "chatter 4" not in first
    assert "chatter 6" not in second  # the turn's own messages push older ones out
    assert "chatter 7" in second
    assert "RESULT of lookup" in second
    assert not [e for e in entries if e.type == ENTRY_TYPE]


def entry(id: int, type: str = "message", turn: int | None = None, **data: Any) -> Entry:
    if type == "message" and "role" not in data:
        data = {**Message.user(f"m{id}").to_dict(), **data}
    return Entry(id, type, float(id), data, turn)


def scan(entries: list[Entry], recent: int = 0, limit: int = 100) -> Any:
    return scan_window(reversed(entries), recent=recent, limit=limit)


def ids(entries: Any) -> list[int]:
    return [e.id for e in entries]


def test_the_window_starts_after_the_narrative_upto() -> None:
    log = [entry(1), entry(2), entry(3), entry(4, ENTRY_TYPE, upto=2), entry(5)]
    found = scan(log)
    assert found.narrative.id == 4
    assert ids(found.window) == [3, 5]  # 3 came in while the update ran: it is not covered
    assert ids(scan(log, recent=1).window) == [2, 3, 5]


def test_a_session_boundary_ends_the_story() -> None:
    log = [entry(1), entry(2, ENTRY_TYPE, upto=1), entry(3), entry(4, "session", reason="clear"), entry(5)]
    found = scan(log, recent=3)
    assert found.narrative is None
    assert ids(found.window) == [4, 5]
    assert latest_narrative(reversed(log)) is None
    assert latest_narrative(reversed(log[:3])).id == 2


def test_a_newer_compaction_stands_for_what_it_covers() -> None:
    log = [entry(1), entry(2, ENTRY_TYPE, upto=1), entry(3), entry(4), entry(5, "compact", upto=3), entry(6)]
    found = scan(log, recent=2)
    assert found.narrative.id == 2
    assert found.opening.id == 5
    assert ids(found.window) == [5, 4, 6]


def test_only_the_newest_messages_up_to_the_limit_are_kept() -> None:
    log = [entry(i) for i in range(1, 11)]
    found = scan(log, limit=4)
    assert ids(found.after) == [7, 8, 9, 10]
    assert found.skipped == 6


def test_projection_names_senders_and_drops_empty_steps() -> None:
    source = {"platform": "tg", "user": {"id": "42", "name": "Ana"}}
    log = [
        entry(1, **Message.user("hi").to_dict(), source=source),
        entry(2, **Message.user("Continue.").to_dict(), wake=True),
        entry(3, **Message.assistant("").to_dict()),
        entry(4, "custom", kind="narrative.role"),
        entry(5, **Message.assistant("hello").to_dict()),
    ]
    assert [(m.role, m.text) for m in project_window(log)] == [
        ("user", "Ana (42): hi"),
        ("user", "(wake-up) Continue."),
        ("assistant", "hello"),
    ]


def test_the_update_after_a_turn_stops_at_its_end_and_before_what_it_never_saw() -> None:
    from ishiki_host import TurnOutcome

    from ishiki_engine_narrative.context import _turn_part

    after = [entry(1), entry(2, "event", turn=3), entry(3, turn=3), entry(4), entry(5, "event", turn=3), entry(6)]
    assert ids(_turn_part(after, TurnOutcome(3, "done", "sent"))) == [1, 2, 3, 4, 5]
    assert ids(_turn_part(after, TurnOutcome(3, "done", "sent", unseen=(after[3],)))) == [1, 2, 3]
    assert _turn_part(after, TurnOutcome(9, "done", "sent")) == []


class WithoutSpawn:
    """A runtime context that offers no ``spawn`` (everything else is the harness's context)."""

    def __init__(self, rt: Any):
        self._rt = rt.context

    def __getattr__(self, name: str) -> Any:
        if name == "spawn":
            raise AttributeError(name)
        return getattr(self._rt, name)


async def test_without_spawn_the_update_runs_at_the_end_of_the_turn(
    make_runtime: Any, chat: Any, which_role: Any
) -> None:
    roles = Roles(which_role, lambda n: reply(story("inline")), ["reply"])
    async with make_runtime(roles.model, chat, context_ctx=WithoutSpawn) as rt:
        await rt.say("hi")  # no settle: the update is part of the turn's end
        stories = [e for e in rt.log.iter_forward() if e.type == ENTRY_TYPE]
    assert [s.data["situation"] for s in stories] == ["inline"]
