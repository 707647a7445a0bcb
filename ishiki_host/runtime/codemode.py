"""codemode in the runtime: which tools move into programs, the ``codemode`` tool, and how a program's calls run.

With codemode on, the tools of a turn split three ways (``split_for_codemode``):

- direct only: ``finish``, ``wait`` and any other ``control`` tool (and ``search`` when toolsearch is on) stay
  in the model's list and are not callable inside programs;
- both: ``send_message`` (every ``send`` tool) and the tools the profile's ``codemode.direct`` names keep their
  direct call and are callable inside programs;
- program only: every other tool leaves the model's list; the ``codemode`` tool's description lists it as a
  typed signature.

A program's ``await tools.x(input)`` runs the real tool as the model's own calls run (``Agent.call_tool``):
unknown-tool and JSON Schema checks, the ``before_tool_call`` hooks (trust when a tool is called), the tool deadline,
the events and the ``after_tool_call`` hooks (archiving) apply as to a direct call. Only the tools the turn's
trust allows are in the program's ``tools`` object. The program gets the tool's value (the structured data
of its result, else its text, never the model's archived view of it); an error result rejects that call's
promise with the result's text. A send inside a program does not end the turn: the step's call is
``codemode``, not a send, so the stop rule does not fire.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

from ishiki_host.core.messages import ToolCall
from ishiki_host.core.tools import Tool, ToolResult, trust_allows
from ishiki_host.errors import ToolError
from ishiki_host.plugins.toolnames import CODEMODE_TOOL
from ishiki_host.tools.codemode import CODEMODE_PARAMETERS, Limits, codemode_description, run_program

if TYPE_CHECKING:
    import logging

    from ishiki_host.config.profile_types import CodemodeConfig
    from ishiki_host.core.tools import ToolContext
    from ishiki_host.core.turns import ToolCallRecord
    from ishiki_host.plugins.runtime_api import TurnView
    from ishiki_host.tools.codemode import ProgramResult, ToolFn

__all__ = [
    "CODEMODE_TOOL",
    "DIRECT_ONLY",
    "CodemodeSplit",
    "ProgramRuntime",
    "limits_of",
    "make_codemode_tool",
    "program_value",
    "render_program_result",
    "split_for_codemode",
]

DIRECT_ONLY = frozenset({"finish", "wait"})
"""Tools never callable inside programs (with every tool of kind ``control``, and what the caller adds)."""


class _Dispatch(Protocol):
    async def call_tool(self, call: ToolCall, tools: Sequence[Tool]) -> ToolCallRecord: ...


class ProgramRuntime(Protocol):
    """What a program's calls need of the runtime."""

    @property
    def agent(self) -> _Dispatch:
        """The agent, which runs the calls."""
        ...

    @property
    def turn_state(self) -> TurnView:
        """The running turn (its trust level)."""
        ...

    @property
    def logger(self) -> logging.Logger:
        """The runtime's logger."""
        ...


@dataclass(frozen=True, slots=True)
class CodemodeSplit:
    """A turn's tools with codemode on: ``direct`` keep a call of their own, ``program`` are callable in programs
    (a tool may be in both)."""

    direct: tuple[Tool, ...]
    program: tuple[Tool, ...]


def split_for_codemode(
    tools: Sequence[Tool], direct: Collection[str], direct_only: Collection[str] = DIRECT_ONLY
) -> CodemodeSplit:
    """Split ``tools`` (see the module docstring); ``direct`` are the profile's ``codemode.direct`` names,
    ``direct_only`` the names kept out of programs besides ``control`` tools."""
    top: list[Tool] = []
    program: list[Tool] = []
    for tool in tools:
        if tool.name in direct_only or tool.kind == "control":
            top.append(tool)
            continue
        if tool.kind == "send" or tool.name in direct:
            top.append(tool)
        program.append(tool)
    return CodemodeSplit(tuple(top), tuple(program))


def limits_of(config: CodemodeConfig) -> Limits:
    """The ``Limits`` of a profile's ``codemode`` section (same field names)."""
    return Limits(**{f.name: getattr(config, f.name) for f in fields(Limits)})


def make_codemode_tool(program: Sequence[Tool], limits: Limits, host: ProgramRuntime) -> Tool:
    """The ``codemode`` tool for ``program`` (the tools its programs may call, already allowed by trust)."""
    tools = tuple(program)
    description = codemode_description([tool.spec() for tool in tools], limits)

    async def handler(args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return await _run(str(args["code"]), tools, limits, host, context)

    return Tool(CODEMODE_TOOL, description, handler, CODEMODE_PARAMETERS, trust="untrusted", kind="action")


async def _run(
    code: str, tools: Sequence[Tool], limits: Limits, host: ProgramRuntime, context: ToolContext
) -> ToolResult:
    trust = host.turn_state.trust  # checked again now: a message that joined the turn may have lowered it
    reachable = [tool for tool in tools if trust_allows(trust, tool.trust)]
    numbers = itertools.count(1)

    def bind(tool: Tool) -> ToolFn:
        async def call(arguments: dict[str, Any]) -> Any:
            nested = ToolCall(f"{context.call.id}/{next(numbers)}", tool.name, arguments)
            record = await host.agent.call_tool(nested, reachable)
            if record.result.is_error:
                raise ToolError(record.result.content)
            return program_value(record.result)

        return call

    result = await run_program(code, {tool.name: bind(tool) for tool in reachable}, limits)
    host.logger.debug(
        "codemode call %s: ok=%s, %d tool calls, %.1f ms",
        context.call.id,
        result.ok,
        result.tool_calls,
        result.elapsed_ms,
    )
    return render_program_result(result)


def program_value(result: ToolResult) -> Any:
    """What a program gets from a tool's result: its structured data when that is JSON, else its text."""
    if result.data is None:
        return result.content
    try:
        json.dumps(result.data, allow_nan=False)
    except (TypeError, ValueError):
        return result.content
    return result.data


def render_program_result(result: ProgramResult) -> ToolResult:
    """The ``codemode`` call's result: the program's JSON, or an error saying which failure (with its
    ``console`` output, which helps the model fix the program)."""
    if result.ok:
        return ToolResult(result.json, data=result.value)
    message = f"the program failed ({result.error_kind}): {result.error}"
    if result.logs:
        message += "\nconsole output:\n" + "\n".join(result.logs)
    data = {"error_kind": result.error_kind, "tool_calls": result.tool_calls, "logs": list(result.logs)}
    return ToolResult(message, is_error=True, data=data)
