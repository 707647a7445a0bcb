"""The ``json`` and ``xml`` toolcall engines: tool calling for models without it, through a text protocol.

``wrap(model)`` gives the agent a ``TextProtocolModel`` (see ``_text_model``): the tool catalogue goes into the
system prompt, earlier calls and results are shown in the protocol's own words, the model is called without
native tools and its answer is parsed into standard tool calls. The instance is also an ``AgentHooks`` object
(``hooks()``), which the runtime adds to the agent:

- ``prepare_step`` tells the wrapper which turn and step it serves: call ids are ``call_t<turn>_<step>_<n>``,
  unique in the runtime's log across turns and restarts (turn numbers never repeat in a log);
- **notes to the model**: when reading an answer produced notes (an unknown function dropped, a block
  repaired, an answer that could not be read), they are appended to the fact log as a user message right
  after the step, ``{"role": "user", "parts": [...], "toolcall": {"engine", "unreadable"}}``, so the model sees
  them at its next step, after a restart too, and anyone can inspect them. The standard context engine shows
  user messages without a platform header as coming from the host. The note is written by ``on_step_finish``;
  if another hook decided the step first, by the next step's ``transform_entries`` or at the turn's end;
- **the turn goes on after a bad answer**: an answer that could not be read, or whose every call was dropped,
  gets another step (``"continue"``), at most ``retries`` times in a row; then the turn ends with the reason
  ``unreadable``. An answer read cleanly without calls (empty ``actions``, or no ``<tool_call>`` block) ends
  the turn as any answer without calls does.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import count
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host.core.hooks import AgentHooks, Stop
from ishiki_host.core.messages import Message
from ishiki_host.engines._options import resolve_options
from ishiki_host.engines.toolcall._text_model import JSON, XML, TextProtocol, TextProtocolModel
from ishiki_host.plugins.base import ToolcallEngine

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.hooks import StepDecision
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.core.turns import Step, TurnOutcome
    from ishiki_host.engines.toolcall._answer import ParsedAnswer
    from ishiki_host.plugins.runtime_api import RuntimeContext

__all__ = [
    "NOTE_HEADER",
    "TEXT_TOOLCALL_CONFIG_SCHEMA",
    "JsonToolcallEngine",
    "TextToolcall",
    "XmlToolcallEngine",
]

NOTE_HEADER = "Note from the host about your last answer:"

TEXT_TOOLCALL_CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "retries": {
            "type": "integer",
            "minimum": 0,
            "default": 2,
            "description": (
                "How many times in a row an answer that could not be read, or whose every call was dropped, gets "
                "another step with a note saying why; then the turn ends."
            ),
        },
    },
}


class JsonToolcallEngine(ToolcallEngine):
    """The model answers with one fenced JSON block of actions (see docs/engines/toolcall-json.md)."""

    config_schema: ClassVar[Mapping[str, Any]] = TEXT_TOOLCALL_CONFIG_SCHEMA

    def create(self, ctx: Any, config: Mapping[str, Any]) -> TextToolcall:
        """Make the model wrapper and its hooks for one runtime."""
        options = resolve_options(self.config_schema, config, where="toolcall.json")
        # its prompt says text outside the block is shown to no one: replies go through send_message only
        return TextToolcall(ctx, JSON, options, text_is_reply=False)


class XmlToolcallEngine(ToolcallEngine):
    """The model writes Hermes-style ``<tool_call>`` blocks (see docs/engines/toolcall-xml.md)."""

    config_schema: ClassVar[Mapping[str, Any]] = TEXT_TOOLCALL_CONFIG_SCHEMA

    def create(self, ctx: Any, config: Mapping[str, Any]) -> TextToolcall:
        """Make the model wrapper and its hooks for one runtime."""
        return TextToolcall(ctx, XML, resolve_options(self.config_schema, config, where="toolcall.xml"))


@dataclass(eq=False)
class _Answered:
    """The parsed answer of one step, until its notes are in the log."""

    where: tuple[int, int] | None
    answer: ParsedAnswer
    noted: bool = False


class TextToolcall(AgentHooks):
    """One runtime's text-protocol engine: the wrapper's call site and the agent hooks (see the module docstring)."""

    def __init__(
        self, ctx: RuntimeContext, protocol: TextProtocol, options: Mapping[str, Any], *, text_is_reply: bool = True
    ):
        self.ctx = ctx
        self.text_is_reply = text_is_reply
        self.protocol = protocol
        self.retries = int(options["retries"])
        self.failures = 0  # answers in a row that could not be acted on
        self._where: tuple[int, int] | None = None
        self._answered: _Answered | None = None
        self._spare = count()
        self._token = uuid.uuid4().hex[:8]

    def wrap(self, model: LanguageModel) -> LanguageModel:
        """``model`` behind the protocol (the shared model itself is never changed)."""
        return TextProtocolModel(model, self.protocol, self)

    def hooks(self) -> AgentHooks:
        """The instance itself."""
        return self

    async def instructions(self) -> str | None:
        """None: the catalogue goes into the system prompt with each request, as the step's tools are known."""
        return None

    # -- the wrapper's call site --------------------------------------------------------------------------

    def call_ids(self) -> tuple[int, str]:
        """The step and id prefix of the call being made (outside a turn: a prefix unique to this instance)."""
        if self._where is None:
            return next(self._spare), f"call_x{self._token}"
        turn, step = self._where
        return step, f"call_t{turn}"

    def answered(self, answer: ParsedAnswer) -> None:
        """Remember the parsed answer of the current step, for its notes and the decision after it."""
        self._answered = _Answered(self._where, answer)

    # -- agent hooks --------------------------------------------------------------------------------------

    async def transform_entries(self, entries: list[Entry], step: Step) -> list[Entry]:
        """Log the last step's notes if no ``on_step_finish`` did, and show them in this step's window."""
        note = await self._log_note(step.turn.number)
        return [*entries, note] if note is not None else entries

    async def prepare_step(self, step: Step) -> None:
        """Point call ids at this step; a new turn starts with a clean count of failed answers."""
        self._where = (step.turn.number, step.index)
        if step.index == 1:
            self.failures = 0

    async def on_step_finish(self, step: Step) -> StepDecision:
        """Log the answer's notes; give an answer that could not be acted on another step (``retries``)."""
        answered = self._answered
        if answered is None or answered.where != (step.turn.number, step.index):
            return None
        await self._log_note(step.turn.number)
        answer = answered.answer
        if answer.tool_calls or answer.ends_turn:
            self.failures = 0
            return None
        self.failures += 1
        if self.failures > self.retries:
            self.ctx.logger.warning(
                "turn %s: %d answers in a row could not be acted on; the turn ends", step.turn.number, self.failures
            )
            return Stop("unreadable")
        return "continue"

    async def on_turn_finish(self, outcome: TurnOutcome) -> None:
        """Log notes no step logged (another hook ended the turn first); the next turn's model sees them."""
        await self._log_note(None)
        self._where = None

    async def _log_note(self, turn: int | None) -> Entry | None:
        answered = self._answered
        if answered is None or answered.noted or not answered.answer.notes:
            return None
        answered.noted = True
        text = f"{NOTE_HEADER}\n{answered.answer.feedback()}"
        marker = {"engine": self.protocol.name, "unreadable": not answered.answer.ok}
        return await self.ctx.log.append("message", {**Message.user(text).to_dict(), "toolcall": marker}, turn=turn)
