"""One model step of the narrative toolcall engine: Narrator, then Action Decoder or Replyer, as one result.

The host sees an ordinary ``ModelResult``: tool calls for ``act`` (the Decoder's, checked against the real
schemas), a ``send_message`` call for ``reply`` (or the text, when the step offers no ``send_message``), a
``wait`` / ``finish`` call for those intents, and nothing when a role failed:

- the Narrator failed (model error, not the strict JSON): the step behaves as ``wait``;
- the Action Decoder failed: no call; the failure is kept and shown to the Narrator at the next step (the
  engine's hooks run that step, up to ``decoder.retries`` times in a row);
- the Replyer failed: nothing is sent.

Every role call is recorded in the fact log (``records``). The result's text is empty except for a reply
without ``send_message``: a host that sends plain text (``reply_with_text``) must never send a role's notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ishiki_host import ModelResult, ToolCall
from ishiki_host.errors import ModelError

from ishiki_engine_narrative.errors import RoleOutputInvalid
from ishiki_engine_narrative.records import Recorder, add_usage, describe_error
from ishiki_engine_narrative.roles import (
    SEND,
    Scene,
    check_calls,
    control_call,
    decoder_request,
    narrator_request,
    reply_messages,
    replyer_request,
)
from ishiki_engine_narrative.story import Decision, Narrative, parse_decision
from ishiki_engine_narrative.transcript import render_story, render_transcript, strip_story_block
from ishiki_engine_narrative.window import latest_narrative

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ishiki_host import FactLogProtocol, LanguageModel, ModelRequest, Step, Usage

    from ishiki_engine_narrative.config import RoleSettings

__all__ = ["Pipeline", "StepState"]


@dataclass
class StepState:
    """What the pipeline carries from one step to the next within a runtime (the engine's hooks update it)."""

    turn: int | None = None
    step: int | None = None
    failure: str | None = None  # shown to the Narrator at the next step, then cleared
    decoder_failures: int = 0  # in a row
    decoder_failed: bool = False  # at the current step

    def begin(self, step: Step) -> None:
        """A step of the agent starts (called from ``prepare_step``)."""
        if step.index == 1 or step.turn.number != self.turn:
            self.decoder_failures = 0
        self.turn, self.step, self.decoder_failed = step.turn.number, step.index, False


@dataclass
class _Run:
    """One pipeline run: the models that answered and their usage."""

    usages: list[Usage] = field(default_factory=list)
    model: str | None = None

    def answered(self, result: ModelResult, model: LanguageModel) -> None:
        self.usages.append(result.usage)
        self.model = result.model or model.name


class Pipeline:
    """Runs the roles for one request; ``model`` answers for every role without a model of its own."""

    def __init__(
        self,
        log: FactLogProtocol,
        roles: Mapping[str, RoleSettings],
        model: LanguageModel,
        state: StepState,
        *,
        max_result_chars: int,
        record_prompts: bool,
    ):
        self._log = log
        self._roles = roles
        self._model = model
        self._state = state
        self._max_result_chars = max_result_chars
        self._record_prompts = record_prompts

    async def run(self, request: ModelRequest) -> ModelResult:
        """The step's result (see the module docstring)."""
        entry = await self._log.read_back(latest_narrative)
        story = Narrative.from_entry(entry) if entry is not None else None
        narrative_id = entry.id if entry is not None else None
        recorder = Recorder(self._log, self._state.turn, self._state.step, narrative_id, self._record_prompts)
        scene = self._scene(request, story)
        run = _Run()
        decision = await self._narrate(scene, recorder, run)
        calls: tuple[ToolCall, ...] = ()
        text = ""
        if decision.intent == "act":
            calls = await self._decode(scene, decision, recorder, run)
        elif decision.intent == "reply":
            calls, text = await self._reply(scene, decision, recorder, run)
        else:
            call = control_call(decision, scene, self._call_id(1))
            calls = (call,) if call is not None else ()
        return ModelResult(
            text=text,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            usage=add_usage(run.usages),
            model=run.model or self._model.name,
        )

    def _scene(self, request: ModelRequest, story: Narrative | None) -> Scene:
        messages = list(request.messages)
        rules = strip_story_block(messages.pop(0).text) if messages and messages[0].role == "system" else ""
        failure, self._state.failure = self._state.failure, None
        tools = () if request.tool_choice == "none" else request.tools
        events = render_transcript(messages, max_result_chars=self._max_result_chars)
        return Scene(rules, render_story(story), events, tools, request.priority, failure)

    def _model_of(self, role: str) -> LanguageModel:
        return self._roles[role].model or self._model

    def _call_id(self, number: int) -> str:
        return f"nar-{self._state.turn or 0}-{self._state.step or 0}-{number}"

    async def _narrate(self, scene: Scene, recorder: Recorder, run: _Run) -> Decision:
        request = narrator_request(self._roles["narrator"], scene)
        model = self._model_of("narrator")
        result: ModelResult | None = None
        try:
            result = await model.generate(request)
            run.answered(result, model)
            decision = parse_decision(result.text)
        except (ModelError, RoleOutputInvalid) as exc:
            await recorder.role("narrator", _who(result, model), request, result=result, error=exc, fallback="wait")
            return Decision("wait", f"the Narrator failed ({describe_error(exc)})")
        parsed: dict[str, Any] = decision.to_dict()
        if scene.failure:
            parsed["told"] = scene.failure
        await recorder.role("narrator", _who(result, model), request, result=result, parsed=parsed)
        return decision

    async def _decode(self, scene: Scene, decision: Decision, recorder: Recorder, run: _Run) -> tuple[ToolCall, ...]:
        request = decoder_request(self._roles["decoder"], scene, decision)
        model = self._model_of("decoder")
        result: ModelResult | None = None
        try:
            if not scene.action_tools:
                raise RoleOutputInvalid("the Narrator chose act, but this step offers no tool to act with")
            result = await model.generate(request)
            run.answered(result, model)
            calls = check_calls(result.tool_calls, scene.action_tools, prefix=self._call_id(0))
        except (ModelError, RoleOutputInvalid) as exc:
            self._state.decoder_failed = True
            self._state.decoder_failures += 1
            self._state.failure = f"You chose act ({decision.rationale}), but it could not be done: {exc}"
            await recorder.role("decoder", _who(result, model), request, result=result, error=exc, fallback="report")
            return ()
        self._state.decoder_failures = 0
        await recorder.role("decoder", _who(result, model), request, result=result, parsed=[c.to_dict() for c in calls])
        return calls

    async def _reply(
        self, scene: Scene, decision: Decision, recorder: Recorder, run: _Run
    ) -> tuple[tuple[ToolCall, ...], str]:
        request = replyer_request(self._roles["replyer"], scene, decision)
        model = self._model_of("replyer")
        send = scene.tool(SEND)
        result: ModelResult | None = None
        try:
            result = await model.generate(request)
            run.answered(result, model)
            messages = reply_messages(result.text, send)
        except (ModelError, RoleOutputInvalid) as exc:
            await recorder.role("replyer", _who(result, model), request, result=result, error=exc, fallback="silent")
            return (), ""
        await recorder.role("replyer", _who(result, model), request, result=result, parsed={"messages": messages})
        if send is None:
            return (), "\n\n".join(messages)
        return (ToolCall(self._call_id(1), SEND, {"messages": messages}),), ""


def _who(result: ModelResult | None, model: LanguageModel) -> str:
    """Who answered: the model the result names (a group's member), else the model asked."""
    return result.model if result is not None and result.model else model.name
