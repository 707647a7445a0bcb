"""The runtime harness runs real turns with mounted extensions, and always stops and disposes them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ishiki_host import hookimpl
from ishiki_host.core.model import ModelRequest
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import ScriptedModel, reply, tool_call

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
