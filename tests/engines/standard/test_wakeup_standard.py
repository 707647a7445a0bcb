"""The standard wakeup engine: which inbound messages start a turn, on a real runtime context."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.channels.events import Quote, User
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.hooks import AgentHooks, Stop
from ishiki_host.core.messages import Message
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.core.turns import Step
from ishiki_host.engines.wakeup.standard import KeywordMatcher, StandardWakeup, StandardWakeupEngine, wake_rule
from ishiki_host.errors import ConfigError
from ishiki_host.plugins.runtime_api import WakeupEngineInstance
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def engine(
    tmp_path: Path, config: Mapping[str, Any] | None = None, **harness: Any
) -> AsyncIterator[tuple[RuntimeHarness, StandardWakeup]]:
    harness.setdefault("model", FunctionModel(lambda request: reply("ok")))
    with anyio.fail_after(10):
        async with RuntimeHarness(tmp_path, **harness) as rt:
            instance = StandardWakeupEngine().create(rt.context, dict(config or {}))
            dispose = instance.attach(rt.context)
            try:
                yield rt, instance
            finally:
                dispose()


def triggers(rt: RuntimeHarness) -> list[list[dict[str, Any]]]:
    """The triggers of every turn in the log."""
    return [e.data["triggers"] for e in rt.log.iter_forward() if e.name == "turn.start"]


async def deliver(rt: RuntimeHarness, data: dict[str, Any]) -> Entry:
    """Ingest like ``runtime.deliver`` (no trigger, join a running turn), then wait for what the engine started."""
    entry = await (await rt.agent.send(data))
    await rt.agent.wait_idle()
    return entry


def rule_of(starts: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(t["entry"], t["rule"]) for t in starts]


async def test_the_instance_meets_the_protocol(tmp_path: Path) -> None:
    async with engine(tmp_path) as (_, instance):
        assert isinstance(instance, WakeupEngineInstance)


async def test_a_direct_message_starts_a_turn(tmp_path: Path, inbound: Any) -> None:
    async with engine(tmp_path) as (rt, _):
        entry = await deliver(rt, inbound("hi", channel="private:u1"))
        assert triggers(rt) == [[{"by": "continue", "entry": entry.id, "rule": "direct", "reason": "wakeup.standard"}]]


@pytest.mark.parametrize(
    ("kwargs", "rule"),
    [
        ({"mentions": True}, "mention"),
        ({"quote": Quote("m0", "earlier answer", User("bot1", "Bot"), from_self=True)}, "quote"),
    ],
)
async def test_a_mention_or_a_quote_of_the_bot_starts_a_turn(
    tmp_path: Path, inbound: Any, kwargs: dict[str, Any], rule: str
) -> None:
    async with engine(tmp_path) as (rt, _):
        entry = await deliver(rt, inbound("look at this", **kwargs))
        assert [rule_of(t) for t in triggers(rt)] == [[(entry.id, rule)]]


async def test_other_group_messages_are_recorded_without_a_turn(tmp_path: Path, inbound: Any) -> None:
    quote_of_someone = Quote("m0", "what Bob said", User("u2", "Bob"), from_self=False)
    async with engine(tmp_path, {"keywords": ["tea"]}) as (rt, _):
        await deliver(rt, inbound("just chatting"))
        await deliver(rt, inbound("agreed", quote=quote_of_someone, message_id="m2"))
        await deliver(rt, inbound("a teapot and a steady hand", message_id="m3"))
        messages = [e for e in rt.log.iter_forward() if e.type == "message"]
        assert len(messages) == 3
        assert [e.id for e in rt.log.iter_forward() if e.name == "turn.start"] == []


async def test_keywords_start_a_turn_case_insensitively_as_whole_words(tmp_path: Path, inbound: Any) -> None:
    async with engine(tmp_path, {"keywords": ["tea", "Good  Morning", "猫"]}) as (rt, _):
        plain = await deliver(rt, inbound("anyone for tea?"))
        await deliver(rt, inbound("the category is steady", message_id="m2"))
        phrase = await deliver(rt, inbound("GOOD\nmorning all", message_id="m3"))
        cjk = await deliver(rt, inbound("我的猫很可爱", message_id="m4"))
        assert [rule_of(t) for t in triggers(rt)] == [
            [(plain.id, "keyword")],
            [(phrase.id, "keyword")],
            [(cjk.id, "keyword")],
        ]


def test_the_keyword_matcher_draws_word_edges_only_in_spaced_scripts() -> None:
    matcher = KeywordMatcher(["cat", "tea time", "猫", "c++"])
    assert matcher.search("a cat!")
    assert matcher.search("CAT?")
    assert matcher.search("(cat)")
    assert not matcher.search("category")
    assert not matcher.search("bobcat")
    assert not matcher.search("cat_1")
    assert matcher.search("it's TEA   time")
    assert not matcher.search("teatime")
    assert matcher.search("猫がいる")
    assert matcher.search("我的猫很可爱")
    assert matcher.search("Straße katze 猫")
    assert matcher.search("I code c++ daily")
    assert not matcher.search("abc++")
    assert matcher.find("the cat and 猫") == "cat"
    assert not KeywordMatcher([])
    assert not KeywordMatcher(["   "])


@pytest.mark.parametrize(
    ("option", "kwargs"),
    [
        ("direct", {"channel": "private:u1"}),
        ("mention", {"mentions": True}),
        ("quote", {"quote": Quote("m0", "", None, from_self=True)}),
    ],
)
async def test_each_rule_can_be_turned_off(tmp_path: Path, inbound: Any, option: str, kwargs: dict[str, Any]) -> None:
    async with engine(tmp_path, {option: False}) as (rt, _):
        await deliver(rt, inbound("hello", **kwargs))
        assert triggers(rt) == []


async def test_with_direct_off_a_mention_in_a_private_chat_still_counts(tmp_path: Path, inbound: Any) -> None:
    async with engine(tmp_path, {"direct": False}) as (rt, _):
        entry = await deliver(rt, inbound("hey @bot", channel="private:u1", mentions=True))
        assert [rule_of(t) for t in triggers(rt)] == [[(entry.id, "mention")]]


async def test_never_on_its_own_messages_wake_prompts_or_non_messages(tmp_path: Path, inbound: Any) -> None:
    echo = FunctionModel(lambda request: reply("hello to you", tool_call("note", {"text": "hello"})))

    async def noted(arguments: Mapping[str, Any], context: ToolContext) -> str:
        return "hello noted"

    note = Tool("note", "Note.", noted)
    stop = [StopAfterTools()]
    config = {"keywords": ["hello"]}
    async with engine(tmp_path, config, model=echo, extra_tools=[note], hooks=stop) as (rt, instance):
        outcome = await (
            await rt.context.wake("hello, continue")
        )  # a wake prompt; its answer and tool result say hello
        await rt.agent.wait_idle()
        plain_user = await deliver(rt, Message.user("hello without a source").to_dict())
        assert outcome.status == "done"
        tool_results = [e.data["parts"][0]["text"] for e in rt.log.iter_forward() if e.data.get("role") == "tool"]
        assert tool_results == ["hello noted"]
        assert [[t.get("reason") for t in ts] for ts in triggers(rt)] == [["wake"]]
        for entry in rt.log.iter_forward():
            assert await instance.decide(entry) is None, entry
        assert plain_user.data.get("source") is None


def test_the_rule_looks_only_at_inbound_created_messages(inbound: Any) -> None:
    def entry(data: dict[str, Any], type: str = "message", turn: int | None = None) -> Entry:
        return Entry(1, type, 1.0, data, turn)

    direct = inbound("hi", channel="private:u1")
    assert wake_rule(entry(direct)) == "direct"
    assert wake_rule(entry({**direct, "wake": True})) is None
    assert wake_rule(entry({**direct, "role": "assistant"})) is None
    assert wake_rule(entry(direct, type="custom")) is None
    deleted = {**direct, "source": {**direct["source"], "kind": "message.deleted"}}
    assert wake_rule(entry(deleted)) is None
    assert wake_rule(entry({"name": "turn.start"}, type="event")) is None


async def test_reconsider_answers_what_a_crash_left_unanswered(tmp_path: Path, inbound: Any) -> None:
    async with await FactLog.open(tmp_path / "facts.jsonl") as log:
        asked = await log.append("message", inbound("are you there?", channel="private:u1"))
        chatter = await log.append("message", inbound("(group chatter)", message_id="m2"))
        await log.append("event", {"name": "turn.start", "priority": "interactive", "triggers": []}, turn=1)
    async with engine(tmp_path) as (rt, instance):
        recovered = rt.agent.recovered
        assert recovered is not None
        assert [e.id for e in recovered.unanswered] == [asked.id, chatter.id]
        await instance.reconsider(recovered.unanswered)
        await rt.agent.wait_idle()
        assert [rule_of(t) for t in triggers(rt)] == [[], [(asked.id, "direct")]]  # turn 1 is the crashed one


async def test_a_message_that_joined_a_running_turn_is_left_to_it(tmp_path: Path, inbound: Any) -> None:
    entered, opened = anyio.Event(), anyio.Event()

    async def slow(arguments: Mapping[str, Any], context: ToolContext) -> str:
        entered.set()
        await opened.wait()
        return "done"

    model = ScriptedModel([reply("", tool_call("slow")), reply("answered both")])
    async with engine(tmp_path, model=model, extra_tools=[Tool("slow", "Slow.", slow)]) as (rt, _):
        first = await (await rt.agent.send(inbound("first", channel="private:u1")))
        await entered.wait()
        delivery = await rt.agent.send(inbound("second", channel="private:u1", message_id="m2"))
        opened.set()  # the turn sees "second" at its next step: it is answered there, no extra turn
        await rt.agent.wait_idle()
        second = await delivery
        assert [rule_of(t) for t in triggers(rt)] == [[(first.id, "direct")]]
        assert model.requests[1].messages[-1].text == "second"
        assert model.remaining == 0
        assert second.turn is None


async def test_a_message_joined_after_the_last_step_gets_its_own_turn(tmp_path: Path, inbound: Any) -> None:
    entered, opened = anyio.Event(), anyio.Event()

    async def last(arguments: Mapping[str, Any], context: ToolContext) -> str:
        entered.set()
        await opened.wait()
        return "sent"

    def model_fn(request: Any) -> Any:
        if request.messages[-1].role == "user":
            return reply("", tool_call("last"))
        return reply("done")

    tools = [Tool("last", "Last.", last)]
    async with engine(tmp_path, model=FunctionModel(model_fn), extra_tools=tools, hooks=[StopAfterTools()]) as (rt, _):
        first = await (await rt.agent.send(inbound("first", channel="private:u1")))
        await entered.wait()
        held = await rt.agent.send(inbound("second", channel="private:u1", message_id="m2"))
        opened.set()  # "second" joins after the tool result; the turn then stops without seeing it
        await rt.agent.wait_idle()
        second = await held
        assert [rule_of(t) for t in triggers(rt)] == [[(first.id, "direct")], [(second.id, "direct")]]


async def test_dispose_unsubscribes(tmp_path: Path, inbound: Any) -> None:
    async with RuntimeHarness(tmp_path, model=FunctionModel(lambda r: reply("ok"))) as rt:
        dispose = StandardWakeupEngine().create(rt.context, {}).attach(rt.context)
        dispose()
        dispose()  # idempotent
        await deliver(rt, inbound("hi", channel="private:u1"))
        assert triggers(rt) == []


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r'wakeup\.standard: unknown option "keyword" \(did you mean "keywords"\?\)'):
        StandardWakeupEngine().create(None, {"keyword": ["x"]})
    with pytest.raises(ConfigError, match=r"wakeup\.standard\.keywords\.0"):
        StandardWakeupEngine().create(None, {"keywords": [""]})


class StopAfterTools(AgentHooks):
    """Ends the turn after a step with tool calls, like the runtime's stop rule after a successful send."""

    async def on_step_finish(self, step: Step) -> Stop | None:
        return Stop("sent") if step.calls else None
