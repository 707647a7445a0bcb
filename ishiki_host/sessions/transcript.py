"""Fact-log entries as a plain transcript, for the background calls that summarize them.

A summarizer reads who said what, not the wire format: an inbound message is ``[Ana (telegram:42)] text``, the persona's
text is ``[you] text``, a tool call ``[you → read] {...}`` and its result ``[read →] ...`` (results and long
messages are shortened; images are ``[image]``). A carried summary opens the transcript. When the whole
transcript is over its token budget, the oldest lines are left out (the summary of an earlier session never
is), so summarizing a session that overflowed the model's context still fits the summarizer's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.core.tokens import estimate_tokens

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tokens import Estimator

__all__ = ["MAX_MESSAGE_CHARS", "MAX_RESULT_CHARS", "carried_summary", "render_entry", "render_transcript"]

MAX_MESSAGE_CHARS = 4_000
MAX_RESULT_CHARS = 600
_OMITTED = "(earlier messages left out)"


def _shorten(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _text(data: Mapping[str, Any]) -> str:
    pieces = []
    for part in data.get("parts") or ():
        if isinstance(part, Mapping):
            pieces.append(str(part.get("text", "")) if part.get("type") != "image" else "[image]")
    if not pieces and isinstance(data.get("content"), str):
        pieces.append(data["content"])
    return " ".join(p for p in pieces if p)


def _speaker(data: Mapping[str, Any]) -> str:
    source = data.get("source")
    if data.get("wake"):
        return "prompt"
    if isinstance(source, Mapping) and isinstance(source.get("user"), Mapping):
        user = source["user"]
        who = f"{source.get('platform')}:{user.get('id')}"
        return f"{user['name']} ({who})" if user.get("name") else who
    return "user"


def carried_summary(entry: Entry) -> str | None:
    """The summary a ``session`` or ``compact`` entry carries, if any."""
    if entry.type not in ("session", "compact"):
        return None
    summary = entry.data.get("summary")
    return summary if isinstance(summary, str) and summary.strip() else None


def render_entry(entry: Entry) -> list[str]:
    """The transcript lines of one entry (none for events and records)."""
    summary = carried_summary(entry)
    if summary is not None:
        return [f"[summary of the conversation before] {summary.strip()}"]
    if entry.type != "message":
        return []
    data, role = entry.data, entry.data.get("role")
    if role == "user":
        return [f"[{_speaker(data)}] {_shorten(_text(data), MAX_MESSAGE_CHARS)}"]
    if role == "assistant":
        lines = [f"[you] {_shorten(_text(data), MAX_MESSAGE_CHARS)}"] if _text(data).strip() else []
        for call in data.get("tool_calls") or ():
            if isinstance(call, Mapping):
                arguments = json.dumps(call.get("arguments") or {}, ensure_ascii=False)
                lines.append(f"[you → {call.get('name')}] {_shorten(arguments, MAX_MESSAGE_CHARS)}")
        return lines
    if role == "tool":
        marker = " (error)" if data.get("is_error") else ""
        return [f"[{data.get('tool_name') or 'tool'} →{marker}] {_shorten(_text(data), MAX_RESULT_CHARS)}"]
    return []


def render_transcript(
    entries: Iterable[Entry], *, budget_tokens: int | None = None, estimator: Estimator = estimate_tokens
) -> str:
    """The transcript of ``entries`` (oldest first), cut to ``budget_tokens`` by leaving out the oldest lines."""
    head: list[str] = []
    body: list[str] = []
    for entry in entries:
        (head if carried_summary(entry) is not None else body).extend(render_entry(entry))
    if budget_tokens is None:
        return "\n".join(head + body)
    used = sum(estimator(line) + 1 for line in head)
    kept: list[str] = []
    for line in reversed(body):
        cost = estimator(line) + 1
        if used + cost > budget_tokens and kept:
            kept.append(_OMITTED)
            break
        used += cost
        kept.append(line)
    kept.reverse()
    return "\n".join(head + kept)
