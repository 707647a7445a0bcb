"""Sessions of one runtime: ``/clear``, ``/compact`` and the automatic compactions, as fact-log entries.

A session is a segment of the runtime's fact log. It starts at a ``session`` entry (the default window and the
standard context engine read back to the newest one) and the ``sessions`` table mirrors the segments. The
fact log is the truth: the table is rotated after the entry is written, and ``start()`` re-aligns it when a
crash came in between.

- ``clear()`` appends ``{"reason": "clear"}``: nothing carried. An empty session (no message, no summary)
  is left alone and says so.
- ``compact()`` summarizes the session (a background call), stores the summary as a ``summary`` memory,
  then appends a ``session`` entry seeded with it: ``{"reason", "summary", "memory", "upto", "min_trust",
  "chats", "senders"}`` (who may read it, and where and whom it is about: the summary memory records both).
  The window renders that seed once, as the first message of the next request ("Summary of the conversation
  so far: ..."); retrieval leaves that memory out (``carried_memory_id``), so the summary is never in a
  request twice. A failed summary changes nothing.

**What a compaction keeps.** The summary stands for the session's entries up to ``upto``. The message
entries after it are *carried*: appended again after the boundary, in order, with ``"carried": <id of the
original>`` (facts are never moved or edited; a copy is a new fact). That covers the messages that arrived
while the summary was being written, and the retry after a ``context_length`` failure: there ``upto`` is
just before the first message the failed turn had not answered, so the new session holds the summary, then
those messages (and whatever the failed turn already did), and the retry answers them.

**Concurrency.** One lock per runtime orders ``clear``, ``compact`` and the automatic compactions: a second
``/compact`` waits for the first, then finds nothing new (``unchanged``). Each waits for the agent to be idle
(``agent.wait_idle()``, with a deadline), so a command during a turn runs after it; the summary call runs
unlocked from the agent, and the boundary is written after a second wait for idle. The runtime calls
``barrier()`` at the start of each turn's setup so a turn that slipped in meanwhile reads its window only
once the boundary is written. Never call ``clear``/``compact`` from inside a turn (a tool or an agent hook):
they wait for that very turn to end.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from ishiki_host.core.levels import content_level, summary_readers
from ishiki_host.core.tokens import estimate_messages_tokens, host_estimator
from ishiki_host.core.tools import trust_allows
from ishiki_host.core.window import project_entries, select_session_window
from ishiki_host.errors import ModelError, StoreError
from ishiki_host.gateway.attribution import TurnCallModel
from ishiki_host.sessions.summarizer import Summarizer, subjects_of
from ishiki_host.sessions.transcript import carried_summary

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.model import LanguageModel, Priority, Usage
    from ishiki_host.core.tokens import Estimator
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.memory_types import Memory

__all__ = [
    "CarriedSummary",
    "IdleAgent",
    "SessionChange",
    "SessionManager",
    "SessionSize",
    "SessionStatus",
    "Sessions",
    "is_message",
    "stored_trust",
]

logger = logging.getLogger(__name__)

SessionStatus = Literal["cleared", "compacted", "empty", "unchanged", "failed"]


class IdleAgent(Protocol):
    """What the manager needs of the agent: whether a turn runs, and a way to wait until none does."""

    @property
    def busy(self) -> bool:
        """Whether a turn is running."""
        ...

    async def wait_idle(self) -> None:
        """Return once no turn runs or waits."""
        ...


@dataclass(frozen=True, slots=True)
class SessionChange:
    """What ``clear``/``compact`` did; ``message`` is the one line to tell the person who asked."""

    status: SessionStatus
    message: str
    boundary: Entry | None = None
    summary: str | None = None
    memory: Memory | None = None
    carried: tuple[Entry, ...] = ()
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class CarriedSummary:
    """The summary a session was seeded with; ``readers`` is the lowest level that may read it (the highest
    level of what it covers: an owner's private messages make it the owner's)."""

    text: str
    readers: TrustLevel

    def readable_at(self, level: TrustLevel) -> bool:
        """Whether a turn or a person at ``level`` may read it."""
        return trust_allows(level, self.readers)


@dataclass(frozen=True, slots=True)
class SessionSize:
    """The current session: estimated prompt tokens of its projected messages, and how many messages."""

    tokens: int
    messages: int


class Sessions(Protocol):
    """The sessions of one runtime, as its plugins and commands use them (``RuntimeContext.sessions``).

    ``clear`` and ``compact`` wait for the running turn to end: never call them from inside a turn (a tool or
    an agent hook). ``use_store`` and ``summarize_with`` are for the extension that keeps sessions in the
    memory database (the built-in ``memory``): without a store, boundaries are written to the fact log only.
    """

    @property
    def busy(self) -> bool:
        """Whether a clear or compaction is in progress (or waiting for its turn)."""
        ...

    async def window(self) -> list[Entry]:
        """The current session's entries, oldest first."""
        ...

    async def size(self) -> SessionSize:
        """Estimated prompt tokens of the session's messages, and how many there are."""
        ...

    async def carried_summary(self) -> CarriedSummary | None:
        """The summary this session was seeded with, if any, with the lowest level that may read it."""
        ...

    async def carried_memory_id(self) -> int | None:
        """The id of the memory holding that summary (retrieval leaves it out)."""
        ...

    async def ensure_started(self) -> int | None:
        """The current session's row id in the memory database (``None`` without a store)."""
        ...

    async def clear(self, reason: str = "clear") -> SessionChange:
        """End the session and start an empty one."""
        ...

    async def compact(
        self, reason: str = "compact", *, keep_from: int | None = None, priority: Priority = "background"
    ) -> SessionChange:
        """Summarize the session, then start one seeded with the summary; entries from ``keep_from`` on (and
        every message no turn answered yet) are carried verbatim and count as unanswered input of the next
        turn. ``priority`` is the summary call's (``interactive`` when a turn waits for it)."""
        ...

    def use_store(self, store: MemoryStore) -> None:
        """Mirror sessions in the ``sessions`` table and keep compaction summaries as memories in ``store``."""
        ...

    def summarize_with(self, model: LanguageModel) -> None:
        """Write compaction summaries with ``model`` instead of the profile's."""
        ...


def is_message(entry: Entry) -> bool:
    """Whether ``entry`` is something said (user, assistant or tool message)."""
    return entry.type == "message" and entry.data.get("role") in ("user", "assistant", "tool")


def stored_trust(entry: Entry) -> TrustLevel | None:
    """The trust level recorded on an inbound entry at ingest (``data.trust``), if any."""
    return content_level(entry)


def _carry(entry: Entry) -> tuple[str, Mapping[str, Any]]:
    return "message", {**entry.data, "carried": entry.id}


def _after(upto: int) -> Callable[[Iterator[Entry]], list[Entry]]:
    """A read-back selector: the current session's message entries newer than ``upto``, oldest first."""

    def select(newest_first: Iterator[Entry]) -> list[Entry]:
        found = []
        for entry in newest_first:
            if entry.id <= upto or entry.type == "session":
                break
            if is_message(entry):
                found.append(entry)
        found.reverse()
        return found

    return select


class SessionManager:
    """The sessions of one runtime (see the module docstring). One per runtime, made by the runtime.

    ``store`` may be ``None`` (memory off): the boundaries are still written, nothing goes to the database.
    ``summarizer`` may be ``None``: ``compact`` then fails politely. ``trust_of`` reads an inbound entry's
    level (``stored_trust`` by default); a summary is readable only at the highest level of the messages it
    covers. ``on_carried`` is told of the entries a compaction with ``keep_from`` carried into the new session:
    they were not answered, so the runtime counts them as input of the next turn.
    """

    def __init__(
        self,
        *,
        runtime_key: str,
        profile: str,
        log: FactLogProtocol,
        agent: IdleAgent,
        store: MemoryStore | None = None,
        summarizer: Summarizer | None = None,
        estimator: Estimator | None = None,
        trust_of: Callable[[Entry], TrustLevel | None] = stored_trust,
        idle_timeout: float = 900.0,
        on_carried: Callable[[Sequence[Entry]], object] | None = None,
        unanswered: Callable[[], Sequence[int]] | None = None,
    ):
        self.runtime_key = runtime_key
        self.profile = profile
        self.log = log
        self.agent = agent
        self.store = store
        self.summarizer = summarizer
        self.estimator = estimator or host_estimator()
        self.on_carried = on_carried
        self.unanswered = unanswered
        self.trust_of = trust_of
        self.idle_timeout = idle_timeout
        self.session_id: int | None = None
        self._lock = anyio.Lock()
        self._committing: anyio.Event | None = None

    # -- reading ---------------------------------------------------------------------------------------

    async def window(self) -> list[Entry]:
        """The current session's entries, oldest first (the default window: from the newest boundary)."""
        return await self.log.read_back(select_session_window)

    async def size(self) -> SessionSize:
        """Estimated tokens of the session's projected messages (``estimator``), and its message count."""
        window = await self.window()
        tokens = estimate_messages_tokens(project_entries(window), estimator=self.estimator)
        return SessionSize(tokens, sum(1 for entry in window if is_message(entry)))

    async def carried_summary(self) -> CarriedSummary | None:
        """The summary this session was seeded with (``/memory``), if any, and who may read it."""
        window = await self.window()
        head = window[0] if window and window[0].type == "session" else None
        text = carried_summary(head) if head is not None else None
        if head is None or text is None:
            return None
        return CarriedSummary(text, content_level(head) or "owner")

    async def carried_memory_id(self) -> int | None:
        """The id of the memory holding that summary, which retrieval must leave out."""
        window = await self.window()
        head = window[0] if window and window[0].type == "session" else None
        memory = head.data.get("memory") if head is not None else None
        return memory if isinstance(memory, int) else None

    @property
    def busy(self) -> bool:
        """Whether a clear or compaction is in progress (or waiting for its turn)."""
        return self._lock.locked()

    def use_store(self, store: MemoryStore) -> None:
        """Mirror sessions in ``store`` (its row is made on first need) and keep summaries there."""
        self.store = store

    def summarize_with(self, model: LanguageModel) -> None:
        """Write compaction summaries with ``model`` (their usage is logged on the session entries)."""
        self.summarizer = Summarizer(TurnCallModel(model), estimator=self.estimator)

    # -- the sessions table ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Align the ``sessions`` table with the log: open the current session, or re-open it after a crash.

        Ordered with ``clear`` and ``compact`` (one lock).
        """
        if self.store is None:
            return
        async with self._lock:
            await self._align()

    async def ensure_started(self) -> int | None:
        """The current session's id, aligning the table on first need (``None`` without a store).

        A new runtime need not write to the database before its first turn: the row of its session is made
        when something needs it (a memory, retrieval, a boundary). Safe during a turn without the lock, since
        boundaries are only written while no turn runs, and ``clear``/``compact`` align first.
        """
        if self.store is not None and self.session_id is None:
            await self._align()
        return self.session_id

    async def _align(self) -> None:
        assert self.store is not None
        window = await self.window()
        head = window[0] if window and window[0].type == "session" else None
        start_id = head.id if head is not None else 1
        reason = str(head.data.get("reason", "start")) if head is not None else "start"
        summary = carried_summary(head) if head is not None else None
        opened, closed = await self.store.sessions.align(
            self.runtime_key, start_fact_id=start_id, reason=reason, summary=summary
        )
        if closed is not None:
            logger.warning("sessions of %s re-aligned with the fact log at entry %s", self.runtime_key, start_id)
        self.session_id = opened.id

    async def _align_first(self) -> None:
        """Before a boundary: the table must hold the session it ends (a failure is only logged)."""
        try:
            await self.ensure_started()
        except StoreError as exc:
            logger.warning("sessions of %s not aligned before a boundary: %s", self.runtime_key, exc)

    async def _rotate(self, boundary: Entry, reason: str, summary: str | None) -> None:
        if self.store is None:
            return
        try:
            _, opened = await self.store.sessions.rotate(
                self.runtime_key,
                end_fact_id=boundary.id - 1,
                start_fact_id=boundary.id,
                reason=reason,
                summary=summary,
            )
        except StoreError as exc:  # the log already holds the boundary; start() re-aligns the table later
            logger.warning(
                "session boundary %s of %s not mirrored in the database: %s", boundary.id, self.runtime_key, exc
            )
            return
        self.session_id = opened.id

    # -- exclusion -------------------------------------------------------------------------------------

    async def barrier(self) -> None:
        """Wait while a boundary is being written (the runtime calls this first in every turn's setup)."""
        event = self._committing
        if event is not None:
            with anyio.fail_after(self.idle_timeout):
                await event.wait()

    async def _wait_idle(self) -> None:
        with anyio.fail_after(self.idle_timeout):
            await self.agent.wait_idle()

    @contextlib.asynccontextmanager
    async def _commit_phase(self) -> AsyncIterator[None]:
        event = self._committing = anyio.Event()
        try:
            yield
        finally:
            self._committing = None
            event.set()

    # -- clear -----------------------------------------------------------------------------------------

    async def clear(self, reason: str = "clear") -> SessionChange:
        """End the session and start an empty one; an empty session is left as it is."""
        async with self._lock:
            try:
                await self._wait_idle()
            except TimeoutError:
                return _busy(self.idle_timeout)
            async with self._commit_phase():
                window = await self.window()
                if not _has_content(window):
                    return SessionChange("empty", "This session is already empty; nothing to clear.")
                await self._align_first()
                boundary = await self.log.append("session", {"reason": reason})
            await self._rotate(boundary, reason, None)
        return SessionChange("cleared", "Started a fresh session; nothing was carried over.", boundary)

    # -- compact ---------------------------------------------------------------------------------------

    async def compact(
        self, reason: str = "compact", *, keep_from: int | None = None, priority: Priority = "background"
    ) -> SessionChange:
        """Summarize the session into a memory, then start a session seeded with the summary.

        ``keep_from``: the id of the first entry the summary must *not* cover (it and the messages after it
        are carried verbatim into the new session); default: the summary covers everything there is, up to the
        first message no turn answered yet (``unanswered``): those are carried, never folded unanswered.
        """
        async with self._lock:
            try:
                await self._wait_idle()
                return await self._compact(reason, keep_from, priority)
            except TimeoutError:
                return _busy(self.idle_timeout)

    async def _compact(self, reason: str, keep_from: int | None, priority: Priority) -> SessionChange:
        window = await self.window()
        keep_from = self._first_kept(window, keep_from)
        upto = (keep_from - 1) if keep_from is not None else (window[-1].id if window else 0)
        covered = [entry for entry in window if entry.id <= upto]
        if not any(is_message(entry) for entry in covered):
            if window and window[0].type == "session" and carried_summary(window[0]):
                return SessionChange("unchanged", "Nothing new to compact since the last summary.")
            return SessionChange("empty", "This session is empty; nothing to compact.")
        if self.summarizer is None:
            return SessionChange("failed", "No summarizer is set up for this persona; the session is unchanged.")
        await self._align_first()  # the summary memory belongs to the session it summarizes
        try:
            summary, usage = await self.summarizer.summarize(covered, priority=priority)
        except ModelError as exc:
            return _failed("summarize the session", exc)
        readers, subjects = self._readers(covered), _subjects(covered)
        try:
            memory = await self._store_summary(summary, readers, subjects)
        except StoreError as exc:
            return _failed("store the summary", exc)
        try:
            await self._wait_idle()  # a turn may have started while the summary was being written
        except TimeoutError:
            if memory is not None and self.store is not None:
                await self.store.memories.delete(memory.id)
            raise
        boundary, carried = await self._write_boundary(reason, summary, memory, upto, (readers, subjects), usage)
        await self._rotate(boundary, reason, summary)
        if keep_from is not None and self.on_carried is not None:
            self.on_carried(carried)
        message = "Summarized the session and started a fresh one seeded with the summary."
        return SessionChange("compacted", message, boundary, summary, memory, carried)

    def _first_kept(self, window: list[Entry], keep_from: int | None) -> int | None:
        """``keep_from``, moved back to the first message of this session that no turn answered yet."""
        start = window[0].id if window else 0
        owed = [i for i in self.unanswered() if i > start] if self.unanswered is not None else []
        return min([*owed, *([keep_from] if keep_from is not None else [])], default=None)

    async def _store_summary(self, summary: str, readers: TrustLevel, subjects: Subjects) -> Memory | None:
        if self.store is None:
            return None
        return await self.store.memories.add(
            "summary",
            summary,
            profile=self.profile,
            runtime_key=self.runtime_key,
            session_id=self.session_id,
            min_trust=readers,
            chats=subjects[0],
            senders=subjects[1],
        )

    async def _write_boundary(
        self,
        reason: str,
        summary: str,
        memory: Memory | None,
        upto: int,
        about: tuple[TrustLevel, Subjects],
        usage: Usage,
    ) -> tuple[Entry, tuple[Entry, ...]]:
        readers, (chats, senders) = about
        data: dict[str, Any] = {"reason": reason, "summary": summary, "upto": upto, "min_trust": readers}
        data.update({"chats": list(chats), "senders": list(senders)})  # the next summary inherits them
        if memory is not None:
            data["memory"] = memory.id
        assert self.summarizer is not None
        spent = {"purpose": "compact", "model": self.summarizer.model.name, **usage.to_dict()}
        async with self._commit_phase():
            carried = await self.log.read_back(_after(upto))
            written = await self.log.append_many([("usage", spent), ("session", data), *map(_carry, carried)])
        return written[1], tuple(written[2:])

    def _readers(self, covered: list[Entry]) -> TrustLevel:
        """Who may read a summary of ``covered``: the highest level of its contents (``core.levels``), the
        people's messages rated by ``trust_of``; ``owner`` when unknown."""

        def level(entry: Entry) -> TrustLevel | None:
            if is_message(entry) and entry.data.get("role") == "user":
                return self.trust_of(entry)
            return content_level(entry)

        return summary_readers(covered, level)


Subjects = tuple[tuple[str, ...], tuple[str, ...]]
"""The chats and the senders a summary is about (``summarizer.subjects_of``)."""


def _subjects(covered: list[Entry]) -> Subjects:
    """What a summary of ``covered`` is about: its people's messages, and what the summary it carries on was."""
    chats, senders = subjects_of(covered)
    for entry in covered:
        if entry.type == "session":
            chats += tuple(str(v) for v in entry.data.get("chats") or () if isinstance(v, str))
            senders += tuple(str(v) for v in entry.data.get("senders") or () if isinstance(v, str))
    return tuple(dict.fromkeys(chats)), tuple(dict.fromkeys(senders))


def _has_content(window: list[Entry]) -> bool:
    return any(is_message(entry) for entry in window) or bool(window and carried_summary(window[0]))


def _busy(timeout: float) -> SessionChange:
    return SessionChange("failed", f"A turn is still running after {timeout:g}s; the session is unchanged. Try again.")


def _failed(what: str, exc: BaseException) -> SessionChange:
    logger.warning("could not %s: %s", what, exc)
    return SessionChange("failed", f"Could not {what} ({exc}); the session is unchanged.", error=exc)
