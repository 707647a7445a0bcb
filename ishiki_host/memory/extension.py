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
- with ``people: true``, after each exchange the summarizer's model updates the profiles of its people, and
  each turn's prompt shows those of the people speaking in it (``memory.people``);
- ``ishiki_tools``: ``remember``, ``recall``, ``forget`` (``memory.tools``) for turns at ``tools``
  (``trusted`` or ``owner``) and above; ``off``, the default, offers none; an untrusted turn never gets them;
- ``ishiki_status``: one line for ``/status`` (two with embeddings: how many memories are embedded).

With ``embeddings`` in the config (a ``provider:modelId`` or group of models.yaml serving the embeddings
API), each memory is also embedded in the background (``memory.embedding``: one backlog per profile, in the
host's task group, kicked after each memory written), and a turn's recall embeds its search text (at
``interactive`` priority, within ``QUERY_SECONDS``) and fuses the nearest memories with the full-text ones
(``memory.hybrid``). A model that does not answer in time leaves that turn to full-text recall.

The summarizer mode and threshold live in the profile's ``session`` section; this extension's config only
says how much is retrieved (``limit``, default ``memory.limit`` of ``ishiki.yaml``) and which model
summarizes (``model``). When the host could not open ``memory.db`` (it logs why and keeps running), the
extension says so once in the log and in ``/status``; the persona keeps answering without long-term memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ishiki_host.core.shared import ServiceKey
from ishiki_host.errors import ConfigError, ModelError, StoreError
from ishiki_host.gateway.attribution import usage_purpose
from ishiki_host.memory.embedding import EmbeddingBacklog
from ishiki_host.memory.overflow import OverflowRecovery, SessionPolicy
from ishiki_host.memory.people import PeopleKeeper, people_section
from ishiki_host.memory.reminders import host_now, schedule_reminder
from ishiki_host.memory.retrieval import VectorQuery, memory_section, query_text, turn_scope
from ishiki_host.memory.tools import MEMORY_TOOL_NAMES, MemoryTools
from ishiki_host.plugins.base import Extension, PluginConfig
from ishiki_host.plugins.hookspecs import hookimpl
from ishiki_host.sessions.summarizer import Summarizer, exchange_entries, remember_turn
from ishiki_host.store.repos.memory_types import MAX_SEARCH

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.plugins.runtime_api import RuntimeContext, TurnReport
    from ishiki_host.store.memory_store import MemoryStore

__all__ = ["MEMORY_SCHEMA", "OVERFLOW_OFF_NOTICE", "QUERY_SECONDS", "MemoryExtension", "MemoryInstance"]

QUERY_SECONDS = 2.0
"""How long a turn's recall waits for the embedding of its search text before it recalls by full text."""

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
        "embeddings": {
            "type": "string",
            "minLength": 1,
            "description": "The embeddings model (a group or `provider:modelId` of models.yaml whose API serves "
            "embeddings, e.g. openai-completions) that makes recall semantic: memories are embedded in the "
            "background and recall fuses the nearest ones with full-text matches; default: none, full-text "
            "recall only. Changing it embeds every memory again, in the background.",
        },
        "people": {
            "type": "boolean",
            "default": False,
            "description": "Keep a short profile of each person (and group chat) the persona talks with: after "
            "each exchange, the summarizer's model updates the profiles of its senders (one background call "
            "each), and a turn's prompt shows the profiles of the people speaking in it that its trust level "
            "may read. The owner edits them with `/memory about @name` and on the dashboard.",
        },
        "tools": {
            "enum": ["trusted", "owner", "off"],
            "default": "off",
            "description": "The lowest trust level whose turns get the memory tools (`remember`, `recall`, "
            "`forget`): `trusted` or `owner`; `off` (the default): no turn gets them. Untrusted turns never do.",
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
        self._embeddings_ref: str | None = config.get("embeddings")
        self.backlog: EmbeddingBacklog | None = None
        tools = config.get("tools", "off")
        self._tools_trust: TrustLevel | None = None if tools == "off" else tools
        self._tools: list[Tool] | None = None
        self._people_on = bool(config.get("people", False))
        self._people: PeopleKeeper | None = None
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
        if self._people_on:
            self._people = PeopleKeeper(model, self.store)
        if self._embeddings_ref is not None:
            self.backlog = self._backlog(runtime, self.store, self._embeddings_ref)

    def _backlog(self, runtime: RuntimeContext, store: MemoryStore, ref: str) -> EmbeddingBacklog | None:
        """The profile's one backlog (shared by its runtimes), now with the embedder of ``ref``, running."""
        services = runtime.services
        if services.embeddings is None:
            self.problem = "this host offers no embeddings models; recall uses full text"
            return None
        try:
            embedder = services.embeddings(ref)
        except ConfigError as exc:
            self.problem = f"embeddings model {ref!r} is unknown ({exc}); recall uses full text"
            runtime.logger.error("memory: %s", self.problem)
            return None
        profile = runtime.profile.id
        key = ServiceKey(f"ishiki.memory.embeddings/{profile}", EmbeddingBacklog)
        backlog = services.get(key)
        if backlog is None or backlog.vectors is not store.vectors:
            backlog = EmbeddingBacklog(store.vectors, embedder, profile)
            services.put(key, backlog)
        elif backlog.model != embedder.name:
            backlog.use(embedder)  # the profile's config changed: its memories are embedded again
        if backlog.claim_runner():  # the first runtime of the profile, or the runtime that ran it stopped
            name = f"memory embeddings of {profile}"
            (services.spawn if services.can_spawn else runtime.spawn)(backlog.run, name=name)
        backlog.kick()
        return backlog

    def limit(self) -> int:
        """How many memories a turn's prompt gets at most."""
        return self._limit if self._limit is not None else self._rt.services.memory_limit

    @hookimpl
    async def ishiki_instructions(self, runtime: RuntimeContext) -> str | None:
        """The long-term memory section for the running turn's new messages, at its trust level, and (with
        ``people``) the profiles of the people speaking.

        A database failure leaves the section out of this turn (logged): the persona still answers.
        """
        state, store = runtime.turn_state, self.store
        if store is None or not state.inbound:
            return None
        try:
            memories = await self._memory_section(runtime, store)
            people = None
            if self._people is not None:
                people = await people_section(store, state.inbound, profile=runtime.profile.id, trust=state.trust)
        except StoreError as exc:
            runtime.logger.warning("memory: no long-term memory in turn %s: %s", state.number, exc)
            return None
        sections = [section for section in (people, memories) if section]
        return "\n\n".join(sections) if sections else None

    async def _memory_section(self, runtime: RuntimeContext, store: MemoryStore) -> str | None:
        state, limit = runtime.turn_state, self.limit()
        if limit <= 0 or not await store.memories.has_any(runtime.profile.id):
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
            vector=await self._query_vector(runtime, state.inbound),
        )

    async def _query_vector(self, runtime: RuntimeContext, inbound: Sequence[Entry]) -> VectorQuery | None:
        """The embedding of the turn's search text, or ``None`` (no embeddings, or no answer in time)."""
        return await self._embed_query(runtime, query_text(inbound))

    async def _embed_query(self, runtime: RuntimeContext, text: str) -> VectorQuery | None:
        backlog = self.backlog
        if backlog is None or not text.strip():
            return None
        with anyio.move_on_after(QUERY_SECONDS):
            try:
                embedded = await backlog.embedder.embed([text], priority="interactive", limit_seconds=QUERY_SECONDS)
            except ModelError as exc:
                runtime.logger.info("memory: full-text recall only: %s", exc)
                return None
            return VectorQuery(backlog.model, embedded.vectors[0], runtime.clock.now())
        runtime.logger.info(
            "memory: %s did not answer within %s s; full-text recall only", backlog.model, QUERY_SECONDS
        )
        return None

    @hookimpl
    def ishiki_tools(self, runtime: RuntimeContext) -> Sequence[Tool]:
        """``remember``, ``recall``, ``forget`` at the configured level (none when off or without a store)."""
        store, level = self.store, self._tools_trust
        if store is None or level is None:
            return ()
        if self._tools is None:

            def written() -> None:
                if self.backlog is not None:
                    self.backlog.kick()

            self._tools = MemoryTools(
                store,
                runtime.profile.id,
                str(runtime.key),
                runtime.services.memory_scope,
                level,
                inbound=lambda: runtime.turn_state.inbound,
                session=runtime.sessions.ensure_started,
                query_vector=lambda text: self._embed_query(runtime, text),
                written=written,
            ).tools()
        return self._tools

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
            if self.backlog is not None:
                self.backlog.kick()
            await schedule_reminder(runtime, remembered, report)
        if self._people is not None:
            with usage_purpose("summarizer"):
                await self._people.keep(
                    runtime.profile.id, await runtime.log.read_back(exchange_entries(report.turn)), trust=report.trust
                )

    @hookimpl
    async def ishiki_status(self, runtime: RuntimeContext) -> Sequence[str]:
        """``memory: N memories of this profile (retrieving up to L per turn)``, or why there are none."""
        if self.store is None:
            return [f"memory: unavailable ({self.problem})"]
        count = await self.store.memories.count(runtime.profile.id)
        noun = "memory" if count == 1 else "memories"
        line = f"memory: {count:,} {noun} of {runtime.profile.id} (up to {self.limit()} per turn)"
        lines = [line + (f"; {self.problem}" if self.problem else "")]
        if self.backlog is not None:
            lines.append(await self.backlog.status())
        return lines


class MemoryExtension(Extension):
    """Long-term memory, on by default: relevant memories in each turn's prompt, a memory of each exchange,
    compaction and compact-and-retry, as the profile's ``session`` section says."""

    tool_names: ClassVar[tuple[str, ...] | None] = MEMORY_TOOL_NAMES

    default_enabled: ClassVar[bool] = True
    config_schema: ClassVar[Mapping[str, Any]] = MEMORY_SCHEMA

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> MemoryInstance:
        """The memory instance of one runtime."""
        return MemoryInstance(ctx, config)
