"""What the crash harness checks once the last ``ishiki run`` has stopped: one function per property.

Each check reads what the killed hosts left (the fact logs, ``memory.db``, the ``.corrupt`` files, the logs
of every life) and what the fakes recorded (the messages the Bot API saw sent), and returns a ``Property``:
whether it holds and, when it does not, the first offending items.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _crash_model import tokens_in

from ishiki_host.core.recovery import INTERRUPTED

__all__ = ["FactLogs", "Property", "Torn", "check_answers", "check_inbound", "check_memory_db", "check_tool_results",
           "check_torn_tails"]  # fmt: skip

_SHOWN = 8


@dataclass(frozen=True)
class Property:
    """One checked property: its name, whether it holds, a one-line summary and the first offending items."""

    name: str
    ok: bool
    summary: str
    offending: tuple[str, ...] = ()

    def line(self) -> str:
        """``PASS name: summary`` (with the offending items when it fails)."""
        head = f"{'PASS' if self.ok else 'FAIL'} {self.name}: {self.summary}"
        return head if self.ok else head + "".join(f"\n    {item}" for item in self.offending[:_SHOWN])


@dataclass(frozen=True)
class Torn:
    """A torn tail the harness wrote at the end of a fact log (as a write cut by a power loss would leave)."""

    path: Path
    data: bytes
    after_life: int


@dataclass
class FactLogs:
    """Every line of every ``facts.jsonl`` under a data directory, parsed (``bad`` lists lines that are not)."""

    entries: dict[Path, list[dict[str, Any]]] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, data_dir: Path) -> FactLogs:
        """Read them all."""
        logs = cls()
        for path in sorted(Path(data_dir, "runtimes").rglob("facts.jsonl")):
            raw = path.read_bytes()
            if raw and not raw.endswith(b"\n"):
                logs.bad.append(f"{path}: the last line has no newline (torn)")
            parsed = []
            lines = raw.split(b"\n")  # not splitlines(): a JSON string may hold U+0085 or U+2028 as is
            if lines[-1] == b"":
                lines.pop()
            for number, line in enumerate(lines, 1):
                try:
                    entry = json.loads(line)
                except ValueError:
                    logs.bad.append(f"{path}:{number}: not JSON: {line[:80]!r}")
                    continue
                parsed.append(entry)
            logs.entries[path] = parsed
        return logs

    def all(self) -> Iterable[tuple[Path, dict[str, Any]]]:
        """Every entry with its log."""
        for path, entries in self.entries.items():
            for entry in entries:
                yield path, entry

    def inbound(self) -> list[tuple[Path, dict[str, Any]]]:
        """Inbound platform messages (user messages with a ``source``, not wake prompts)."""
        return [
            (path, entry)
            for path, entry in self.all()
            if entry.get("type") == "message"
            and entry["data"].get("role") == "user"
            and isinstance(entry["data"].get("source"), Mapping)
            and not entry["data"].get("wake")
        ]

    def in_doubt(self) -> set[str]:
        """Tokens of send_message calls the recovery answered as interrupted: whether they went out is unknown."""
        tokens: set[str] = set()
        for entries in self.entries.values():
            calls = _send_calls(entries)
            for entry in entries:
                data = entry["data"]
                if data.get("role") == "tool" and _content(data) == INTERRUPTED and data.get("tool_call_id") in calls:
                    tokens.update(calls[data["tool_call_id"]])
        return tokens


def _content(data: Mapping[str, Any]) -> str:
    parts = data.get("parts") or ()
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))


def _send_calls(entries: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    calls: dict[str, list[str]] = {}
    for entry in entries:
        for call in entry["data"].get("tool_calls") or ():
            if call.get("name") == "send_message":
                messages = (call.get("arguments") or {}).get("messages") or []
                calls[str(call.get("id"))] = [t for m in messages for t in tokens_in(str(m))]
    return calls


def check_inbound(logs: FactLogs, tokens: Sequence[str]) -> Property:
    """Every inbound message is in a fact log exactly once."""
    seen = Counter(t for _, entry in logs.inbound() for t in tokens_in(str(entry["data"]["source"].get("content"))))
    missing = [t for t in tokens if seen[t] == 0]
    twice = [f"{t} x{seen[t]}" for t in tokens if seen[t] > 1]
    summary = f"{len(tokens)} messages: {len(missing)} missing, {len(twice)} recorded more than once"
    return Property("inbound messages in a fact log exactly once", not missing and not twice, summary,
                    tuple(f"missing {t}" for t in missing) + tuple(f"duplicated {t}" for t in twice))  # fmt: skip


def check_answers(answers: Counter[str], direct: Sequence[str], group: Sequence[str], in_doubt: set[str]) -> Property:
    """Direct messages get exactly one answer (none only when the kill cut their send: in doubt); groups none."""
    twice = [f"{t} answered {answers[t]} times" for t in direct if answers[t] > 1]
    lost = [f"{t} never answered" for t in direct if answers[t] == 0 and t not in in_doubt]
    cut = [t for t in direct if answers[t] == 0 and t in in_doubt]
    chatter = [f"group message {t} answered" for t in group if answers[t]]
    summary = (
        f"{len(direct)} direct messages: {len(direct) - len(twice) - len(lost) - len(cut)} answered once, "
        f"{len(twice)} more than once, {len(lost)} never, {len(cut)} unanswered after a kill cut their send "
        f"(at most once); {len(group)} group messages, {len(chatter)} answered"
    )
    return Property("every direct message answered exactly once", not (twice or lost or chatter), summary,
                    tuple(twice + lost + chatter))  # fmt: skip


def check_tool_results(logs: FactLogs) -> Property:
    """Every tool call in every log has exactly one result."""
    problems: list[str] = []
    calls = 0
    for path, entries in logs.entries.items():
        results: Counter[str] = Counter()
        asked: dict[str, str] = {}
        for entry in entries:
            data = entry["data"]
            if data.get("role") == "tool":
                results[str(data.get("tool_call_id"))] += 1
            for call in data.get("tool_calls") or ():
                asked[str(call.get("id"))] = str(call.get("name"))
        calls += len(asked)
        name = path.parent.name
        problems += [f"{name}: {tool} call {i} has no result" for i, tool in asked.items() if not results[i]]
        problems += [f"{name}: call {i} has {n} results" for i, n in results.items() if n > 1]
    summary = f"{calls} tool calls in {len(logs.entries)} logs, {len(problems)} problems"
    return Property("every tool call has exactly one result", not problems, summary, tuple(problems))


def check_memory_db(path: Path) -> Property:
    """``PRAGMA integrity_check`` of ``memory.db`` says ok (and how many rows the killed hosts left)."""
    if not path.exists():
        return Property("memory.db passes PRAGMA integrity_check", False, f"{path} was never created")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        verdict = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        rows = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        conn.close()
    ok = verdict == ["ok"]
    return Property("memory.db passes PRAGMA integrity_check", ok, f"{verdict[:1]}; {rows} memory rows", tuple(verdict))


def check_torn_tails(logs: FactLogs, torn: Sequence[Torn], life_logs: Sequence[Path]) -> Property:
    """Each torn tail ended in ``<log>.corrupt`` with a warning in a later life's log; no bad line is left."""
    problems = list(logs.bad)
    warned: dict[int, str] = {i: p.read_text("utf-8", "replace") for i, p in enumerate(life_logs)}
    for item in torn:
        corrupt = item.path.with_name(item.path.name + ".corrupt")
        if not corrupt.exists() or item.data not in corrupt.read_bytes():
            problems.append(f"{item.path}: the torn tail written after life {item.after_life} is not in {corrupt.name}")
        said = f"fact log {item.path}: set aside a torn tail"  # the warning itself, not any line naming the path
        if not any(said in text for i, text in warned.items() if i > item.after_life):
            problems.append(f"{item.path}: no life after {item.after_life} warned that it set a torn tail aside")
    summary = f"{len(torn)} torn tails written, {len(logs.bad)} bad lines left in the logs"
    return Property("no torn JSONL line left unflagged", not problems, summary, tuple(problems))


def answers_by_token(texts: Iterable[str]) -> Counter[str]:
    """How many sent messages acknowledge each token."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tokens_in(text))
    return counts


def duplicates_by_runtime(logs: FactLogs) -> dict[str, int]:
    """Inbound entries recorded more than once, per runtime directory (for the report)."""
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for path, entry in logs.inbound():
        source = entry["data"]["source"]
        per[path.parent.name][f"{source.get('channelId')}/{source.get('messageId')}"] += 1
    return {name: sum(n - 1 for n in counts.values() if n > 1) for name, counts in per.items()}
