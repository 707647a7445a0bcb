"""The runtime harness runs real turns with mounted extensions, and always stops and disposes them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host import hookimpl
from ishiki_host.core.entries import Entry
from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.messages import Message
from ishiki_host.core.model import LanguageModel, ModelRequest, ModelResult
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.core.turns import Step
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call

pytestmark = pytest.mark.anyio


class Greeter:
    def __init__(self) -> None:
        self.events: list[str] = []

    @hookimpl
    def ishiki_attach(self, runtime: Any) -> Any:
        self.events.append(f"attach {runtime.key}")
        return lambda: self.events.append("dispose")

    @hookimpl
    def ishiki_tools(self) -> list[Tool]:
        async def greet(args: Mapping[str, Any], ctx: ToolContext) -> str:
            return f"hello {args['name']}"

        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        return [Tool("greet", "Greet someone.", greet, schema)]

    @hookimpl
    def ishiki_instructions(self) -> str:
        return "Greet people by name."

    @hookimpl
    async def ishiki_stop(self) -> None:
        self.events.append("stop")


async def test_a_turn_uses_an_extension_tool_and_instructions(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("greet", {"name": "Ada"})), reply("done")])
    greeter = Greeter()
    async with RuntimeHarness(tmp_path, model=model) as rt:
        await rt.mount_extension(greeter)
        outcome = await rt.say("hi")
        assert outcome.status == "done"
        first: ModelRequest = model.requests[0]
        assert "Greet people by name." in first.messages[0].text
        assert [t.name for t in first.tools] == ["greet"]
        results = [e for e in rt.log.iter_forward() if e.data.get("role") == "tool"]
        assert results[0].data["parts"][0]["text"] == "hello Ada"
    assert greeter.events == ["attach test/console:local/private:local", "stop", "dispose"]


class Tagging(AgentHooks):
    """A context engine's instance: owns the projection, prefixes every message, adds instructions."""

    def hooks(self) -> AgentHooks:
        return self

    async def project(self, entries: list[Entry], step: Step) -> list[Message]:
        return [Message.user(f"[tagged] {m.text}") for m in await super().project(entries, step)]

    async def instructions(self) -> str:
        return "context engine section"


class Upper:
    """A toolcall engine's instance: its wrapper upper-cases the inner model's text."""

    def __init__(self) -> None:
        self.wrapped: list[LanguageModel] = []

    def wrap(self, model: LanguageModel) -> LanguageModel:
        self.wrapped.append(model)

        async def upper(request: ModelRequest) -> ModelResult:
            return reply((await model.generate(request)).text.upper())

        return FunctionModel(upper, name=f"upper:{model.name}")

    def hooks(self) -> None:
        return None

    async def instructions(self) -> str:
        return "toolcall engine section"


async def test_mounted_engines_shape_the_window_the_model_and_the_prompt(tmp_path: Path) -> None:
    inner = ScriptedModel(["fine"])
    rt = RuntimeHarness(tmp_path, model=inner)
    toolcall = Upper()
    rt.mount_engines(context=Tagging(), toolcall=toolcall)
    async with rt:
        outcome = await rt.say("hi")
        with pytest.raises(RuntimeError, match="before entering"):
            rt.mount_engines(toolcall=Upper())
    assert outcome.result is not None
    assert outcome.result.text == "FINE"
    assert toolcall.wrapped == [inner]
    assert rt.model is inner  # the context still offers the profile's own model
    system, user = inner.requests[0].messages
    assert system.text.endswith("toolcall engine section\n\ncontext engine section")
    assert user.text == "[tagged] hi"


async def test_spawned_work_runs_off_the_turn_and_is_cancelled_on_exit(tmp_path: Path) -> None:
    release = anyio.Event()
    done: list[str] = []
    cancelled: list[str] = []

    async def slow() -> None:
        await release.wait()
        done.append("slow")

    async def never() -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append("never")
            raise

    async def broken() -> None:
        raise ValueError("boom")

    async with RuntimeHarness(tmp_path, model=ScriptedModel(["ok"]), shutdown_grace=0.2) as rt:
        rt.context.spawn(slow, name="slow")
        rt.context.spawn(broken, name="broken")  # logged, never raised
        outcome = await rt.say("hi")  # a turn does not wait for background work
        assert outcome.status == "done"
        assert done == []
        release.set()
        with anyio.fail_after(5):
            await rt.settle()
        assert done == ["slow"]
        rt.context.spawn(never, name="never")
    assert cancelled == ["never"]
    rt.context.spawn(slow, name="late")  # once closing, nothing starts
