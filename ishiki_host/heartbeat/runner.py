"""The host's ``BeatRunner``: a beat with a target wakes its runtime; one without is a background model call.

- **With a target**, ``runtime_for(profile, sid, channel)`` gives (and spawns) the runtime, and
  ``runtime.wake(prompt, priority="background", info={"heartbeat": <beat id>}, trust=beat.trust)`` queues the
  beat's turn, at most at the level of the turn that made the beat; the run lasts until that turn ends. Its
  output is what the turn sent (the texts of its ``message.sent`` events); a turn that failed, was aborted or
  was dropped fails the run. The ``heartbeat`` key of the turn's trigger is how
  the heartbeat extension recognises a beat's own turn (it offers no beat tools there). A cross-mode runtime
  serves many chats, so its prompt also names the chat to speak in.
- **Without a target**, the beat is one background call (``priority="background"``, no tools) to the model
  ``BeatRuntimes.background_model`` picks, with the persona as the system prompt when there is one; the reply's
  text is the output.

Whatever goes wrong raises (``BeatRunFailed``, a ``ModelError``, ``AgentStopped``...): the scheduler records
the run as failed and the beat runs again at its next slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.errors import BeatRunFailed

if TYPE_CHECKING:
    from ishiki_host.core.bus import BusEvent
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.core.turns import TurnOutcome
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.store.repos.beat_types import Beat, BeatTarget

__all__ = ["BEAT_TRIGGER", "BeatRuntimes", "RuntimeBeatRunner", "is_beat_turn"]

BEAT_TRIGGER = "heartbeat"
"""The key of a beat's wake in its turn's trigger (``{"by": "continue", "reason": "wake", "heartbeat": id}``)."""


def is_beat_turn(triggers: list[dict[str, Any]]) -> bool:
    """Whether a turn with these triggers (``Turn.triggers``) was started by a beat."""
    return any(BEAT_TRIGGER in trigger for trigger in triggers)


class BeatRuntimes(Protocol):
    """What the runner needs of the host."""

    async def runtime_for(
        self, profile_id: str, sid: str | None = None, channel_id: str | None = None
    ) -> RuntimeContext:
        """The runtime that speaks at an address (spawned if needed); ``AgentStopped`` if its profile is not active."""
        ...

    def background_model(self, beat: Beat) -> tuple[LanguageModel, str | None]:
        """The model and system prompt of a beat without a target; ``BeatRunFailed`` when there is none."""
        ...


class RuntimeBeatRunner:
    """Runs beats on a host's runtimes and models (see the module docstring)."""

    def __init__(self, host: BeatRuntimes, *, max_tokens: int | None = None):
        self._host = host
        self._max_tokens = max_tokens

    async def run(self, beat: Beat, prompt: str) -> str:
        """Run ``beat`` with ``prompt``; the text it produced."""
        if beat.target is not None:
            return await self._wake(beat, beat.target, prompt)
        return await self._call(beat, prompt)

    async def _wake(self, beat: Beat, target: BeatTarget, prompt: str) -> str:
        runtime = await self._host.runtime_for(target.profile, target.sid, target.channel)
        if runtime.key.mode == "cross":
            prompt += (
                f"\n\nSpeak in channel {target.channel} of {target.sid}: give send_message the target "
                f'{{"sid": "{target.sid}", "channelId": "{target.channel}"}}.'
            )
        sent: list[tuple[int | None, str]] = []

        def on_sent(event: BusEvent) -> None:
            sent.append((runtime.turn_state.number, str(event["text"])))

        unsubscribe = runtime.bus.subscribe("message.sent", on_sent)
        try:
            handle = await runtime.wake(prompt, priority="background", info={BEAT_TRIGGER: beat.id}, trust=beat.trust)
            outcome = await handle.outcome()
        finally:
            unsubscribe()
        texts = [text for number, text in sent if number == handle.number]
        return _output(outcome, texts, str(runtime.key))

    async def _call(self, beat: Beat, prompt: str) -> str:
        model, system = self._host.background_model(beat)
        messages = (*((Message.system(system),) if system else ()), Message.user(prompt))
        request = ModelRequest(messages=messages, max_tokens=self._max_tokens, priority="background")
        result = await model.generate(request)
        text = result.text.strip()
        if not text:
            raise BeatRunFailed(f"{model.name} answered nothing")
        return text


def _output(outcome: TurnOutcome, texts: list[str], where: str) -> str:
    if outcome.status == "done":
        return (
            "\n".join(texts) if texts else f"(turn {outcome.turn} in {where} sent nothing; it ended: {outcome.reason})"
        )
    error = f": {type(outcome.error).__name__}: {outcome.error}" if outcome.error is not None else ""
    raise BeatRunFailed(f"turn {outcome.turn} in {where} {outcome.status} ({outcome.reason}){error}")
