"""What a runtime offers its plugins, and what it expects of the instances they create.

A provider's ``create(ctx, config)`` is called once per runtime with a ``RuntimeContext`` (below). What it
returns depends on its group:

- a context engine returns a ``ContextEngineInstance``: an ``AgentHooks`` subclass that owns the window
  (``select_entries``) and the projection (``project``) of the agent, plus ``instructions()``;
- a wakeup engine returns a ``WakeupEngineInstance``: ``attach(ctx)`` subscribes to the runtime's bus and
  starts turns with ``ctx.agent.continue_()``; ``reconsider(entries)`` re-runs the decision after a crash;
- a toolcall engine returns a ``ToolcallEngineInstance``: ``wrap(model)`` gives the model the agent calls (the
  native engine returns it unchanged), ``hooks()`` optionally adds agent hooks (text protocols render history);
- an extension returns any object with ``@hookimpl`` methods (``ishiki_host.plugins.hookspecs``).

An engine instance may also define ``async def run(self, *, task_status)``: background work it owns (the
standard context engine writes its summaries there). The runtime starts it with ``await tg.start(instance.run)``
in the runtime's task group after building the agent, and cancels it when the runtime stops.

Bus events a runtime emits besides the agent's own (``turn.*``, ``tool.*``, ``message.appended``):
``message.sent`` (``channel_id``, ``sid``, ``ids``, ``text``, ``reply_to``) after a message went out through a
channel, so wakeup engines can charge a reply cost or start a cooldown.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import logging
    import random
    from pathlib import Path

    from ishiki_host.addresses.ids import Target
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.agent import Agent
    from ishiki_host.core.bus import EventBus
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.hooks import AgentHooks
    from ishiki_host.core.model import LanguageModel, Priority
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.core.turns import TurnHandle, TurnOutcome, TurnStatus
    from ishiki_host.jsontypes import Json
    from ishiki_host.plugins.services import HostServices
    from ishiki_host.resources import ResourceCenter
    from ishiki_host.sessions.manager import Sessions

__all__ = [
    "ContextEngineInstance",
    "Dispose",
    "RuntimeContext",
    "ToolcallEngineInstance",
    "TurnReport",
    "TurnView",
    "WakeupEngineInstance",
]

Dispose = Callable[[], Awaitable[object] | object]
"""Undo what ``attach`` set up; sync or async."""


class TurnView(Protocol):
    """The running turn, as plugins read it (``RuntimeContext.turn_state``); between turns, the state the next
    turn starts from (``number`` is ``None``)."""

    @property
    def trust(self) -> TrustLevel:
        """The turn's trust level: the lowest among the senders of its new messages (see docs/commands.md)."""
        ...

    @property
    def number(self) -> int | None:
        """The turn's number in the fact log; ``None`` between turns."""
        ...

    @property
    def inbound(self) -> Sequence[Entry]:
        """The inbound message entries new in this turn, oldest first."""
        ...

    @property
    def sent(self) -> Sequence[str]:
        """The platform ids of the messages the turn sent so far."""
        ...

    @property
    def extensions(self) -> tuple[str, ...] | None:
        """The extensions switched on for this turn (``/extensions``); ``None``: all of them."""
        ...

    def targets(self) -> set[Target]:
        """The channels the turn's inbound messages came from."""
        ...

    def latest_target(self) -> Target | None:
        """The channel of the turn's newest inbound message."""
        ...


@dataclass(frozen=True)
class TurnReport:
    """A finished turn: its end (``status``/``reason``/``error``), the inbound messages it answered and the
    platform ids of what it sent. ``outcome`` is the agent's own ``TurnOutcome`` (its ``usage``: the tokens of
    the turn's model calls); ``trust`` the level the turn ran at (what it produced is readable at that level
    and above). ``seconds`` is how long it ran, by the host's clock, from its start to its end; ``tools`` names
    the tool calls it made, in order (a tool called twice is named twice)."""

    turn: int
    status: TurnStatus
    reason: str
    error: BaseException | None
    inbound: tuple[Entry, ...]
    sent_ids: tuple[str, ...]
    outcome: TurnOutcome
    trust: TrustLevel = "owner"
    seconds: float = 0.0
    tools: tuple[str, ...] = ()


@runtime_checkable
class RuntimeContext(Protocol):
    """One runtime as its engines and extensions see it: everything a plugin may use, and nothing more.

    ``model`` is the profile's shared underlying model (never mutated; toolcall engines wrap it per runtime);
    ``models(ref)`` gives any other model of ``models.yaml`` (a group or ``provider:modelId``) for background
    calls such as judges and summarizers, which pass ``priority="background"`` in their requests.
    ``services`` is what the host shares with every runtime (``HostServices``: the memory database, the time
    zone, the host's runtimes, host-wide objects by typed key). ``turn_state`` is the running turn's trust
    level and the inbound messages new in it (what a turn's instructions are about). ``spawn`` runs background
    work (an update after a turn) off the path of turns, in the runtime's task group. ``notice`` is the host
    speaking in the chat (not the persona: nothing is recorded).

    What a turn may use is the host's to decide: there is no member to reorder or remove tools, change trust
    or switch plugins. A member an older host offered says what replaces it when used.
    """

    @property
    def key(self) -> RuntimeKey:
        """The runtime's address (``profile/sid/channel``, or ``profile/main`` in cross mode)."""
        ...

    @property
    def profile(self) -> Profile:
        """The profile this runtime serves."""
        ...

    @property
    def sid(self) -> str | None:
        """``platform:selfId`` of the runtime's channel; ``None`` in cross mode."""
        ...

    @property
    def channel_id(self) -> str | None:
        """The runtime's channel (``private:<id>`` / ``group:<id>``); ``None`` in cross mode."""
        ...

    @property
    def home(self) -> Path:
        """The runtime's data directory (``data/runtimes/...``); its fact log and resources live here."""
        ...

    @property
    def config_dir(self) -> Path:
        """The config directory the host runs."""
        ...

    @property
    def data_dir(self) -> Path:
        """The host's data directory (``data/`` unless ``ishiki.yaml`` says otherwise)."""
        ...

    @property
    def clock(self) -> Clock:
        """The host's clock."""
        ...

    @property
    def rng(self) -> random.Random:
        """A random source for this runtime, seeded from the host seed and the key when one is set."""
        ...

    @property
    def logger(self) -> logging.Logger:
        """A logger named after the runtime."""
        ...

    @property
    def log(self) -> FactLogProtocol:
        """The runtime's fact log (read it; append ``custom`` entries; never edit)."""
        ...

    @property
    def bus(self) -> EventBus:
        """The runtime's event bus (the agent's events and ``message.sent``)."""
        ...

    @property
    def agent(self) -> Agent:
        """The runtime's agent (``continue_`` starts a turn)."""
        ...

    @property
    def resources(self) -> ResourceCenter:
        """The runtime's resource center (extensions register schemes here)."""
        ...

    @property
    def model(self) -> LanguageModel:
        """The profile's shared underlying model."""
        ...

    @property
    def turn_state(self) -> TurnView:
        """The running turn: ``trust`` (its level), ``inbound`` (the messages new in it), ``number``."""
        ...

    @property
    def context_window(self) -> int:
        """The smallest context window among the members of the profile's model (tokens)."""
        ...

    @property
    def services(self) -> HostServices:
        """What the host shares with every runtime (``HostServices``)."""
        ...

    @property
    def sessions(self) -> Sessions:
        """The runtime's sessions: ``/clear``, ``/compact``, the window of the current session."""
        ...

    def models(self, ref: str) -> LanguageModel:
        """Another model of ``models.yaml`` by reference (a group or ``provider:modelId``)."""
        ...

    def spawn(self, fn: Callable[[], Awaitable[object]], *, name: str) -> None:
        """Run ``fn()`` in the runtime's task group, so a turn (or the next one) never waits for it.

        For background work such as a summary after a turn: ``ishiki_turn_finished`` runs before the agent
        takes its next turn, so work done there delays the next reply. The task is cancelled when the runtime
        stops; an exception it raises is logged with ``name``, never raised to anyone.
        """
        ...

    async def wake(
        self,
        prompt: str | None = None,
        *,
        priority: Priority = "interactive",
        info: Mapping[str, Json] | None = None,
        trust: TrustLevel | None = None,
    ) -> TurnHandle:
        """Start a turn now (queued behind a running one); a missing or blank prompt is "Continue.".

        ``info`` (JSON-able) is recorded in the turn's trigger (``turn.start``, ``Turn.triggers``), so hooks can
        tell which wake started a turn (heartbeats put ``{"heartbeat": <beat id>}`` there).

        The turn runs at most at ``trust``, and, when ``wake`` is called from a turn's work (one of its tool
        calls, a task started from one, its ``ishiki_turn_finished``), at most at that turn's level: work a
        turn schedules never runs above the turn that scheduled it. Record ``ToolContext.trust`` with work you
        keep for later (a queue, a table) and pass it here when it runs.
        """
        ...

    async def notice(self, text: str, target: Target | None = None) -> bool:
        """Send one line from the host (not the persona) to ``target``, by default where the persona replies;
        whether it went out. Notices are not recorded in the fact log."""
        ...


@runtime_checkable
class ContextEngineInstance(Protocol):
    """A context engine's per-runtime instance: agent hooks that own the window and the projection."""

    def hooks(self) -> AgentHooks:
        """The hooks the agent composes (usually the instance itself)."""
        ...

    async def instructions(self) -> str | None:
        """This turn's context section of the system prompt (``None`` for none)."""
        ...


@runtime_checkable
class WakeupEngineInstance(Protocol):
    """A wakeup engine's per-runtime instance: it decides when a turn starts."""

    def attach(self, ctx: RuntimeContext) -> Dispose:
        """Subscribe to the runtime (``ctx.bus``) and return what undoes it."""
        ...

    async def reconsider(self, entries: Sequence[Entry]) -> None:
        """Re-run the decision for inbound message entries a crashed turn left unanswered."""
        ...


@runtime_checkable
class ToolcallEngineInstance(Protocol):
    """A toolcall engine's per-runtime instance: how tools reach the model inside one step.

    An instance may set ``text_is_reply = False`` when the text its model writes outside tool calls is not
    meant for the person (the ``json`` protocol's prose): the runtime then never sends it as a reply, whatever
    the profile's ``reply_with_text`` says.
    """

    def wrap(self, model: LanguageModel) -> LanguageModel:
        """The model the agent calls (native returns ``model``; text protocols and pipelines wrap it)."""
        ...

    def hooks(self) -> AgentHooks | None:
        """Extra agent hooks (``None`` for none). They must not own ``select_entries`` or ``project``."""
        ...

    async def instructions(self) -> str | None:
        """This turn's section of the system prompt from this engine (``None`` for none)."""
        ...
