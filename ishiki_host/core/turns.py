"""The objects of a turn: what the agent hands to hooks and returns to callers.

A turn is a run of steps started by ``Agent.continue_`` (or a triggering ``send``); a step is one model call
followed by its tool calls. ``TurnSetup`` is what the owner's ``setup`` callable returns at the start of each
turn; ``Turn`` and ``Step`` are live views hooks may read (and, in ``prepare_step``, narrow); ``TurnOutcome``
is how a turn ended; ``TurnHandle`` and ``Delivery`` are what ``continue_`` and ``send`` return.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ishiki_host.core.model import ModelRequest, ModelResult, Priority, ToolChoice, Usage
from ishiki_host.core.tools import Tool, ToolResult, TrustLevel
from ishiki_host.errors import ModelError
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.messages import Message, ToolCall

__all__ = [
    "CallContext",
    "Delivery",
    "Recovery",
    "Step",
    "ToolCallRecord",
    "Turn",
    "TurnHandle",
    "TurnOutcome",
    "TurnSetup",
    "TurnStatus",
]

TurnStatus = Literal["done", "failed", "aborted", "dropped"]
"""``dropped``: the turn was queued but the agent stopped before it started (nothing was logged)."""


@dataclass(frozen=True, slots=True)
class TurnSetup:
    """A turn's system prompt, tool surface and call settings, assembled afresh for every turn.

    Tools above ``trust`` are neither offered to the model nor run (a call to one is answered as an
    unknown tool and emitted as ``tool.blocked``).
    """

    system: str = ""
    tools: Sequence[Tool] = ()
    trust: TrustLevel = "owner"
    tool_choice: ToolChoice = "auto"
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(eq=False)
class Turn:
    """A running turn. ``triggers`` says what started it (see docs/factlog.md, ``turn.start``).

    ``steps`` is emptied once the turn has ended (its ``TurnOutcome`` holds the count and the last result): a
    step refers to its turn, so a finished turn that kept them would be freed only by the garbage collector.
    """

    number: int
    priority: Priority
    prompt: str | None = None
    triggers: list[dict[str, Json]] = field(default_factory=list)
    setup: TurnSetup | None = None
    steps: list[Step] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    @property
    def trust(self) -> TrustLevel:
        """The turn's trust level now (its setup's, which a message joining the turn may lower; ``owner``
        before the setup, as an agent without one runs)."""
        return self.setup.trust if self.setup is not None else "owner"


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of a step and how it was answered.

    ``status``: ``ran`` (the handler returned), ``failed`` (the handler raised or timed out), ``blocked`` (a
    hook or the trust level refused it), ``replaced`` (a hook supplied the result), ``rejected`` (unknown
    tool, unparseable or schema-violating arguments), ``aborted`` (the turn ended before it ran or finished).
    """

    call: ToolCall
    tool: Tool | None
    result: ToolResult
    status: Literal["ran", "failed", "blocked", "replaced", "rejected", "aborted"]
    entry: Entry | None = None


@dataclass(eq=False)
class Step:
    """One step of a turn. ``prepare_step`` hooks may narrow ``tools`` and change the call settings."""

    turn: Turn
    index: int
    tools: list[Tool]
    tool_choice: ToolChoice = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    entries: list[Entry] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    request: ModelRequest | None = None
    result: ModelResult | None = None
    calls: list[ToolCallRecord] = field(default_factory=list)
    appended: list[Entry] = field(default_factory=list)
    joined: list[Entry] = field(default_factory=list)

    def tool(self, name: str) -> Tool | None:
        """The active tool called ``name``, if any."""
        return next((tool for tool in self.tools if tool.name == name), None)


@dataclass(frozen=True, slots=True)
class CallContext:
    """The ``ToolContext`` the agent passes to tool handlers.

    ``trust`` is the level of the turn making the call when it was made (a context made by hand, as in a
    test, says ``owner``): what a tool that schedules work for later records, so that work never runs above it.
    """

    call: ToolCall
    turn: int | None
    step: int
    trust: TrustLevel = "owner"


@dataclass(frozen=True)
class TurnOutcome:
    """How a turn ended.

    ``reason``: for ``done`` one of finish | sent | no_tool_calls | max_steps | stop_hook (or a hook's own);
    for ``failed`` the error class name; for ``aborted`` the abort reason. ``error`` is the exception of a
    failed turn (a ``ContextLengthExceeded`` lets the owner compact and retry). ``unseen`` are entries that
    joined the turn after its last model call: the turn never saw them, so the owner re-evaluates them.
    """

    turn: int
    status: TurnStatus
    reason: str
    steps: int = 0
    error: BaseException | None = None
    result: ModelResult | None = None
    usage: Usage = field(default_factory=Usage)
    unseen: tuple[Entry, ...] = ()

    @property
    def kind(self) -> str | None:
        """For a turn failed by a model error, its kind (``context_length``, ``rate_limited``, ...)."""
        return self.error.kind if isinstance(self.error, ModelError) else None


class TurnHandle:
    """A queued turn: its number now, its outcome later (``await handle`` or ``await handle.outcome()``)."""

    def __init__(self, number: int, priority: Priority):
        self.number = number
        self.priority: Priority = priority
        self._done = anyio.Event()
        self._outcome: TurnOutcome | None = None

    @property
    def done(self) -> bool:
        """Whether the turn has ended (or was dropped)."""
        return self._done.is_set()

    async def outcome(self) -> TurnOutcome:
        """Wait for the turn to end."""
        await self._done.wait()
        assert self._outcome is not None
        return self._outcome

    def __await__(self) -> Generator[Any, None, TurnOutcome]:
        return self.outcome().__await__()

    def _resolve(self, outcome: TurnOutcome) -> None:
        if not self._done.is_set():
            self._outcome = outcome
            self._done.set()

    def __repr__(self) -> str:
        return f"<TurnHandle turn={self.number} done={self.done}>"


class Delivery:
    """An entry handed to ``Agent.send``: ``await delivery`` returns the entry once it is durable.

    A channel confirms the platform's update only after this, so nothing confirmed is ever lost. If the
    entry could not be written, awaiting raises the ``FactLogError``.
    """

    def __init__(self, data: dict[str, Json], *, trigger: bool, mode: str):
        self.data = data
        self.trigger = trigger
        self.mode = mode
        self._done = anyio.Event()
        self._entry: Entry | None = None
        self._error: BaseException | None = None

    @property
    def entry(self) -> Entry | None:
        """The stored entry once durable, else ``None``."""
        return self._entry

    @property
    def done(self) -> bool:
        """Whether the entry was stored (or failed to be)."""
        return self._done.is_set()

    async def wait(self) -> Entry:
        """Wait until the entry is durable and return it."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._entry is not None
        return self._entry

    def __await__(self) -> Generator[Any, None, Entry]:
        return self.wait().__await__()

    def _resolve(self, entry: Entry) -> None:
        self._entry = entry
        self._done.set()

    def _fail(self, error: BaseException) -> None:
        self._error = error
        self._done.set()


@dataclass(frozen=True)
class Recovery:
    """What the agent found and repaired when it loaded its log, before the first turn.

    ``aborted_turn`` is the turn the host left unfinished: it died in it (``crashed``; closed now) or it
    stopped during it (closed then, ``turn.aborted`` marked ``resume``); ``None`` when the last turn ended on
    its own. ``repaired`` are the entries written now (error results for tool calls that had none, then
    ``turn.aborted`` with reason ``crash``). ``unanswered`` are the inbound user messages since the last turn
    that ended on its own, for which the owner re-runs its wake decision (empty when ``aborted_turn`` is
    ``None``). ``last_turn`` is the highest turn number in the log.
    """

    aborted_turn: int | None = None
    crashed: bool = False
    repaired: tuple[Entry, ...] = ()
    unanswered: tuple[Entry, ...] = ()
    last_turn: int = 0
