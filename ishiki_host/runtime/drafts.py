"""Streamed replies: the text of a step shown in its channel while the model writes it, then delivered once.

``DraftRelay`` is the runner's ``stream_for`` (``ishiki_host.core.runner``). For a step of an interactive turn
whose text would be the reply (profile ``stream_replies`` and ``reply_with_text`` on, the toolcall engine's
text meant for the person) going to a connection that implements ``DraftingConnection``, it opens an
``OpenDraft`` and returns its ``DraftSink``, which the runner feeds with text deltas. Any other step gets
``None``, and its model is called with ``generate`` as before, so a connection without drafts sees exactly
what it always saw.

An ``OpenDraft`` keeps the text so far and pushes it with ``show_draft`` from one background task (started
with the first visible text): whenever a call returns, the newest text goes next and the texts in between
are skipped, so a slow connection throttles the draft simply by taking its time; two calls never overlap.
It ends exactly once:

- ``finish(text)`` (from ``RuntimeOutbox.send`` for the ``reply_with_text`` message): cancels the call in
  flight (a connection shields its platform call and lets its pacing wait be cut, so the final text is not
  held back by a throttle) and waits for it to end, then delivers the final text with ``finish_draft``
  instead of ``send``, even when nothing was shown yet (the connection decides how);
- ``drop(why)``: a tool call started (``tools``, at once from the stream), the step ended without a reply
  (``tools``), or the turn ended ``failed`` / ``aborted`` (the relay listens to the turn's end on the bus,
  in the ``track`` phase, so the draft is taken back before the apology goes out). A call in flight is
  cancelled first, and ``drop_draft`` is called only when something was shown.

Odd ends: a step another hook decided without the runtime's reply (a toolcall engine retrying an answer it
could not read) drops its draft as ``tools`` when the next step starts (``RuntimeHooks.prepare_step``), or as
``aborted`` when that ends the turn ``done``; a reply that goes to another channel than its draft (cross
mode, a message joined from elsewhere) drops it as ``aborted`` and is sent as usual.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ishiki_host.channels.base import Draft, DraftingConnection

if TYPE_CHECKING:
    from ishiki_host.addresses.ids import Target
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.channels.base import DraftEnd, SendResult
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.bus import BusEvent, EventBus
    from ishiki_host.core.turns import Step, TurnOutcome
    from ishiki_host.runtime.outbound import RuntimeOutbox

__all__ = ["Background", "DraftRelay", "DraftSink", "OpenDraft"]

logger = logging.getLogger(__name__)

Background = Callable[[Coroutine[Any, Any, None]], None]
"""Runs a coroutine in the runtime's task group (``Lifecycle.background``; closed unrun while it stops)."""

_TURN_ENDS = ("turn.done", "turn.failed", "turn.aborted")
_WHY: dict[str, DraftEnd] = {"failed": "failed", "aborted": "aborted"}


class OpenDraft:
    """One step's draft (see the module docstring): fed by the runner, ended by the outbox or the relay."""

    def __init__(
        self,
        connection: DraftingConnection,
        target: Target,
        draft_id: str,
        step: tuple[int, int],
        background: Background,
    ):
        self.connection = connection
        self.target = target
        self.id = draft_id
        self.step = step
        self._background = background
        self._pieces: list[str] = []
        self._shown = ""
        self._showing = False  # a show_draft call was made: the connection may show something
        self._state: Literal["open", "ending", "ended"] = "open"
        self._pusher: anyio.Event | None = None  # set once the pusher has exited
        self._pusher_drops: DraftEnd | None = None  # a tool call asked the pusher to drop the draft
        self._wake = anyio.Event()
        self._call = anyio.CancelScope()
        self._ended = anyio.Event()

    @property
    def open(self) -> bool:
        """Neither finished nor dropped, nor on its way to either."""
        return self._state == "open"

    @property
    def written(self) -> str:
        """Everything written so far."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    # -- what the runner feeds -------------------------------------------------------------------------

    def add_text(self, delta: str) -> None:
        """Append a piece of text; the pusher shows it (it starts with the first visible text)."""
        if self._state != "open":
            return
        self._pieces.append(delta)
        if self._pusher is None:
            if not delta.strip() and not self.written.strip():
                return  # whitespace alone is nothing to show
            self._start_pusher()
        self._wake.set()

    def tool_call(self) -> None:
        """A tool call started: the text will not be the reply, so the draft is taken back now."""
        if self._state != "open":
            return
        self._state = "ending"
        if self._pusher is None or self._pusher.is_set():
            self._end()  # nothing was shown, or the pusher is gone: nothing to take back
            return
        self._pusher_drops = "tools"  # the pusher makes the call: calls for one draft never overlap
        self._call.cancel()
        self._wake.set()

    # -- the end ---------------------------------------------------------------------------------------

    async def finish(self, text: str, reply_to: str | None = None) -> SendResult:
        """Deliver the reply with ``finish_draft``, once the call in flight returned."""
        if self._state != "open":
            raise RuntimeError(f"draft {self.id} has ended; it cannot be finished")
        self._state = "ending"
        try:
            await self._stop_pusher(cancel=True)  # the final text replaces whatever the call in flight shows
            draft = Draft(self.id, self._shown, reply_to)
            return await self.connection.finish_draft(self.target.channel_id, draft, text)
        finally:
            self._end()

    async def drop(self, why: DraftEnd) -> None:
        """Take the draft back (``drop_draft`` when something was shown); once ending, waits for the end."""
        if self._state != "open":
            await self._ended.wait()
            return
        self._state = "ending"
        try:
            await self._stop_pusher(cancel=True)
            if self._showing:
                await self.connection.drop_draft(self.target.channel_id, Draft(self.id, self._shown), why)
        except Exception:
            logger.warning("dropping draft %s in %s failed", self.id, self.target, exc_info=True)
        finally:
            self._end()

    def _end(self) -> None:
        self._state = "ended"
        self._ended.set()

    # -- the pusher ------------------------------------------------------------------------------------

    def _start_pusher(self) -> None:
        exited = self._pusher = anyio.Event()
        work = self._push(exited)
        self._background(work)
        if inspect.getcoroutinestate(work) == inspect.CORO_CLOSED:
            exited.set()  # the runtime is stopping and started nothing: the reply still goes out at the end

    async def _stop_pusher(self, *, cancel: bool) -> None:
        pusher = self._pusher
        if pusher is None:
            return
        if cancel:
            self._call.cancel()  # a draft being taken back need not finish showing
        self._wake.set()
        await pusher.wait()

    async def _push(self, exited: anyio.Event) -> None:
        """Show the newest text whenever the previous call returned, until the draft ends."""
        try:
            while self._state == "open":
                text = self.written
                if text == self._shown:
                    await self._wake.wait()
                    self._wake = anyio.Event()
                    continue
                self._showing = True
                self._call = anyio.CancelScope()
                with self._call:
                    await self.connection.show_draft(self.target.channel_id, Draft(self.id, text))
                if self._call.cancel_called:
                    break
                self._shown = text
            if self._pusher_drops is not None and self._showing:
                await self.connection.drop_draft(self.target.channel_id, Draft(self.id, self._shown), "tools")
        except Exception:
            logger.warning("draft %s in %s failed; the reply still goes out", self.id, self.target, exc_info=True)
        finally:
            exited.set()
            if self._pusher_drops is not None:
                self._end()


class DraftRelay:
    """The drafts of one runtime (see the module docstring); ``for_step`` is the agent's ``stream_for``."""

    def __init__(
        self,
        key: RuntimeKey,
        profile: Profile,
        outbox: RuntimeOutbox,
        bus: EventBus,
        background: Background,
        *,
        text_is_reply: bool = True,
    ):
        self._key = key
        self._outbox = outbox
        self._background = background
        self._enabled = profile.stream_replies and profile.reply_with_text and text_is_reply
        self._current: OpenDraft | None = None
        self._checked: tuple[object, DraftingConnection | None] | None = None  # the last connection asked
        if self._enabled:
            for name in _TURN_ENDS:
                bus.subscribe(name, self._turn_ended, phase="track")

    def for_step(self, step: Step) -> DraftSink | None:
        """The sink of ``step`` when its text would be the reply to a drafting connection, else ``None``."""
        if not self._enabled or step.turn.priority != "interactive":
            return None
        target = self._outbox.default_target()
        connection = self._drafting(self._outbox.connection(target)) if target is not None else None
        if target is None or connection is None:
            return None
        stale = self._current
        if stale is not None:  # RuntimeHooks.prepare_step drops it first; this only guards another owner
            self._background(stale.drop("tools"))
        draft_id = f"{self._key}#{step.turn.number}.{step.index}"
        where = (step.turn.number, step.index)
        draft = self._current = OpenDraft(connection, target, draft_id, where, self._background)
        return DraftSink(draft)

    def _drafting(self, connection: object) -> DraftingConnection | None:
        """``connection`` if it is a ``DraftingConnection``, else ``None``; remembered for the last one asked (a
        protocol's ``isinstance`` looks every member up, and every step asks about the same connection)."""
        checked = self._checked
        if checked is None or checked[0] is not connection:
            drafting = connection if isinstance(connection, DraftingConnection) else None
            checked = self._checked = (connection, drafting)
        return checked[1]

    def take(self, step: Step) -> OpenDraft | None:
        """The draft of ``step``, handed to whoever ends it (``None``: the step streamed none). It may be
        ending already (a tool call started): ``drop`` then waits until it has ended."""
        draft = self._current
        if draft is None or draft.step != (step.turn.number, step.index):
            return None
        self._current = None
        return draft

    async def drop_stale(self) -> None:
        """Drop the draft an earlier step left open (another hook decided that step without a reply)."""
        draft, self._current = self._current, None
        if draft is not None:
            await draft.drop("tools")

    async def _turn_ended(self, event: BusEvent) -> None:
        outcome: TurnOutcome = event["outcome"]
        draft, self._current = self._current, None
        if draft is not None:
            await draft.drop(_WHY.get(outcome.status, "aborted"))


class DraftSink:
    """The ``StepStream`` the runner feeds with one step's text and tool-call starts."""

    __slots__ = ("_draft",)

    def __init__(self, draft: OpenDraft):
        self._draft = draft

    def text(self, delta: str) -> None:
        """A piece of the reply."""
        self._draft.add_text(delta)

    def tool_call(self) -> None:
        """A tool call started."""
        self._draft.tool_call()
