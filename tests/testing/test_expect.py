"""Expectation blocks deliver what they receive as a channel would, then pass or fail with what happened."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host import Tool, ToolContext, hookimpl
from ishiki_host.config.profile_types import Profile, TrustConfig
from ishiki_host.errors import AgentStopped
from ishiki_host.testing import (
    EveryMessageWakeup,
    ExpectationFailed,
    Expectations,
    FunctionModel,
    RuntimeHarness,
    ScriptedModel,
    TestModel,
    reply,
    tool_call,
)
from ishiki_host.testing.harness_factory import RuntimeHarnessFactory

pytestmark = pytest.mark.anyio


class Greeter:
    """One tool that greets by name; an extension instance."""

    @hookimpl
    def ishiki_tools(self) -> list[Tool]:
        async def greet(args: Mapping[str, Any], ctx: ToolContext) -> str:
            if args["name"] == "nobody":
                raise ValueError("no one to greet")
            return f"hello {args['name']}"

        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        return [Tool("greet", "Greet someone.", greet, schema)]


def _greeting_model() -> ScriptedModel:
    return ScriptedModel([reply("", tool_call("greet", {"name": "Ada"})), reply("Said hello to Ada.")])


async def _block(rt: RuntimeHarness, queue: Callable[[Expectations], object], cap: float = 30.0) -> None:
    async with rt.expect(timeout=cap) as x:
        queue(x)


async def _failure(rt: RuntimeHarness, queue: Callable[[Expectations], object], cap: float = 30.0) -> str:
    """The message of the ``ExpectationFailed`` the block raises."""
    with pytest.raises(ExpectationFailed) as failed:
        await _block(rt, queue, cap)
    assert isinstance(failed.value, AssertionError)
    return str(failed.value)


async def test_every_expectation_passes(runtime_harness: RuntimeHarnessFactory) -> None:
    async with runtime_harness(model=_greeting_model()) as rt:
        await rt.mount_extension(Greeter())
        async with rt.expect() as x:
            x.receive("greet Ada")
            x.should_call("greet", {"name": "Ada"}, result="hello Ada", error=False)
            x.should_send("Said hello to Ada.")
            x.should_not_send()
            x.should_not_call("greet")
    assert [m.text for m in x.sent] == ["Said hello to Ada."]
    assert [(c.name, c.result) for c in x.calls] == [("greet", "hello Ada")]


async def test_texts_match_by_equality_pattern_or_predicate(runtime_harness: RuntimeHarnessFactory) -> None:
    rt = await runtime_harness(model=ScriptedModel(["first answer", "second answer"]))
    async with rt.expect() as x:
        x.receive("one")
        x.receive("two")
        x.should_send(re.compile(r"^first"))
        x.should_send(lambda text: text.endswith("answer"))
        x.should_not_send("first answer")  # not after the second
    assert rt.channel.texts() == ["first answer", "second answer"]


async def test_unmet_expectations_fail_listing_what_happened(runtime_harness: RuntimeHarnessFactory) -> None:
    rt = await runtime_harness(model=_greeting_model())
    await rt.mount_extension(Greeter())

    def queue(x: Expectations) -> None:
        x.receive("greet Ada")
        x.should_call("greet", {"name": "Bob"})
        x.should_send("Said hello to Ada.")
        x.should_send("Goodbye")
        x.should_not_call("greet")
        x.should_call("wave")

    assert await _failure(rt, queue) == "\n".join(
        [
            "4 of 5 expectation(s) not met:",
            "  NOT MET: should_call('greet', {'name': 'Bob'}): 1 call(s) of greet but none matches",
            "  met:     should_send('Said hello to Ada.')",
            "  NOT MET: should_send('Goodbye'): no message after message 1 matches",
            """  NOT MET: should_not_call('greet'): called: greet({"name": "Ada"}) -> 'hello Ada' (call 1)""",
            "  NOT MET: should_call('wave'): no call matches",
            "what happened:",
            "  received:",
            "    1. 'greet Ada' -> entry 1",
            "  sent:",
            "    1. 'Said hello to Ada.' to private:local",
            "  tool calls:",
            """    1. greet({"name": "Ada"}) -> 'hello Ada'""",
            "  turns:",
            "    1. turn 1 done (no_tool_calls)",
        ]
    )


async def test_should_not_send_fails_on_a_message(runtime_harness: RuntimeHarnessFactory) -> None:
    rt = await runtime_harness(model=ScriptedModel(["chatty"]))
    message = await _failure(rt, lambda x: (x.receive("hi"), x.should_not_send()))
    assert "  NOT MET: should_not_send(): sent: 'chatty' (message 1)" in message


async def test_results_and_errors_of_calls_are_checked(runtime_harness: RuntimeHarnessFactory) -> None:
    model = ScriptedModel([reply("", tool_call("greet", {"name": "nobody"})), "Nobody was there."])
    rt = await runtime_harness(model=model)
    await rt.mount_extension(Greeter())

    def queue(x: Expectations) -> None:
        x.receive("greet nobody")
        x.should_call("greet", lambda args: args["name"] == "nobody", error=True, result=re.compile("no one"))
        x.should_call("greet", error=False)

    message = await _failure(rt, queue)
    assert "1 of 2 expectation(s) not met:" in message
    assert "  NOT MET: should_call('greet', error=False): no call after call 1 matches" in message
    assert "greet(" in message
    assert "-> error " in message


async def test_a_failed_turn_is_shown(runtime_harness: RuntimeHarnessFactory) -> None:
    rt = await runtime_harness(model=ScriptedModel([]))
    message = await _failure(rt, lambda x: (x.receive("hi"), x.should_send("anything")))
    assert "turn 1 failed" in message
    assert "ModelBadRequest: test:scripted: the script has no answer for call 1" in message


async def test_an_error_inside_the_block_propagates_unchecked(runtime_harness: RuntimeHarnessFactory) -> None:
    model = TestModel()
    rt = await runtime_harness(model=model)
    seen: list[Expectations] = []

    def queue(x: Expectations) -> None:
        seen.append(x)
        x.receive("hi")
        x.should_send("never checked")
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        await _block(rt, queue)
    assert model.requests == []  # nothing was delivered
    assert seen[0].sent == []


async def test_a_runtime_that_does_not_settle_times_out(runtime_harness: RuntimeHarnessFactory) -> None:
    release = anyio.Event()

    async def stuck(request: Any) -> Any:
        await release.wait()
        return reply("late")

    rt = await runtime_harness(model=FunctionModel(stuck))
    message = await _failure(rt, lambda x: (x.receive("hi"), x.should_send("late")), cap=0.2)
    release.set()
    assert message.startswith("timed out after 0.2s waiting for the runtime to settle\nwhat happened:")


async def test_what_the_block_itself_does_counts(runtime_harness: RuntimeHarnessFactory) -> None:
    rt = await runtime_harness(model=ScriptedModel(["before", "inside"]))
    await rt.say("not counted")
    async with rt.expect() as x:
        await rt.say("counted")
        x.should_send("inside")
        x.should_not_send("before")


async def test_a_command_is_answered_not_appended(runtime_harness: RuntimeHarnessFactory) -> None:
    model = TestModel()
    rt = await runtime_harness(model=model)
    async with rt.expect() as x:
        x.receive("/help")
        x.should_send(lambda text: "/help" in text)
    assert model.requests == []  # no turn ran for a command


async def test_a_wakeup_engine_decides_whether_a_turn_runs(tmp_path: Path) -> None:
    model = ScriptedModel(["woken"])
    async with RuntimeHarness(tmp_path / "a", model=model, wakeup=EveryMessageWakeup()) as rt:
        async with rt.expect() as x:
            x.receive("hi")
            x.should_send("woken")
        assert rt.log.last_id > 0

    class Never:
        def attach(self, ctx: Any) -> None:
            return None

        async def reconsider(self, entries: Any) -> None:
            return None

    async with RuntimeHarness(tmp_path / "b", model=TestModel(), wakeup=Never()) as quiet:
        await _block(quiet, lambda x: (x.receive("hi"), x.should_not_send()))


async def test_the_sender_trust_applies(tmp_path: Path) -> None:
    profile = Profile(
        id="test",
        directory=tmp_path,
        file=tmp_path / "profile.yml",
        persona="p",
        model="test",
        trust=TrustConfig(owners=("fake:1",)),
    )

    class Secret:
        @hookimpl
        def ishiki_tools(self) -> list[Tool]:
            async def secret(args: Mapping[str, Any], ctx: ToolContext) -> str:
                return "the secret"

            return [Tool("secret", "Owners only.", secret, trust="owner")]

    model = TestModel()
    async with RuntimeHarness(tmp_path, model=model, profile=profile, sid="fake:bot") as rt:
        await rt.mount_extension(Secret())
        async with rt.expect() as x:
            x.receive("hi", user_id="1")
            x.should_call("secret", result="the secret")
        async with rt.expect() as x:
            x.receive("hi", user_id="2")
            x.should_not_call("secret")
            x.should_send("called no tools")


async def test_a_block_needs_an_entered_harness(tmp_path: Path) -> None:
    with pytest.raises(AgentStopped, match="has not started"):
        RuntimeHarness(tmp_path, model=TestModel()).expect()
