"""Tool dispatch: nothing a model asks for crashes a turn; errors become results the model reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.tools import Tool, ToolContext, ToolResult
from ishiki_host.core.turns import Turn, TurnSetup
from ishiki_host.errors import ToolError
from ishiki_host.testing.agent import BusRecorder, running
from ishiki_host.testing.models import ScriptedModel, reply, tool_call

ran: list[dict[str, Any]] = []


async def record(arguments: Mapping[str, Any], context: ToolContext) -> str:
    ran.append(dict(arguments))
    return "recorded"


RECORD = Tool(
    "record",
    "Record things.",
    record,
    {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}, "note": {"type": "string"}},
        "required": ["items"],
        "additionalProperties": False,
    },
)


def results(log: FactLog) -> list[Message]:
    return [Message.from_dict(e.data) for e in log.iter_forward() if e.data.get("role") == "tool"]


async def one_call(make_agent: Any, call: ToolCall, tools: list[Tool], **kwargs: Any) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel([reply("", call), "understood"])
    agent = make_agent(model, tools=tools, **kwargs)
    async with running(agent):
        outcome = await (await agent.continue_("go"))
    return outcome, model


@pytest.fixture(autouse=True)
def _clear_ran() -> None:
    ran.clear()


@pytest.mark.anyio
async def test_an_unknown_tool_gets_an_error_listing_the_tools(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    outcome, model = await one_call(make_agent, tool_call("recrod", {"items": []}), [RECORD, RECORD_ALIAS])
    (result,) = results(log)
    assert result.is_error
    assert result.text == "unknown tool 'recrod'; available tools: alias, record"
    assert outcome.status == "done"
    assert model.requests[1].messages[-1].is_error


RECORD_ALIAS = Tool("alias", "Same.", record)


@pytest.mark.anyio
async def test_arguments_that_are_not_json_are_quoted_back(log, make_agent, bus) -> None:  # type: ignore[no-untyped-def]
    recorder = BusRecorder(bus)
    outcome, _ = await one_call(make_agent, tool_call("record", "{"), [RECORD])
    (result,) = results(log)
    assert result.is_error
    assert "the arguments of record are not a JSON object" in result.text
    assert "received: '{'" in result.text
    assert ran == []
    assert outcome.status == "done"
    (failed,) = recorder.named("tool.failed")
    assert isinstance(failed["error"], ToolError)
    assert failed["result"].content == result.text
    call_data = next(e.data for e in log.iter_forward() if e.data.get("tool_calls"))["tool_calls"][0]
    assert call_data["raw_arguments"] == "{"
    assert call_data["parse_error"].startswith("invalid JSON")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"items": [1, "two"]}, "invalid arguments for record: at $.items[1]: 'two' is not of type 'integer'"),
        ({}, "invalid arguments for record: at $: 'items' is a required property"),
        ({"items": [], "colour": "red"}, "Additional properties are not allowed ('colour' was unexpected)"),
    ],
)
async def test_arguments_breaking_the_schema_are_refused_with_the_path(log, make_agent, arguments, expected) -> None:  # type: ignore[no-untyped-def]
    await one_call(make_agent, tool_call("record", arguments), [RECORD])
    (result,) = results(log)
    assert result.is_error
    assert expected in result.text
    assert ran == []


@pytest.mark.anyio
async def test_a_tool_with_a_broken_schema_is_refused_not_crashed(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    broken = Tool("broken", "Bad schema.", record, {"type": "no-such-type"})
    outcome, _ = await one_call(make_agent, tool_call("broken", {}), [broken])
    (result,) = results(log)
    assert result.is_error
    assert "the tool's own argument schema is invalid" in result.text
    assert outcome.status == "done"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("error", "expected"),
    [(ToolError("the file is locked"), "the file is locked"), (ValueError("boom"), "ValueError: boom")],
)
async def test_a_raising_tool_becomes_an_error_result_and_the_turn_goes_on(
    log, make_agent, bus, error, expected
) -> None:  # type: ignore[no-untyped-def]
    async def explode(arguments: Mapping[str, Any], context: ToolContext) -> str:
        raise error

    recorder = BusRecorder(bus)
    outcome, model = await one_call(make_agent, tool_call("explode", {}), [Tool("explode", "", explode)])
    (result,) = results(log)
    assert (result.text, result.is_error) == (expected, True)
    assert outcome.reason == "no_tool_calls"
    assert outcome.steps == 2
    assert recorder.named("tool.failed")[0]["error"] is error
    assert model.requests[1].messages[-1].text == expected


@pytest.mark.anyio
async def test_a_tool_that_overruns_its_deadline_is_stopped(log, make_agent, fake_clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    stopped = anyio.Event()

    async def hang(arguments: Mapping[str, Any], context: ToolContext) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "never"

    model = ScriptedModel([reply("", tool_call("hang", {})), "ok"])
    agent = make_agent(model, tools=[Tool("hang", "", hang)], tool_timeout=30)
    async with running(agent):
        handle = await agent.continue_("go")
        await fake_clock.wait_for_sleepers()
        await fake_clock.advance(29)
        assert not stopped.is_set()
        await fake_clock.advance(1)
        await handle
    assert stopped.is_set()
    (result,) = results(log)
    assert result.is_error
    assert result.text == "hang did not finish within 30 s and was stopped"


@pytest.mark.anyio
async def test_a_handler_timeout_error_is_not_mistaken_for_the_deadline(log, make_agent, fake_clock) -> None:  # type: ignore[no-untyped-def]
    async def slow_upstream(arguments: Mapping[str, Any], context: ToolContext) -> str:
        raise TimeoutError("upstream took too long")

    await one_call(make_agent, tool_call("up", {}), [Tool("up", "", slow_upstream)], tool_timeout=30)
    assert results(log)[0].text == "TimeoutError: upstream took too long"
    assert fake_clock.sleepers == 0  # the deadline of the finished call is gone


@pytest.mark.anyio
async def test_tools_above_the_turns_trust_are_neither_offered_nor_run(log, bus, fake_clock) -> None:  # type: ignore[no-untyped-def]
    from ishiki_host.core.agent import Agent

    owner_only = Tool("secret", "Owner only.", record, trust="owner")
    public = Tool("public", "Anyone.", record, trust="untrusted")
    recorder = BusRecorder(bus)
    model = ScriptedModel([reply("", tool_call("secret", {}), tool_call("public", {})), "ok"])

    def setup(turn: Turn) -> TurnSetup:
        return TurnSetup(tools=[owner_only, public], trust="untrusted")

    async with running(Agent(log, model, setup, bus=bus, clock=fake_clock)) as agent:
        await (await agent.continue_("hi"))
    assert [t.name for t in model.requests[0].tools] == ["public"]
    secret, public_result = results(log)
    assert secret.is_error
    assert secret.text == "unknown tool 'secret'; available tools: public"
    assert not public_result.is_error
    assert ran == [{}]
    (blocked,) = recorder.named("tool.blocked")
    assert blocked["reason"] == "secret needs trust owner; this turn is untrusted"


@pytest.mark.anyio
async def test_results_keep_their_structure_for_hooks_and_become_text_for_the_model(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    seen: list[Any] = []

    async def structured(arguments: Mapping[str, Any], context: ToolContext) -> Any:
        return {"ok": True, "ids": [1, 2], "step": context.step, "call": context.call.id}  # type: ignore[attr-defined]

    async def explicit(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult("custom text", is_error=True, data={"why": "said so"})

    from ishiki_host.core.hooks import AgentHooks

    class Watch(AgentHooks):
        async def on_step_finish(self, step: Any) -> None:
            seen.extend((record.status, record.result.data) for record in step.calls)

    calls = [tool_call("structured", {}, id="s1"), tool_call("explicit", {})]
    model = ScriptedModel([reply("", *calls), "ok"])
    agent = make_agent(
        model, tools=[Tool("structured", "", structured), Tool("explicit", "", explicit)], hooks=[Watch()]
    )
    async with running(agent):
        await (await agent.continue_("go"))
    first, second = results(log)
    assert first.text == '{"ok": true, "ids": [1, 2], "step": 1, "call": "s1"}'
    assert not first.is_error
    assert (second.text, second.is_error) == ("custom text", True)
    assert seen == [("ran", {"ok": True, "ids": [1, 2], "step": 1, "call": "s1"}), ("ran", {"why": "said so"})]


@pytest.mark.anyio
async def test_on_the_real_clock_the_deadline_needs_no_watchdog_and_still_stops_the_tool() -> None:
    from ishiki_host.core.clock import SystemClock, run_with_deadline

    stopped = anyio.Event()

    async def hang() -> str:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "never"

    async def own_timeout() -> str:
        raise TimeoutError("upstream")

    with pytest.raises(TimeoutError, match=r"no answer within 0\.01 s"):
        await run_with_deadline(SystemClock(), 0.01, hang)
    assert stopped.is_set()
    with pytest.raises(TimeoutError, match="upstream"):
        await run_with_deadline(SystemClock(), 5, own_timeout)

    async def quick() -> str:
        return "done"

    assert await run_with_deadline(SystemClock(), 5, quick) == "done"
