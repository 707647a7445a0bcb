"""Running one tool call: checks, hooks, the handler under a deadline, and errors turned into results.

Nothing a model asks for can crash a turn here: an unknown tool, arguments that are not JSON or break the
tool's schema, a blocked call and a handler that raises all become error results the model reads on its
next step. Only cancellation (an aborted turn) goes through.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from jsonschema import SchemaError, ValidationError
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for

from ishiki_host.core.clock import DeadlineExceeded, run_with_deadline
from ishiki_host.core.hooks import Block
from ishiki_host.core.tools import Tool, ToolResult, render_result, trust_allows
from ishiki_host.core.turns import CallContext, ToolCallRecord
from ishiki_host.errors import ToolError

if TYPE_CHECKING:
    from ishiki_host.core.bus import EventBus
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.hooks import HookChain
    from ishiki_host.core.messages import ToolCall
    from ishiki_host.core.turns import Step

__all__ = ["ToolCaller"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

_RAW_QUOTE_LIMIT = 500


class ToolCaller:
    """Answers the tool calls of steps, in order, for one agent."""

    def __init__(self, hooks: HookChain, bus: EventBus, clock: Clock, *, tool_timeout: float | None):
        self._hooks = hooks
        self._bus = bus
        self._clock = clock
        self._tool_timeout = tool_timeout

    async def call(self, call: ToolCall, step: Step) -> ToolCallRecord:
        """Answer ``call``; the record's result has been through every ``after_tool_call`` hook."""
        record = await self._check(call, step)
        if record is None:
            record = await self._decide_and_run(call, step)
        result = await self._hooks.after_tool_call(call, record.result, step)
        return ToolCallRecord(call, record.tool, result, record.status)

    async def call_within(self, call: ToolCall, step: Step, tools: Sequence[Tool]) -> ToolCallRecord:
        """Answer a call that a running tool of ``step`` makes (a codemode program), among ``tools``.

        The call is checked, decided and run as the model's calls are: unknown tool, JSON and schema checks,
        ``before_tool_call`` hooks (trust), the deadline, the events and every ``after_tool_call`` hook. Hooks
        see a view of ``step`` whose ``tools`` are ``tools``. Nothing is logged: the calling tool's result is.
        """
        return await self.call(call, replace(step, tools=list(tools)))

    async def _check(self, call: ToolCall, step: Step) -> ToolCallRecord | None:
        tool = step.tool(call.name)
        if tool is None:
            await self._note_refused_by_trust(call, step)
            return await self._reject(call, None, _unknown_tool_message(call.name, step), step)
        if call.parse_error is not None:
            raw = (call.raw_arguments or "")[:_RAW_QUOTE_LIMIT]
            message = (
                f"the arguments of {call.name} are not a JSON object ({call.parse_error}); received: {raw!r}. "
                "Call the tool again with a JSON object."
            )
            return await self._reject(call, tool, message, step)
        problem = self._validate(tool, call.arguments)
        if problem is not None:
            return await self._reject(call, tool, f"invalid arguments for {call.name}: {problem}", step)
        return None

    async def _note_refused_by_trust(self, call: ToolCall, step: Step) -> None:
        setup = step.turn.setup
        if setup is None:
            return
        for tool in setup.tools:
            if tool.name == call.name and not trust_allows(setup.trust, tool.trust):
                reason = f"{call.name} needs trust {tool.trust}; this turn is {setup.trust}"
                await self._bus.emit("tool.blocked", call=call, reason=reason, step=step)

    async def _reject(self, call: ToolCall, tool: Tool | None, message: str, step: Step) -> ToolCallRecord:
        logger.info("tool call %s (%s) rejected: %s", call.id, call.name, message)
        result = ToolResult.error(message)
        await self._bus.emit("tool.failed", call=call, result=result, error=ToolError(message), step=step)
        return ToolCallRecord(call, tool, result, "rejected")

    async def _decide_and_run(self, call: ToolCall, step: Step) -> ToolCallRecord:
        tool = step.tool(call.name)
        assert tool is not None
        decision = await self._hooks.before_tool_call(call, step)
        if decision is not None:
            if isinstance(decision, Block):
                await self._bus.emit("tool.blocked", call=call, reason=decision.reason, step=step)
                return ToolCallRecord(call, tool, ToolResult.error(f"blocked: {decision.reason}"), "blocked")
            await self._bus.emit("tool.done", call=call, result=decision.result, step=step)
            return ToolCallRecord(call, tool, decision.result, "replaced")
        return await self._run(tool, call, step)

    async def _run(self, tool: Tool, call: ToolCall, step: Step) -> ToolCallRecord:
        await self._bus.emit("tool.start", call=call, step=step)
        context = CallContext(call=call, turn=step.turn.number, step=step.index, trust=step.turn.trust)
        try:
            value = await run_with_deadline(
                self._clock, self._tool_timeout, lambda: tool.handler(dict(call.arguments), context)
            )
            result = render_result(value)
        except Exception as exc:
            result = ToolResult.error(_describe_failure(tool, exc, self._tool_timeout))
            if not isinstance(exc, ToolError | DeadlineExceeded):
                logger.warning("tool %s raised", tool.name, exc_info=True)
            await self._bus.emit("tool.failed", call=call, result=result, error=exc, step=step)
            return ToolCallRecord(call, tool, result, "failed")
        await self._bus.emit("tool.done", call=call, result=result, step=step)
        return ToolCallRecord(call, tool, result, "ran")

    def _validate(self, tool: Tool, arguments: Mapping[str, Any]) -> str | None:
        try:
            validator = self._validator(tool)
            instance = dict(arguments)
            if validator.is_valid(instance):
                return None  # the common case: ranking the errors (best_match) costs more than checking
            error = best_match(validator.iter_errors(instance))
        except SchemaError as exc:
            logger.error("tool %s has an invalid argument schema: %s", tool.name, exc.message)
            return f"the tool's own argument schema is invalid ({exc.message})"
        return None if error is None else _describe_validation(error)

    def _validator(self, tool: Tool) -> Any:
        return _validator_for(tool.parameters)


_VALIDATOR_CACHE_SIZE = 512
_BY_IDENTITY: OrderedDict[int, tuple[Mapping[str, Any], Any]] = OrderedDict()


def _validator_for(parameters: Mapping[str, Any]) -> Any:
    """The checked validator of a tool's schema, shared by every agent of the process.

    Building one (the metaschema check, the reference resolver) costs milliseconds, and every runtime has its
    own tool objects over the same module-level schemas, while an extension may build its tools' schemas again
    for every turn. So validators are kept by the schema's content (its canonical JSON), and the schema objects
    seen last by identity in front of that (the entry keeps its object alive, so its id is never reused while
    cached); the least recently used of each are dropped beyond the bound.
    """
    key = id(parameters)
    cached = _BY_IDENTITY.get(key)
    if cached is not None and cached[0] is parameters:
        _BY_IDENTITY.move_to_end(key)
        return cached[1]
    try:
        canonical = json.dumps(parameters, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # not JSON: checked for this call only
        return _checked_validator(dict(parameters))
    validator = _validator_of_json(canonical)
    _BY_IDENTITY[key] = (parameters, validator)
    while len(_BY_IDENTITY) > _VALIDATOR_CACHE_SIZE:
        _BY_IDENTITY.popitem(last=False)
    return validator


@functools.lru_cache(maxsize=_VALIDATOR_CACHE_SIZE)
def _validator_of_json(canonical: str) -> Any:
    return _checked_validator(json.loads(canonical))


def _checked_validator(schema: dict[str, Any]) -> Any:
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _unknown_tool_message(name: str, step: Step) -> str:
    names = ", ".join(sorted(tool.name for tool in step.tools))
    available = f"available tools: {names}" if names else "no tools are available in this step"
    return f"unknown tool {name!r}; {available}"


def _describe_validation(error: ValidationError) -> str:
    path = "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return f"at {path}: {error.message}"


def _describe_failure(tool: Tool, exc: Exception, timeout: float | None) -> str:
    if isinstance(exc, ToolError):
        return str(exc)
    if isinstance(exc, DeadlineExceeded):
        return f"{tool.name} did not finish within {timeout:g} s and was stopped"
    return f"{type(exc).__name__}: {exc}"
