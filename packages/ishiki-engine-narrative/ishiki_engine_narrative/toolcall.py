"""The ``narrative`` toolcall engine: the Narrator, the Action Decoder and the Replyer inside one model step.

``wrap(model)`` gives the agent a ``LanguageModel`` whose every call runs the pipeline (``pipeline``) and
returns a standard ``ModelResult``; the host still runs the tools and stores everything. ``hooks()`` tell the
pipeline which turn and step it serves and run one more step after an Action Decoder failure, so the
Narrator hears about it. The current story is read from the fact log (the newest ``narrative`` entry the
context engine appended): the two engines share nothing else.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host import AgentHooks, StreamDone, TextDelta, ToolCallDelta, ToolcallEngine

from ishiki_engine_narrative.config import TOOLCALL_SCHEMA, resolve_options, role_settings
from ishiki_engine_narrative.pipeline import Pipeline, StepState

if TYPE_CHECKING:
    from ishiki_host import LanguageModel, ModelRequest, ModelResult, RuntimeContext, Step, StepDecision, StreamEvent

    from ishiki_engine_narrative.config import RoleSettings

__all__ = ["NarrativeModel", "NarrativeToolcall", "NarrativeToolcallEngine"]

ROLES = ("narrator", "decoder", "replyer")


class NarrativeModel:
    """The model the agent calls: one pipeline run per request, over ``inner`` (the profile's model)."""

    def __init__(self, toolcall: NarrativeToolcall, inner: LanguageModel):
        self._toolcall = toolcall
        self.inner = inner

    @property
    def name(self) -> str:
        """``narrative:<inner model>``."""
        return f"narrative:{self.inner.name}"

    async def generate(self, request: ModelRequest) -> ModelResult:
        """Run the Narrator, then the Action Decoder or the Replyer; the step's result."""
        return await self._toolcall.pipeline(self.inner).run(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """``generate``, delivered as stream events once the pipeline has finished (its roles do not stream)."""
        result = await self.generate(request)
        for event in _events(result):
            yield event


def _events(result: ModelResult) -> list[StreamEvent]:
    events: list[StreamEvent] = [TextDelta(result.text)] if result.text else []
    for index, call in enumerate(result.tool_calls):
        arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
        events.append(ToolCallDelta(index, id=call.id, name=call.name, arguments=arguments))
    events.append(StreamDone(result))
    return events


class _StepHooks(AgentHooks):
    """Tell the pipeline its turn and step; after an Action Decoder failure, run one more step."""

    def __init__(self, state: StepState, retries: int):
        self._state = state
        self._retries = retries

    async def prepare_step(self, step: Step) -> None:
        self._state.begin(step)

    async def on_step_finish(self, step: Step) -> StepDecision:
        if self._state.decoder_failed and self._state.decoder_failures <= self._retries:
            return "continue"
        return None


class NarrativeToolcall:
    """One runtime's narrative toolcall engine."""

    def __init__(self, ctx: RuntimeContext, roles: Mapping[str, RoleSettings], options: Mapping[str, Any]):
        self._ctx = ctx
        self.roles = dict(roles)
        self.state = StepState()
        self._options = options
        self._hooks = _StepHooks(self.state, int(options["decoder"]["retries"]))

    def wrap(self, model: LanguageModel) -> LanguageModel:
        """The pipeline over ``model`` (roles without a model of their own use it)."""
        return NarrativeModel(self, model)

    def hooks(self) -> AgentHooks:
        """Step bookkeeping (they own neither the window nor the projection)."""
        return self._hooks

    async def instructions(self) -> str | None:
        """Nothing: each role gets its own prompt, and the story comes from the context engine."""
        return None

    def pipeline(self, model: LanguageModel) -> Pipeline:
        """A pipeline over the runtime's fact log as it is now."""
        return Pipeline(
            self._ctx.log,
            self.roles,
            model,
            self.state,
            max_result_chars=int(self._options["max_result_chars"]),
            record_prompts=bool(self._options["record_prompts"]),
        )


class NarrativeToolcallEngine(ToolcallEngine):
    """Runs a Narrator (act, reply, wait or finish), an Action Decoder (tool calls over the real tool schemas)
    and a Replyer (the message in the persona's voice) inside one model step, and returns a standard result.

    Used together with the ``narrative`` context engine. Each role may name its own model and prompt file.
    """

    config_schema: ClassVar[Mapping[str, Any]] = TOOLCALL_SCHEMA
    requires: ClassVar[tuple[str, ...]] = ("ishiki.engine.context.narrative",)

    def create(self, ctx: Any, config: Mapping[str, Any]) -> NarrativeToolcall:
        """Make the engine instance for one runtime (``ConfigError`` for an unknown model or prompt file)."""
        options = resolve_options(TOOLCALL_SCHEMA, config, "toolcall.narrative")
        roles = {role: role_settings(ctx, options[role], role, f"toolcall.narrative.{role}") for role in ROLES}
        return NarrativeToolcall(ctx, roles, options)
