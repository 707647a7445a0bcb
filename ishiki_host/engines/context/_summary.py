"""The summary the ``standard`` context engine writes for entries it drops from the window.

``collect_dropped`` reads, newest first, what a compaction up to ``cut`` must cover: the summary of the current
head (a ``compact`` entry or a seeded ``session``) and the entries after it up to ``cut``, newest ones first
while they fit the input budget (older ones beyond it are ``omitted`` and said to be). ``summary_request``
builds the background call: the previous summary and a plain transcript in, an updated summary out, so the
newest ``compact`` entry always stands for the whole conversation before its ``upto``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_host.core.entries import Entry
from ishiki_host.core.levels import summary_readers
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel

__all__ = ["SUMMARY_SYSTEM", "Dropped", "collect_dropped", "summary_request"]

SUMMARY_SYSTEM = """\
You maintain the running summary of a chat so that an assistant can continue it after older messages are \
removed from its view. Merge the earlier summary (if any) with the new part of the conversation into one \
updated summary. Keep what the assistant needs later: who the participants are (names and ids), facts they \
shared, questions still open, decisions, promises and tasks the assistant took on, what the assistant already \
said or sent, and the tone of the chat. Leave out greetings and small talk. Write plain prose or short bullet \
points in the language of the conversation, at most about {words} words. Answer with the summary only."""


@dataclass(frozen=True, slots=True)
class Dropped:
    """What one compaction covers: the previous summary (``head``: the entry carrying it) and the entries
    after it, oldest first."""

    previous: str | None
    entries: list[Entry]
    omitted: bool
    head: Entry | None = None

    def readers(self) -> TrustLevel:
        """The lowest level that may read the summary of all this (``summary_readers``)."""
        return summary_readers([*([self.head] if self.head is not None else []), *self.entries])


def collect_dropped(
    newest_first: Iterator[Entry], *, cut: int, budget: int, cost: Callable[[Entry], int]
) -> Dropped | None:
    """The entries a compaction up to ``cut`` covers, or ``None`` when a compact entry already covers ``cut``.

    Reads at most the entries after ``cut`` plus about twice ``budget`` tokens' worth before it.
    """
    previous: str | None = None
    head: Entry | None = None
    floor = 0
    seen_compact = False
    picked: list[Entry] = []
    used = skipped = 0
    omitted = False
    for entry in newest_first:
        if entry.id <= floor:
            break
        if entry.type == "compact" and not seen_compact:
            seen_compact = True
            upto = entry.data.get("upto")
            floor = upto if isinstance(upto, int) and not isinstance(upto, bool) else 0
            if floor >= cut:
                return None
            previous, head = _summary(entry), entry
            continue
        if entry.type == "session":
            if entry.id > cut:
                return None
            if not seen_compact:
                previous, head = _summary(entry), entry
            break
        if entry.id > cut or entry.type == "compact":
            continue
        size = cost(entry)
        if omitted or (picked and used + size > budget):
            omitted = True  # read on a little, only to find the previous summary
            skipped += size
            if skipped > budget:
                break
            continue
        picked.append(entry)
        used += size
    picked.reverse()
    return Dropped(previous, picked, omitted, head)


def summary_request(transcript: list[str], dropped: Dropped, *, max_tokens: int) -> ModelRequest:
    """The background call that merges ``dropped.previous`` with the ``transcript`` into one summary."""
    sections = []
    if dropped.previous:
        sections.append(f"Earlier summary:\n{dropped.previous}")
    if dropped.omitted:
        sections.append("(Older messages of this part were too long to include and are left out.)")
    sections.append("New part of the conversation, oldest first:\n" + "\n".join(transcript))
    sections.append("Write the updated summary.")
    words = max(50, max_tokens * 3 // 5)
    return ModelRequest(
        messages=(Message.system(SUMMARY_SYSTEM.format(words=words)), Message.user("\n\n".join(sections))),
        max_tokens=max_tokens,
        priority="background",
    )


def _summary(entry: Entry) -> str | None:
    summary = entry.data.get("summary")
    return summary if isinstance(summary, str) and summary.strip() else None
