"""The built-in ``memory`` extension (entry point ``ishiki.ext.memory``): long-term memory, on by default.

A profile turns it off with ``extends: {memory: {enable: false}}``. Per runtime, the instance:

- ``ishiki_attach``: hands the host's memory store (``services.memory``) to the runtime's sessions
  (``sessions.use_store``: the row of its session is made on first need, so a new runtime writes nothing to
  the database before its first turn); with a ``model`` in the config, summaries are written by that model
  instead of the profile's (``sessions.summarize_with``);
- ``ishiki_instructions``: the long-term memory section of each turn (``retrieval.memory_section``): the
  memories most relevant to the turn's new messages, readable at the turn's trust level;
- ``ishiki_turn_finished``: what the profile's ``session.summarizer`` mode asks (``SessionPolicy``):
  compact-and-retry after a ``context_length`` failure (``auto``, ``manual``), one memory of each exchange the
  persona answered (``auto``; a ``reminder`` with a time becomes a one-shot beat in its chat, confirmed by a
  notice: ``memory.reminders``); in ``off`` mode a context overflow is shown to the channel with what to do
  about it. (The compaction at ``compact_threshold`` of ``manual`` is the runtime's, before a turn.)
- ``ishiki_status``: one line for ``/status``.

The summarizer mode and threshold live in the profile's ``session`` section; this extension's config only
says how much is retrieved (``limit``, default ``memory.limit`` of ``ishiki.yaml``) and which model
summarizes (``model``). When the host could not open ``memory.db`` (it logs why and keeps running), the
extension says so once in the log and in ``/status``; the persona keeps answering without long-term memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host.errors import ConfigError, StoreError
from ishiki_host.gateway.attribution import usage_purpose
from ishiki_host.memory.overflow import OverflowRecovery, SessionPolicy
from ishiki_host.memory.reminders import host_now, schedule_reminder
from ishiki_host.memory.retrieval import memory_section, turn_scope
from ishiki_host.plugins.base import Extension, PluginConfig
from ishiki_host.plugins.hookspecs import hookimpl
from ishiki_host.sessions.summarizer import Summarizer, remember_turn
from ishiki_host.store.repos.memory_types import MAX_SEARCH

if TYPE_CHECKING:
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.plugins.runtime_api import RuntimeContext, TurnReport
    from ishiki_host.store.memory_store import MemoryStore

__all__ = ["MEMORY_SCHEMA", "OVERFLOW_OFF_NOTICE", "MemoryExtension", "MemoryInstance"]

MEMORY_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "limit": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_SEARCH,
            "description": "Most memories retrieved into one turn's prompt for this profile (0: none); "
            "default: `memory.limit` of ishiki.yaml.",
        },
        "model": {
            "type": "string",
            "minLength": 1,
            "description": "The model that writes memories and session summaries (a group or `provider:modelId` "
            "of models.yaml); default: the profile's model.",
        },
    },
}
OVERFLOW_OFF_NOTICE = (
    "(The conversation no longer fits my context window. Send /compact to summarize it, or /clear to start over.)"
)


class MemoryInstance:
    """The memory extension on one runtime (see the module docstring)."""

    def __init__(self, runtime: RuntimeContext, config: PluginConfig):
        self._rt = runtime
        self._limit: int | None = config.get("limit")
        self._model_ref: str | None = config.get("model")
        self.mode = runtime.profile.session.summarizer
        self.policy = SessionPolicy.for_mode(self.mode)
        self.store: MemoryStore | None = None
        self.problem: str | None = None
        self._summarizer: Summarizer | None = None
        self._recovery: OverflowRecovery | None = None

    def _model(self) -> LanguageModel:
        if self._model_ref is None:
            return self._rt.model
        try:
            return self._rt.models(self._model_ref)
        except (ConfigError, KeyError) as exc:
            self.problem = f"summarizer model {self._model_ref!r} is unknown ({exc}); the profile's model summarizes"
            self._rt.logger.error("memory: %s", self.problem)
            return self._rt.model

    @hookimpl
    async def ishiki_attach(self, runtime: RuntimeContext) -> None:
        """Give the sessions the store (and the summarizer model), and align the sessions table."""
        sessions = runtime.sessions
        model = self._model()
        if self._model_ref is not None:
            sessions.summarize_with(model)
        self._summarizer = Summarizer(model)
        self._recovery = OverflowRecovery(sessions, runtime.agent, notify=runtime.notice)
        self.store = runtime.services.memory
        if self.store is None:
            self.problem = runtime.services.memory_error or "the host has no memory database open"
            runtime.logger.warning("memory: %s; profile %s runs without long-term memory", self.problem, runtime.key)
            return
        sessions.use_store(self.store)  # its session's row is made on first need (sessions.ensure_started)

    def limit(self) -> int:
        """How many memories a turn's prompt gets at most."""
        return self._limit if self._limit is not None else self._rt.services.memory_limit

    @hookimpl
    async def ishiki_instructions(self, runtime: RuntimeContext) -> str | None:
        """The long-term memory section for the running turn's new messages, at its trust level.

        A database failure leaves the section out of this turn (logged): the persona still answers.
        """
        state, store, limit = runtime.turn_state, self.store, self.limit()
        if store is None or not state.inbound or limit <= 0:
            return None
        try:
            if not await store.memories.has_any(runtime.profile.id):
                return None
            carried = await runtime.sessions.carried_memory_id()
            return await memory_section(
                store,
                state.inbound,
                profile=runtime.profile.id,
                trust=state.trust,
                limit=limit,
                session_id=await runtime.sessions.ensure_started(),
                exclude_ids=[carried] if carried is not None else [],
                scope=turn_scope(runtime.services.memory_scope, str(runtime.key), state.inbound),
            )
        except StoreError as exc:
            runtime.logger.warning("memory: no long-term memory in turn %s: %s", state.number, exc)
            return None

    @hookimpl
    async def ishiki_turn_finished(self, runtime: RuntimeContext, outcome: TurnReport) -> None:
        """Compact-and-retry, remember the exchange, or compact at the threshold, as the mode says."""
        overflowed = outcome.outcome.kind == "context_length"
        if self.policy.retry_on_overflow and self._recovery is not None:
            await self._recovery.handle(outcome.outcome)
        elif overflowed:
            await runtime.notice(OVERFLOW_OFF_NOTICE)
        if overflowed:
            return
        if self.policy.remember_turns:
            await self._remember(runtime, outcome)

    async def _remember(self, runtime: RuntimeContext, report: TurnReport) -> None:
        if self.store is None or self._summarizer is None or report.status != "done" or not report.sent_ids:
            return  # a failed turn, or one that said nothing, leaves no memory
        try:
            session_id = await runtime.sessions.ensure_started()
        except StoreError as exc:
            runtime.logger.warning("memory: the session of turn %s is unknown: %s", report.turn, exc)
            session_id = None
        with usage_purpose("summarizer"):
            remembered = await remember_turn(
                self._summarizer,
                self.store,
                runtime.log,
                report.outcome,
                trust=report.trust,
                profile=runtime.profile.id,
                runtime_key=str(runtime.key),
                session_id=session_id,
                now=host_now(runtime),
            )
        if remembered is not None:
            await schedule_reminder(runtime, remembered, report)

    @hookimpl
    async def ishiki_status(self, runtime: RuntimeContext) -> Sequence[str]:
        """``memory: N memories of this profile (retrieving up to L per turn)``, or why there are none."""
        if self.store is None:
            return [f"memory: unavailable ({self.problem})"]
        count = await self.store.memories.count(runtime.profile.id)
        noun = "memory" if count == 1 else "memories"
        line = f"memory: {count:,} {noun} of {runtime.profile.id} (up to {self.limit()} per turn)"
        return [line + (f"; {self.problem}" if self.problem else "")]


class MemoryExtension(Extension):
    """Long-term memory, on by default: relevant memories in each turn's prompt, a memory of each exchange,
    compaction and compact-and-retry, as the profile's ``session`` section says."""

    tool_names: ClassVar[tuple[str, ...] | None] = ()  # it offers no tools of its own

    default_enabled: ClassVar[bool] = True
    config_schema: ClassVar[Mapping[str, Any]] = MEMORY_SCHEMA

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> MemoryInstance:
        """The memory instance of one runtime."""
        return MemoryInstance(ctx, config)
