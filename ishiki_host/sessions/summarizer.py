"""The summarizer: background model calls that turn conversation into memory.

Two jobs, both ``background`` priority so interactive turns go first:

- ``condense`` (``summarizer: auto``): after each successful turn, the exchange (the messages new in that
  turn and what the persona did) becomes one memory row. The model answers strict JSON
  ``{"type": "fact" | "lesson" | "reminder" | "summary", "content": "..."}``, and for a reminder may add
  ``"when"``: the local date-time it is due (``"2026-12-04T18:00"``, resolved against the time "now" the call
  is told) or ``null``. Any other answer (prose, a code fence, an unknown type, other keys) is stored whole as
  a ``summary``; a ``when`` is kept as the model wrote it, for the caller to check (``Remembered.when``). A
  failed or aborted turn adds none. ``remember_turn`` does the whole step: read the exchange from the fact
  log, condense, store with ``min_trust`` = the turn's trust level (what an untrusted turn produced stays
  readable to it; what an owner-only turn produced stays owner-only).
- ``summarize`` (``/compact`` and the safety valve): a whole session, plus the summary it was seeded with,
  becomes plain text that seeds the next session. A model error, a timeout or an empty answer raises
  (``ModelError``), and the caller keeps the session as it was.

``needs_compaction`` is the safety valve's test (``summarizer: manual``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import anyio

from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, Usage
from ishiki_host.core.strict_json import loads_strict
from ishiki_host.core.subjects import entry_chat, entry_sender
from ishiki_host.core.tokens import host_estimator
from ishiki_host.errors import IshikiError, ModelBadRequest, ModelUnavailable
from ishiki_host.sessions.transcript import render_transcript
from ishiki_host.store.repos.memory_types import MEMORY_TYPES, MemoryType

if TYPE_CHECKING:
    from datetime import datetime

    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.model import LanguageModel, Priority
    from ishiki_host.core.tokens import Estimator
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.core.turns import TurnOutcome
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.memory_types import Memory

__all__ = [
    "CONDENSE_SYSTEM",
    "MAX_MEMORY_CHARS",
    "SUMMARY_SYSTEM",
    "Condensed",
    "Remembered",
    "Summarizer",
    "exchange_entries",
    "needs_compaction",
    "parse_condensed",
    "parse_memory_reply",
    "remember_turn",
    "subjects_of",
]

logger = logging.getLogger(__name__)

MAX_MEMORY_CHARS = 2_000
_EXCHANGE_LIMIT = 400  # entries read back for one turn's exchange at most

CONDENSE_SYSTEM = """\
You keep the long-term memory of a chat persona. Read the exchange and write the one note worth keeping.
Answer with exactly one JSON object and nothing else: {"type": "<type>", "content": "<note>"}
type is one of:
- "fact": something durable about a person, place or thing (a name, a preference, a date)
- "lesson": something the persona learned about how to behave or how to do a task
- "reminder": something someone asked to be reminded of later
- "summary": a short summary of the exchange, when nothing more specific fits
content: one to three sentences, third person, in the language of the conversation, with names and dates.
For a "reminder", content says whom to remind of what ("Remind Ana to call her mother."), and add "when": the \
local date and time it is due, as "YYYY-MM-DDTHH:MM", worked out from the current time given before the \
exchange (a day without a time of day is 09:00), or null when no time was named:
{"type": "reminder", "content": "<note>", "when": "2026-12-04T18:00"}"""

SUMMARY_SYSTEM = """\
You summarize a chat conversation so it can go on in a fresh session that only sees your summary.
Keep who is who, what was decided, what was promised, open questions and facts worth keeping; drop small \
talk. Include the earlier summary's essentials when there is one. Write plain prose, at most {words} words, \
in the language of the conversation."""


@dataclass(frozen=True, slots=True)
class Condensed:
    """One exchange condensed: the memory's type and text, the tokens the call used, and for a reminder
    ``when`` it is due as the model wrote it (unchecked; ``None``: no time named)."""

    type: MemoryType
    content: str
    usage: Usage = field(default_factory=Usage)
    when: str | None = None


@dataclass(frozen=True, slots=True)
class Remembered:
    """What ``remember_turn`` stored: the memory, and for a reminder ``when`` it is due (``Condensed.when``)."""

    memory: Memory
    when: str | None = None


def needs_compaction(estimated_tokens: int, context_window: int, threshold: float) -> bool:
    """Whether a session of ``estimated_tokens`` reached ``threshold`` × ``context_window`` (the safety valve)."""
    if context_window <= 0 or threshold <= 0:
        return False
    return estimated_tokens >= threshold * context_window


def parse_condensed(text: str) -> Condensed | None:
    """A condense reply as a ``Condensed`` (without usage); ``None`` for a blank reply.

    Strict: exactly one JSON object with exactly ``type`` (one of fact, lesson, reminder, summary), a non-empty
    string ``content`` and optionally ``when``. Anything else is the model's text, kept whole as a ``summary``.
    ``when`` is kept for a reminder only: a string as written, ``null`` as ``None``, any other value as its
    JSON text (which no date-time parser accepts, so the caller refuses it and says so).
    """
    stripped = text.strip()
    if not stripped:
        return None
    whole = Condensed("summary", stripped[:MAX_MEMORY_CHARS])
    try:
        value = loads_strict(stripped)
    except ValueError:
        return whole
    if not isinstance(value, dict) or set(value) - {"when"} != {"type", "content"}:
        return whole
    kind, content = value["type"], value["content"]
    if kind not in MEMORY_TYPES or not isinstance(content, str) or not content.strip():
        return whole
    when = _when(value.get("when")) if kind == "reminder" else None
    return Condensed(_memory_type(kind), content.strip()[:MAX_MEMORY_CHARS], when=when)


def parse_memory_reply(text: str) -> tuple[MemoryType, str] | None:
    """The ``(type, content)`` of a condense reply (``parse_condensed``); ``None`` for a blank reply."""
    parsed = parse_condensed(text)
    return (parsed.type, parsed.content) if parsed is not None else None


def _when(value: object) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value)
    return text.strip()[:100] or None


def _memory_type(value: str) -> MemoryType:
    return next(kind for kind in MEMORY_TYPES if kind == value)


def subjects_of(entries: Iterable[Entry]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The chats (``platform:selfId channelId``) and senders (``platform:userId``) of the people's messages
    among ``entries``, in order of first appearance: where a memory of them was made and whom it involves."""
    chats: dict[str, None] = {}
    senders: dict[str, None] = {}
    for entry in entries:
        if entry.type != "message" or entry.data.get("role") != "user" or entry.data.get("wake"):
            continue
        chat, sender = entry_chat(entry), entry_sender(entry)
        if chat is not None:
            chats[chat] = None
        if sender is not None:
            senders[sender] = None
    return tuple(chats), tuple(senders)


def exchange_entries(turn: int) -> Callable[[Iterator[Entry]], list[Entry]]:
    """A ``FactLog.read_back`` selector: turn ``turn``'s entries and the inbound messages it answered.

    Reading newest first: entries after the turn's end are skipped; the turn's own entries and the messages
    that joined it are kept; before its start, the inbound messages back to the previous turn (or the
    session's start) are kept.
    """

    def select(newest_first: Iterator[Entry]) -> list[Entry]:
        kept: list[Entry] = []
        started = False
        for count, entry in enumerate(newest_first):
            if count >= _EXCHANGE_LIMIT or entry.type == "session":
                break
            if entry.turn is not None and entry.turn > turn:
                continue
            if entry.turn is not None and entry.turn < turn:
                break
            if entry.turn == turn:
                started = started or entry.name == "turn.start"
                kept.append(entry)
            elif entry.type == "message" and (started or kept):
                kept.append(entry)
        kept.reverse()
        return [entry for entry in kept if entry.type == "message"]

    return select


class Summarizer:
    """Background summary calls on ``model`` (see the module docstring).

    ``input_budget`` bounds the transcript sent (tokens, by ``estimator``: the host's by default);
    ``timeout`` bounds each call.
    """

    def __init__(
        self,
        model: LanguageModel,
        *,
        estimator: Estimator | None = None,
        input_budget: int = 12_000,
        summary_words: int = 250,
        timeout: float = 180.0,
    ):
        self.model = model
        self.estimator = estimator or host_estimator()
        self.input_budget = input_budget
        self.summary_words = summary_words
        self.timeout = timeout

    async def condense(self, entries: list[Entry], *, now: datetime | None = None) -> Condensed | None:
        """One memory for an exchange (``None`` when it holds nothing to condense, or the answer is blank).

        ``now`` (with its zone) is told to the model before the exchange, so a reminder "on Friday" gets a date.
        """
        transcript = render_transcript(entries, budget_tokens=self.input_budget, estimator=self.estimator)
        if not transcript.strip():
            return None
        head = f"It is now {_moment(now)}.\n" if now is not None else ""
        text, usage = await self._call(CONDENSE_SYSTEM, f"{head}<exchange>\n{transcript}\n</exchange>", 300)
        parsed = parse_condensed(text)
        return replace(parsed, usage=usage) if parsed else None

    async def summarize(self, entries: list[Entry], *, priority: Priority = "background") -> tuple[str, Usage]:
        """The text that seeds the next session; raises ``ModelError`` when there is none to be had.
        ``priority``: ``interactive`` when a turn waits for it (the compaction before a turn)."""
        transcript = render_transcript(entries, budget_tokens=self.input_budget, estimator=self.estimator)
        system = SUMMARY_SYSTEM.format(words=self.summary_words)
        text, usage = await self._call(system, f"<conversation>\n{transcript}\n</conversation>", None, priority)
        summary = _unwrap_summary(text)
        if not summary:
            raise ModelBadRequest("the summarizer answered nothing", model=self.model.name)
        return summary, usage

    async def _call(
        self, system: str, user: str, max_tokens: int | None, priority: Priority = "background"
    ) -> tuple[str, Usage]:
        request = ModelRequest(
            messages=(Message.system(system), Message.user(user)),
            max_tokens=max_tokens or self.summary_words * 3,
            temperature=0.2,
            priority=priority,
        )
        try:
            with anyio.fail_after(self.timeout):
                result = await self.model.generate(request)
        except TimeoutError:
            message = f"the summarizer gave no answer in {self.timeout:g}s"
            raise ModelUnavailable(message, model=self.model.name) from None
        return result.text, result.usage


def _moment(now: datetime) -> str:
    """``Monday 2026-11-30 10:00 (Europe/Berlin)``: the day, date, time and zone the model resolves against."""
    zone = getattr(now.tzinfo, "key", None) or now.tzname() or "UTC"
    return f"{now:%A %Y-%m-%d %H:%M} ({zone})"


def _unwrap_summary(text: str) -> str:
    """The summary text; a JSON object ``{"summary": "..."}`` is accepted too (models like to answer JSON)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except ValueError:
            return stripped
        if isinstance(value, dict) and isinstance(value.get("summary"), str):
            return str(value["summary"]).strip()
    return stripped


async def remember_turn(
    summarizer: Summarizer,
    store: MemoryStore,
    log: FactLogProtocol,
    outcome: TurnOutcome,
    *,
    trust: TrustLevel,
    profile: str,
    runtime_key: str,
    session_id: int | None,
    now: datetime | None = None,
) -> Remembered | None:
    """Condense a finished turn's exchange into one memory (``summarizer: auto``); never raises.

    Returns the memory stored (with a reminder's ``when``), or ``None``: the turn did not end ``done``, it had
    nothing to condense, or the call or the store failed (logged). ``min_trust`` is ``trust``, the turn's
    level; the memory records the chats and senders of the exchange's inbound messages (``subjects_of``),
    which ``memory.scope`` matches. ``now`` is the host's time, told to the model (``Summarizer.condense``).
    """
    if outcome.status != "done":
        return None
    try:
        entries = await log.read_back(exchange_entries(outcome.turn))
        condensed = await summarizer.condense(entries, now=now)
        if condensed is None:
            return None
        chats, senders = subjects_of(entries)
        memory = await store.memories.add(
            condensed.type,
            condensed.content,
            profile=profile,
            runtime_key=runtime_key,
            session_id=session_id,
            min_trust=trust,
            chats=chats,
            senders=senders,
        )
        return Remembered(memory, condensed.when)
    except IshikiError as exc:
        logger.warning("no memory of turn %s of %s: %s", outcome.turn, runtime_key, exc)
        return None
