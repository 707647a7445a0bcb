"""``TestModel``: a stand-in model that exercises every tool it is offered, with no script to write.

In the spirit of pydantic-ai's ``TestModel``. On the first call of a turn (no tool result since the last user
message) it calls each offered tool once, in the order offered, with arguments made up from the tool's JSON
Schema (``example_arguments``: required properties, deterministic values that validate). On the next call (the
results are in the messages) it answers with text: ``text`` if given, else ``"called a, b"`` naming the tools it
called (``"called no tools"`` when it had none to call). It is stateless between calls: what it does depends
on the request only, so one instance serves many turns and runtimes.

``call_tools="all"`` calls every offered tool except those in ``skip``; ``skip`` defaults to the kernel tools
(``send_message``, ``finish``, ``wait``, ``read``): calling ``finish`` or ``wait`` would end the turn before its
text answer, and ``send_message`` would send a placeholder to the channel. ``call_tools=["a", "b"]`` calls
exactly those of them that are offered (``skip`` does not apply: name a kernel tool to have it called). A
request with ``tool_choice="none"`` gets the text answer at once; one naming a tool gets a call of that tool
only. Like ``FunctionModel`` it records ``requests`` and implements ``stream`` (text in small deltas,
arguments in two pieces). A toolcall engine that puts tools into the prompt instead of the request's ``tools``
leaves it nothing to call.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from typing import Literal

from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.model import ModelRequest, ModelResult, ToolSpec
from ishiki_host.testing.models import FunctionModel, reply, tool_call
from ishiki_host.testing.schema_values import example_arguments

__all__ = ["KERNEL_TOOL_NAMES", "TestModel"]

KERNEL_TOOL_NAMES: tuple[str, ...] = ("send_message", "finish", "wait", "read")
"""The tools the runtime itself offers; ``TestModel`` leaves them alone unless named (see the module docstring)."""


class TestModel(FunctionModel):
    """Calls every offered tool once, then answers with text (see the module docstring)."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *,
        call_tools: Literal["all"] | Sequence[str] = "all",
        text: str | None = None,
        skip: Collection[str] = KERNEL_TOOL_NAMES,
        name: str = "test:model",
    ):
        super().__init__(self._answer, name=name)
        if isinstance(call_tools, str) and call_tools != "all":
            raise ValueError(f"call_tools must be 'all' or a list of tool names, not {call_tools!r}")
        self.call_tools = call_tools
        self.text = text
        self.skip = frozenset(skip)
        self._ids = itertools.count(1)

    def chosen(self, request: ModelRequest) -> list[ToolSpec]:
        """The offered tools this model calls for ``request`` (in the order offered)."""
        offered = list(request.tools)
        if request.tool_choice == "none":
            return []
        if request.tool_choice not in ("auto", "required"):
            return [t for t in offered if t.name == request.tool_choice]
        if self.call_tools == "all":
            return [t for t in offered if t.name not in self.skip]
        return [t for t in offered if t.name in self.call_tools]

    def _answer(self, request: ModelRequest) -> ModelResult:
        made = _calls_since_user(request.messages)
        if made is not None:
            return reply(self.text if self.text is not None else _summary(made))
        calls = [self._call(spec) for spec in self.chosen(request)]
        if not calls:
            return reply(self.text if self.text is not None else _summary([]))
        return reply("", *calls)

    def _call(self, spec: ToolSpec) -> ToolCall:
        # Ids count per model, not per process: a test sees the same ids whatever ran before it.
        return tool_call(spec.name, example_arguments(spec.parameters), id=f"test_call_{next(self._ids)}")


def _calls_since_user(messages: Sequence[Message]) -> list[str] | None:
    """Names of the tools called after the last user message, or ``None`` when no tool result came since."""
    names: list[str] = []
    answered = False
    for message in reversed(messages):
        if message.role == "user":
            break
        if message.role == "tool":
            answered = True
        if message.role == "assistant":
            names[:0] = [c.name for c in message.tool_calls]
    return names if answered else None


def _summary(names: Sequence[str]) -> str:
    return f"called {', '.join(names)}" if names else "called no tools"
