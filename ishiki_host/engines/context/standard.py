"""The ``standard`` context engine: whole turns, newest first, inside a token budget.

The instance (``StandardContext``) owns the agent's window (``select_entries``, see ``_window``) and projection
(``project``, see ``_render``), compacts what leaves the window in the background (``_compactor``), and tells
the model how messages are rendered (``instructions``). Its ``run`` is the background task the runtime starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, tzinfo
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import anyio

from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.messages import Message
from ishiki_host.core.tokens import Estimator, estimate_messages_tokens, estimate_tokens
from ishiki_host.core.window import Projection, project_entry
from ishiki_host.engines._options import model_option, resolve_options
from ishiki_host.engines.context._cache import WindowCache
from ishiki_host.engines.context._compactor import Compactor
from ishiki_host.engines.context._render import Renderer
from ishiki_host.engines.context._window import WindowParams, select_window
from ishiki_host.errors import ConfigError
from ishiki_host.plugins.base import ContextEngine

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.turns import Step, TurnOutcome
    from ishiki_host.plugins.runtime_api import RuntimeContext

__all__ = ["CostCache", "StandardContext", "StandardContextEngine"]

_WHERE = "context.standard"


class StandardContextEngine(ContextEngine):
    """Keeps whole turns newest-first within ``budget_ratio`` of the model's context window.

    When the window is full it drops the oldest turns down to ``refill_ratio`` of the budget (so it does not
    trim on every turn) and summarizes what it dropped in the background, appending a compact entry. Platform
    messages are rendered with a header: time, chat kind (or channel in cross mode), message id, sender name
    and id, and an "untrusted sender" marker.
    """

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "budget_ratio": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "default": 0.75,
                "description": "Share of the model's context_window the prompt (system, tools and messages) may use.",
            },
            "refill_ratio": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.5,
                "description": "When over budget, drop the oldest turns until this share of the budget is used.",
            },
            "summarize": {
                "type": "boolean",
                "default": True,
                "description": "Summarize dropped turns into the compact entry; false drops them without a summary.",
            },
            "summary_model": {
                "type": ["string", "null"],
                "minLength": 1,
                "default": None,
                "description": "Model for summaries (a group or provider:modelId); null uses the profile's model.",
            },
            "summary_max_tokens": {
                "type": "integer",
                "minimum": 64,
                "default": 1024,
                "description": "Longest summary, in tokens (the summary call's max_tokens).",
            },
            "summary_timeout_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 120,
                "description": "A summary call that takes longer is abandoned and retried after the next turn.",
            },
            "timezone": {
                "type": ["string", "null"],
                "minLength": 1,
                "default": None,
                "description": "IANA time zone of message times; null uses the host's timezone (else UTC).",
            },
        },
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> StandardContext:
        """Make the engine instance for one runtime."""
        return StandardContext(ctx, resolve_options(self.config_schema, config, where=_WHERE))


class StandardContext(AgentHooks):
    """One runtime's standard context engine: agent hooks owning the window and the projection."""

    def __init__(self, ctx: RuntimeContext, options: Mapping[str, Any], *, estimator: Estimator = estimate_tokens):
        self.ctx = ctx
        self.budget_ratio = float(options["budget_ratio"])
        self.refill_ratio = float(options["refill_ratio"])
        self.estimator = estimator
        cross = ctx.sid is None or ctx.profile.mode == "cross"
        self.renderer = Renderer(_timezone(options.get("timezone"), ctx), cross, estimator)
        self.cost = CostCache(self.renderer.cost)
        self.compactor = Compactor(
            ctx,
            self.renderer,
            self.cost,
            summarize=bool(options["summarize"]),
            model_ref=model_option(ctx, options.get("summary_model"), path=f"{_WHERE}.summary_model"),
            max_tokens=int(options["summary_max_tokens"]),
            timeout=float(options["summary_timeout_seconds"]),
        )
        self.last_tokens = 0  # the estimated size of the last window selected
        self.window = WindowCache()
        self.projection = Projection(self._project_one)
        self._watched: FactLogProtocol | None = None  # the log whose shrink_cache makes this give its copies back

    def hooks(self) -> AgentHooks:
        """The instance itself."""
        return self

    async def instructions(self) -> str | None:
        """How platform messages are rendered (so the model can read the headers)."""
        return self.renderer.instructions()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The background task (summaries); the runtime starts it with ``tg.start`` and cancels it at stop."""
        await self.compactor.run(task_status=task_status)

    def budget(self, step: Step) -> int:
        """Tokens left for messages: ``context_window × budget_ratio`` minus the system prompt and tool specs."""
        setup = step.turn.setup
        fixed = [Message.system(setup.system)] if setup is not None and setup.system else []
        specs = [tool.spec() for tool in step.tools]
        used = estimate_messages_tokens(fixed, specs, estimator=self.estimator)
        return max(0, int(self.ctx.context_window * self.budget_ratio) - used)

    async def select_entries(self, log: FactLogProtocol, step: Step) -> list[Entry]:
        """Whole exchanges newest first inside the budget, headed by the current summary (see ``_window``),
        extended from the last step's window (see ``_cache``)."""
        if log is not self._watched:
            log.on_shrink(self.release)
            self._watched = log
        budget = self.budget(step)
        params = WindowParams(budget, self.refill_ratio, self.cost, step.turn.number)
        window = await self.window.select(log, params)
        self.compactor.note(window, budget)
        self.last_tokens = window.tokens
        return window.entries

    async def project(self, entries: list[Entry], step: Step) -> list[Message]:
        """Platform messages with their headers; everything else as the default projection renders it (only
        the entries added since the last step are rendered: ``Projection``)."""
        return self.projection(entries)

    def release(self) -> None:
        """Give back the window and the messages kept between steps (the runtime cooled); the next step reads
        the window from the log again."""
        self.window.clear()
        self.projection.clear()

    def _project_one(self, entry: Entry) -> Message | None:
        return project_entry(self.renderer.render_entry(entry))

    async def compact(self) -> bool:
        """Compact now, in the caller's task: after a ``context_length`` error, before the turn is retried.

        The last window counts as over budget: the exchanges that fit ``refill_ratio`` of its estimated size stay
        and the older ones are summarized (cut, with ``summarize: false``). Returns whether a compact entry was
        made; ``False`` when only the newest exchange is left, or the summary failed (logged).
        """
        if self.last_tokens <= 1:
            return False
        params = WindowParams(self.last_tokens - 1, self.refill_ratio, self.cost)
        window = await self.ctx.log.read_back(partial(select_window, params=params))
        return window.cut is not None and await self.compactor.compact_now(window.cut)

    async def on_turn_finish(self, outcome: TurnOutcome) -> None:
        """Append a finished summary, or ask the background task for the one the window needs."""
        await self.compactor.after_turn()


class CostCache:
    """Estimated tokens per entry id: entries never change, so each is rendered and counted once.

    Window selection may run in a worker thread; a dict's ``get``/``set``/``clear`` are atomic there. The cache is
    cleared whole when it holds ``limit`` entries (far more than a window), which keeps it bounded.
    """

    def __init__(self, cost: Callable[[Entry], int], limit: int = 32_768):
        self._cost = cost
        self._limit = limit
        self._known: dict[int, int] = {}

    def __call__(self, entry: Entry) -> int:
        known = self._known.get(entry.id)
        if known is None:
            if len(self._known) >= self._limit:
                self._known.clear()
            known = self._known[entry.id] = self._cost(entry)
        return known


def _timezone(name: object, ctx: RuntimeContext) -> tzinfo:
    """The option's zone (a bad name is a ``ConfigError``), else the host's (``services.timezone``), else UTC."""
    if isinstance(name, str):
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            message = f'unknown time zone "{name}" (use an IANA name such as "Europe/Lisbon")'
            raise ConfigError(message, file=str(ctx.profile.file), path=f"{_WHERE}.timezone") from None
    host = ctx.services.timezone
    try:
        return ZoneInfo(host)
    except (ZoneInfoNotFoundError, ValueError):
        ctx.logger.warning("unknown host time zone %r; message times are shown in UTC", host)
    return UTC
