"""Child process: a real agent that dies (SIGKILL from the parent) while a tool of its second turn runs.

Turn 1 completes. Then a user message arrives and turn 2 starts; its model asks for ``slow`` and ``later``
in one step; ``slow`` reports "in-tool" and waits to be killed, so the log ends inside a step: the
assistant message is written (write-ahead), no result follows.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import anyio

from ishiki_host.core.agent import Agent
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.core.turns import Turn, TurnSetup
from ishiki_host.testing.models import ScriptedModel, reply, tool_call


async def slow(arguments: Mapping[str, Any], context: ToolContext) -> str:
    print("in-tool", flush=True)
    await anyio.sleep_forever()
    return "never"


async def later(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return "never run either"


TOOLS = [Tool("slow", "waits", slow), Tool("later", "after slow", later)]


def setup(turn: Turn) -> TurnSetup:
    return TurnSetup(system="child", tools=TOOLS)


async def main(path: str) -> None:
    log = await FactLog.open(path)
    model = ScriptedModel(["hello", reply("", tool_call("slow", id="call_slow"), tool_call("later", id="call_later"))])
    agent = Agent(log, model, setup, tool_timeout=None)
    async with anyio.create_task_group() as tg:
        await tg.start(agent.run)
        await agent.send(Message.user("first"), trigger=True)
        await agent.wait_idle()
        await agent.send(Message.user("second"), trigger=True)
        await agent.wait_idle()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
