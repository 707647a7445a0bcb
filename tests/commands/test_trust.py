"""Trust levels of senders and turns, the refused admission, the open tools, one refusal per sender."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.config.profile_types import TrustConfig
from ishiki_host.core.agent import Agent
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.subjects import entry_sender, sender_key
from ishiki_host.core.tools import TRUST_ORDER, Tool, ToolContext, TrustLevel
from ishiki_host.core.turns import Turn, TurnSetup
from ishiki_host.runtime.trust import Refusals, TrustPolicy, highest, lowest, new_inbound, tools_for
from ishiki_host.testing.models import ScriptedModel, reply, tool_call
from ishiki_host.tools.kernel import OPEN_TOOLS

LEVELS: list[TrustLevel] = ["untrusted", "trusted", "owner"]
LISTED = TrustConfig(owners=("telegram:1",), trusted=("telegram:2", "whatsapp:3"))


def inbound(sender: str | None, trust: str | None = None) -> Entry:
    data: dict[str, Any] = {"role": "user", "parts": [{"type": "text", "text": "hi"}]}
    if sender is not None:
        platform, _, user = sender.partition(":")
        data["source"] = {"platform": platform, "selfId": "bot", "user": {"id": user}}
    if trust is not None:
        data["trust"] = trust
    return Entry(1, "message", 0.0, data)


def test_listed_senders_get_their_level_and_the_console_is_owner() -> None:
    policy = TrustPolicy(LISTED)
    assert policy.level("telegram:1") == "owner"
    assert policy.level("telegram:2") == "trusted"
    assert policy.level("whatsapp:3") == "trusted"
    assert policy.level("console:local") == "owner"
    assert policy.level("telegram:99") == "untrusted"
    assert policy.level("whatsapp:1") == "untrusted"  # the platform is part of the id
    assert policy.level(None) == "untrusted"


def test_a_profile_without_a_trust_section_trusts_unlisted_senders() -> None:
    policy = TrustPolicy(TrustConfig())
    assert policy.level("telegram:99") == "trusted"
    assert policy.level("console:local") == "owner"


def test_unlisted_senders_are_refused_when_not_allowed() -> None:
    policy = TrustPolicy(TrustConfig(owners=("telegram:1",), allow_unlisted=False))
    assert policy.admit("telegram:99") == "refused"
    assert policy.admit(None) == "refused"
    assert policy.admit("telegram:1") == "owner"
    assert policy.admit("console:local") == "owner"
    assert policy.level("telegram:99") == "untrusted"  # a level is never "refused"
    open_policy = TrustPolicy(LISTED)
    assert open_policy.admit("telegram:99") == "untrusted"


def test_a_turn_runs_at_the_lowest_level_of_its_new_messages() -> None:
    policy = TrustPolicy(LISTED)
    owner, trusted, stranger = inbound("telegram:1"), inbound("telegram:2"), inbound("telegram:77")
    assert policy.turn_level([owner], home="trusted") == "owner"
    assert policy.turn_level([owner, trusted], home="owner") == "trusted"
    assert policy.turn_level([owner, trusted, stranger], home="owner") == "untrusted"
    assert policy.turn_level([], home="trusted") == "trusted"
    assert policy.home_level("console:local") == "owner"
    assert policy.home_level("telegram:bot") == "trusted"
    assert policy.home_level(None) == "trusted"


def test_the_level_stored_at_ingest_wins_over_a_later_profile_change() -> None:
    policy = TrustPolicy(TrustConfig(owners=("telegram:77",)))
    assert policy.of_entry(inbound("telegram:77", trust="untrusted")) == "untrusted"
    assert policy.of_entry(inbound("telegram:77")) == "owner"
    assert policy.of_entry(inbound("telegram:77", trust="root")) == "owner"  # not a level: recomputed
    assert policy.of_entry(inbound(None)) == "untrusted"  # names no sender
    assert TrustPolicy(TrustConfig()).of_entry(inbound("telegram:5")) == "trusted"  # nobody is listed


def test_sender_keys() -> None:
    assert sender_key({"platform": "telegram", "user": {"id": "42"}}) == "telegram:42"
    assert sender_key({"platform": "telegram"}) is None
    assert sender_key({"platform": "telegram", "user": {"id": ""}}) is None
    assert sender_key({"user": {"id": "42"}}) is None
    assert entry_sender(inbound("telegram:5")) == "telegram:5"
    assert entry_sender(inbound(None)) is None


def _tool(name: str, trust: TrustLevel) -> Tool:
    async def run(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return name

    return Tool(name, name, run, trust=trust)


def test_tools_above_the_turn_level_are_not_offered() -> None:
    tools = [_tool("send_message", "untrusted"), _tool("search", "trusted"), _tool("shell", "owner")]
    assert [t.name for t in tools_for("untrusted", tools)] == ["send_message"]
    assert [t.name for t in tools_for("trusted", tools)] == ["send_message", "search"]
    assert [t.name for t in tools_for("owner", tools)] == ["send_message", "search", "shell"]
    assert {"send_message", "finish", "wait", "read"} == OPEN_TOOLS


@given(st.lists(st.sampled_from(LEVELS), min_size=1))
def test_lowest_and_highest_bound_every_level(levels: list[TrustLevel]) -> None:
    low, high = lowest(levels, "owner"), highest(levels, "untrusted")
    assert low in levels
    assert high in levels
    assert all(TRUST_ORDER[low] <= TRUST_ORDER[level] <= TRUST_ORDER[high] for level in levels)


def test_lowest_and_highest_of_nothing_are_the_default() -> None:
    assert lowest([], "trusted") == "trusted"
    assert highest([], "owner") == "owner"


def test_one_refusal_per_sender() -> None:
    refusals = Refusals(capacity=2)
    assert refusals.first_time("telegram:9")
    assert not refusals.first_time("telegram:9")
    assert refusals.first_time("telegram:8")
    assert not refusals.first_time("telegram:9")  # refreshed: now the most recent
    assert refusals.first_time("telegram:7")  # evicts telegram:8, the least recently refused
    assert not refusals.first_time("telegram:9")
    assert refusals.first_time("telegram:8")
    with pytest.raises(ValueError, match="capacity"):
        Refusals(capacity=0)


async def _answer(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "done"


@pytest.mark.anyio
async def test_a_stranger_turn_gets_no_privileged_tool_even_when_the_model_calls_one(fact_log: FactLog) -> None:
    """The recipe the runtime follows: the turn level from the new inbound entries, the tools it allows."""
    policy = TrustPolicy(LISTED)
    tools = [Tool("send_message", "Send.", _answer, trust="untrusted", kind="send"), Tool("shell", "Run.", _answer,
             trust="owner")]  # fmt: skip
    offered: list[list[str]] = []

    async def setup(turn: Turn) -> TurnSetup:
        level = policy.turn_level(await fact_log.read_back(new_inbound), home="trusted")
        offered.append([t.name for t in tools_for(level, tools)])
        return TurnSetup(tools=tools, trust=level)

    model = ScriptedModel([reply("", tool_call("shell"), tool_call("send_message")), "ok",
                           reply("", tool_call("shell")), "ok"])  # fmt: skip
    agent = Agent(fact_log, model, setup)
    async with anyio.create_task_group() as tg:
        await tg.start(agent.run)
        await agent.send({**inbound("telegram:1").data, "trust": "owner"})
        await agent.send(inbound("telegram:99").data)  # no stored level: computed, untrusted
        stranger = await (await agent.continue_())
        await agent.send(inbound("telegram:1").data)
        owner = await (await agent.continue_())
        await agent.stop()
    assert offered == [["send_message"], ["send_message", "shell"]]
    assert [t.name for t in model.requests[0].tools] == ["send_message"]
    tool_results = [e for e in fact_log.iter_forward() if e.data.get("role") == "tool"]
    results = {e.data["tool_name"]: e.data for e in tool_results if e.turn == stranger.turn}
    assert results["shell"].get("is_error") is True  # refused at dispatch: it was never offered
    assert results["send_message"]["parts"][0]["text"] == "done"
    owner_results = [e.data for e in fact_log.iter_forward() if e.turn == owner.turn and e.data.get("role") == "tool"]
    assert owner_results[0]["parts"][0]["text"] == "done"


def test_new_inbound_stops_at_the_last_turn_end_or_boundary() -> None:
    def at(id: int, type: str = "message", **data: Any) -> Entry:
        return Entry(id, type, 0.0, data)

    user = {"role": "user", "source": {"platform": "telegram", "user": {"id": "1"}}}
    log = [at(1, **user), at(2, "event", name="turn.done"), at(3, **user), at(4, role="user", wake=True),
           at(5, **user)]  # fmt: skip
    assert [e.id for e in new_inbound(iter(reversed(log)))] == [3, 5]
    log += [at(6, "event", name="turn.failed"), at(7, "session", reason="overflow"), at(8, **user, carried=5)]
    assert [e.id for e in new_inbound(iter(reversed(log)))] == [8]
