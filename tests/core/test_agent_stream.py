"""Streamed steps: ``stream_for`` gives a sink, the model streams into it, and a cut-short turn records its text."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import anyio
import pytest

from ishiki_host.core.factlog import FactLog
from ishiki_host.core.model import ModelRequest, ModelResult, StreamDone, StreamEvent, TextDelta, ToolCallDelta, Usage
from ishiki_host.core.tools import Tool
from ishiki_host.core.turns import Step
from ishiki_host.errors import ModelBadRequest, ModelUnavailable
from ishiki_host.testing.agent import running
from ishiki_host.testing.models import ScriptedModel, reply, tool_call


class Sink:
    """A ``StepStream`` recording what it was fed."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.calls = 0
        self.fed = anyio.Event()

    def text(self, delta: str) -> None:
        self.pieces.append(delta)
        self.fed.set()

    def tool_call(self) -> None:
        self.calls += 1


class EventModel:
    """Streams the scripted events; ``then`` raises after them, or (``hang``) waits until cancelled."""

    name = "test:events"

    def __init__(self, events: Sequence[StreamEvent], *, then: Exception | None = None, hang: bool = False):
        self.events = list(events)
        self.then = then
        self.hang = hang
        self.closed = False
        self.generated = 0

    async def generate(self, request: ModelRequest) -> ModelResult:
        self.generated += 1
        return reply("generated")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        try:
            for event in self.events:
                yield event
            if self.hang:
                await anyio.sleep_forever()
            if self.then is not None:
                raise self.then
        finally:
            self.closed = True


def last_entry(log: FactLog) -> dict[str, object]:
    return dict(list(log.iter_forward())[-1].data)


@pytest.mark.anyio
async def test_without_a_sink_the_model_is_not_streamed(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    model = EventModel([TextDelta("never"), StreamDone(reply("never"))])
    asked: list[int] = []

    def stream_for(step: Step) -> Sink | None:
        asked.append(step.index)
        return None

    agent = make_agent(model, stream_for=stream_for)
    async with running(agent):
        outcome = await (await agent.continue_("hi"))
    assert (outcome.status, outcome.result.text if outcome.result else None) == ("done", "generated")
    assert (model.generated, model.closed, asked) == (1, False, [1])


@pytest.mark.anyio
async def test_a_sink_gets_the_text_in_order_and_the_result_is_generates(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    result = reply("Hello there, friend.", usage=Usage(7, 3), model="fake:m")
    model = ScriptedModel([result])
    sink = Sink()
    agent = make_agent(model, stream_for=lambda step: sink)
    async with running(agent):
        outcome = await (await agent.continue_("hi"))
    assert outcome.status == "done"
    assert "".join(sink.pieces) == "Hello there, friend."
    assert len(sink.pieces) > 1
    assert outcome.result == result
    assistant = next(e.data for e in log.iter_forward() if e.data.get("role") == "assistant")
    assert (assistant["model"], assistant["usage"]) == ("fake:m", Usage(7, 3).to_dict())
    assert "partial_reply" not in last_entry(log)


@pytest.mark.anyio
async def test_tool_calls_in_a_stream_are_run_and_reported_to_the_sink(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel([reply("Let me look.", tool_call("look", {"q": 1}, id="c1")), reply("Found it.")])
    sinks: list[Sink] = []

    def stream_for(step: Step) -> Sink:
        sinks.append(Sink())
        return sinks[-1]

    async def look(arguments: object, context: object) -> str:
        return "here"

    agent = make_agent(model, tools=[Tool("look", "Look.", look)], stream_for=stream_for)
    async with running(agent):
        outcome = await (await agent.continue_("hi"))
    assert (outcome.status, outcome.steps) == ("done", 2)
    assert ["".join(s.pieces) for s in sinks] == ["Let me look.", "Found it."]
    assert [s.calls for s in sinks] == [2, 0]  # the call's two argument pieces
    tool = next(e.data for e in log.iter_forward() if e.data.get("role") == "tool")
    assert tool["tool_call_id"] == "c1"


@pytest.mark.anyio
async def test_a_stream_failing_mid_way_fails_the_turn_and_records_the_partial_reply(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    error = ModelUnavailable("the connection dropped", model="test:events")
    model = EventModel([TextDelta("Half a "), TextDelta("sentence")], then=error)
    agent = make_agent(model, stream_for=lambda step: Sink())
    async with running(agent):
        outcome = await (await agent.continue_("hi"))
    assert (outcome.status, outcome.error) == ("failed", error)
    end = last_entry(log)
    assert (end["name"], end["error"], end["partial_reply"]) == ("turn.failed", "ModelUnavailable", "Half a sentence")
    assert model.closed
    assert not any(e.data.get("role") == "assistant" for e in log.iter_forward())


@pytest.mark.anyio
async def test_an_abort_mid_stream_closes_the_stream_and_records_the_partial_reply(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    model = EventModel([TextDelta("I was say"), TextDelta("ing")], hang=True)
    sink = Sink()
    agent = make_agent(model, stream_for=lambda step: sink)
    async with running(agent):
        handle = await agent.continue_("hi")
        await sink.fed.wait()
        while sink.pieces != ["I was say", "ing"]:
            await anyio.wait_all_tasks_blocked()
        assert agent.abort("stop")
        outcome = await handle
    assert (outcome.status, outcome.reason) == ("aborted", "stop")
    assert model.closed
    assert last_entry(log) == {"name": "turn.aborted", "reason": "stop", "steps": 1, "partial_reply": "I was saying"}


@pytest.mark.anyio
async def test_a_stream_without_a_result_fails_like_a_bad_answer(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    model = EventModel([TextDelta("no end"), ToolCallDelta(0, "c", "x", "{}")])
    sink = Sink()
    agent = make_agent(model, stream_for=lambda step: sink)
    async with running(agent):
        outcome = await (await agent.continue_("hi"))
    assert outcome.status == "failed"
    assert isinstance(outcome.error, ModelBadRequest)
    assert (sink.calls, last_entry(log)["partial_reply"]) == (1, "no end")


@pytest.mark.anyio
async def test_the_partial_reply_is_only_the_step_whose_message_is_not_logged(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    calls = 0

    async def fail(request: ModelRequest) -> ModelResult:
        raise ModelUnavailable("down", model="test")

    script = [reply("Checking.", tool_call("look", id="c1")), fail]
    model = ScriptedModel(script)

    async def look(arguments: object, context: object) -> str:
        nonlocal calls
        calls += 1
        return "here"

    agent = make_agent(model, tools=[Tool("look", "Look.", look)], stream_for=lambda step: Sink())
    async with running(agent):
        outcome = await (await agent.continue_("hi"))
    assert (outcome.status, calls) == ("failed", 1)
    assert "partial_reply" not in last_entry(log)  # "Checking." is in the log as the first step's message
