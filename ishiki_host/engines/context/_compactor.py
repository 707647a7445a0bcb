"""The background compaction of the ``standard`` context engine.

Window selection notes where the window should be compacted (``note``); after the turn (``after_turn``) the
compactor asks its task (``run``, started by the runtime in its task group) to summarize the entries up to
that point with a background-priority call, within ``timeout`` seconds of the runtime's clock. The result is
appended as ``compact {summary, upto, min_trust}`` (``min_trust``: the highest level of what it covers, the
lowest that may read it; and a ``usage`` entry for the call) while no turn runs: at once when
the agent is idle, else right after the running turn. A failure is logged and retried after the next turn;
until a summary lands the window keeps every entry that fits the budget, so nothing is lost from sight.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.core.clock import run_with_deadline
from ishiki_host.engines.context._summary import collect_dropped, summary_request
from ishiki_host.errors import EngineError

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio.abc import TaskStatus

    from ishiki_host.core.entries import Entry
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.engines.context._render import Renderer
    from ishiki_host.engines.context._window import Window
    from ishiki_host.plugins.runtime_api import RuntimeContext

__all__ = ["Compactor"]

logger = logging.getLogger(__name__)


class Compactor:
    """The pending cut and the summary task of one runtime's context engine."""

    def __init__(
        self,
        ctx: RuntimeContext,
        renderer: Renderer,
        cost: Callable[[Entry], int],
        *,
        summarize: bool = True,
        model_ref: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 120.0,
    ):
        self.ctx = ctx
        self.renderer = renderer
        self.cost = cost
        self.summarize = summarize
        self.model_ref = model_ref
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.cut: int | None = None
        self.floor = 0  # the current boundary: the head compact's ``upto``, or the session entry's id
        self.budget = 0
        self.failures = 0
        self.running = False
        self._ready: dict[str, Any] | None = None
        self._usage: dict[str, Any] | None = None
        self._lock = anyio.Lock()  # one summary at a time
        self._wanted = anyio.Event()
        self._settled = anyio.Event()
        self._settled.set()
        self._warned = False

    def note(self, window: Window, budget: int) -> None:
        """Remember what a window selection found: its boundary and where it wants a compaction."""
        head = window.head
        self.floor = head.id if head is not None and head.type == "session" else window.upto
        self.budget = budget
        if self.cut is not None and self.cut <= self.floor:
            self.cut = None
        if self.cut is None and window.cut is not None:
            self.cut = window.cut

    async def after_turn(self) -> None:
        """Called when a turn ended: append a finished summary, or start the one the window needs."""
        await self._append_ready()
        if self.cut is None:
            return
        if not self.summarize:
            await self._append({"upto": self.cut}, None)
            return
        if not self.running:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "%s: the context engine's background task was not started; older entries leave the "
                    "window without a summary",
                    self.ctx.key,
                )
            return
        if self._settled.is_set():
            self._settled = anyio.Event()
        self._wanted.set()

    async def settled(self) -> None:
        """Return once no summary is wanted or running (wrap it in a deadline)."""
        await self._settled.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The summary task: waits for work, runs one summary at a time, until cancelled."""
        self.running = True
        task_status.started()
        try:
            while True:
                await self._wanted.wait()
                self._wanted = anyio.Event()
                try:
                    await self.compact_once()
                finally:
                    if not self._wanted.is_set():
                        self._settled.set()
        finally:
            self.running = False
            self._settled.set()

    async def compact_now(self, cut: int) -> bool:
        """Compact the entries up to ``cut`` in the caller's task; ``True`` when a compact entry was made.

        It is appended at once when no turn runs, else right after the running turn.
        """
        if cut <= self.floor:
            return False
        self.cut = max(cut, self.cut or 0)
        if not self.summarize:
            await self._append({"upto": self.cut}, None)
            return True
        return await self.compact_once()

    async def compact_once(self) -> bool:
        """Summarize up to the pending cut now; ``True`` when a summary was made (failures are logged)."""
        async with self._lock:
            return await self._compact_locked()

    async def _compact_locked(self) -> bool:
        cut = self.cut
        if cut is None or cut <= self.floor:
            return False
        try:
            made = await run_with_deadline(self.ctx.clock, self.timeout, partial(self._summarize, cut))
        except Exception as exc:
            self.failures += 1
            reason = f"no answer within {self.timeout:g} s" if isinstance(exc, TimeoutError) else f"{exc!r}"
            logger.warning(
                "%s: the summary of the entries up to %s failed (%s); the window keeps them and the summary is "
                "retried after the next turn",
                self.ctx.key,
                cut,
                reason,
            )
            return False
        if made and not self.ctx.agent.busy:
            await self._append_ready()
        return made

    async def _summarize(self, cut: int) -> bool:
        budget = max(self.budget, 1)
        select = partial(collect_dropped, cut=cut, budget=budget, cost=self.cost)
        dropped = await self.ctx.log.read_back(select)
        if dropped is None:
            self.cut = None if self.cut == cut else self.cut
            return False
        lines = [line for e in dropped.entries if (line := self.renderer.transcript_line(e)) is not None]
        model = self._model()
        result = await model.generate(summary_request(lines, dropped, max_tokens=self.max_tokens))
        summary = result.text.strip()
        if not summary:
            raise EngineError(f"the summary model {model.name} answered with no text")
        usage = {"purpose": "context.summary", "model": result.model or model.name, **result.usage.to_dict()}
        self._ready, self._usage = {"summary": summary, "upto": cut, "min_trust": dropped.readers()}, usage
        return True

    def _model(self) -> LanguageModel:
        return self.ctx.models(self.model_ref) if self.model_ref else self.ctx.model

    async def _append_ready(self) -> None:
        if self._ready is not None:
            ready, usage = self._ready, self._usage
            self._ready = self._usage = None
            await self._append(ready, usage)

    async def _append(self, compact: dict[str, Any], usage: dict[str, Any] | None) -> None:
        upto = compact["upto"]
        if upto <= self.floor:
            return  # a newer boundary (a /clear, another compaction) already covers it
        await self.ctx.log.append("compact", compact)
        if usage is not None:
            await self.ctx.log.append("usage", usage)
        self.floor = upto
        if self.cut is not None and self.cut <= upto:
            self.cut = None
