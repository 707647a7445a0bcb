"""The ``standard`` wakeup engine: answer direct messages, mentions, quotes and keywords.

The instance subscribes to the runtime's bus. For every inbound platform message (a ``message`` entry with
role ``user`` and a ``data.source`` of kind ``message.created``) it starts a turn, ``agent.continue_(None,
reason="wakeup.standard", info={"entry": id, "rule": rule})``, when a rule holds, checked in this order:
``direct`` (a private chat), ``mention`` (``source.mentionsSelf``), ``quote`` (``source.quote.fromSelf``),
``open`` (a group whose channel needs no mention there: ``source.extra.mentionRequired`` is ``false``),
``keyword``. Anything else (group chatter, wake prompts, the agent's own messages and tool results,
non-message entries) is only recorded; the persona sees it at its next turn. An edit of a message
(``source.extra.editedAt``) never starts a turn by itself (see ``_inbound``).

A message that joined a running turn is left to that turn; if the turn ended without seeing it (it is in
``TurnOutcome.unseen``), the rule is applied when the turn's end is announced. ``reconsider`` applies the rule to
messages a crashed turn left unanswered. ``continue_(None)`` joins a queued turn, so a burst of triggering
messages becomes one turn.

Keywords match case-insensitively (``str.casefold``), with runs of whitespace treated as one space, as whole
words: an edge of the keyword that is a letter or digit of a space-separated script must not touch another
letter or digit (``cat`` matches "a cat!" and "Cat?" but not "category"), while an edge in a script written
without spaces (Chinese, Japanese, Korean) may touch anything (``猫`` matches "我的猫很可爱").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host.engines._options import resolve_options
from ishiki_host.engines.wakeup._inbound import is_direct, is_open_chat, message_text, quotes_self, wake_source
from ishiki_host.errors import AgentStopped
from ishiki_host.plugins.base import WakeupEngine

if TYPE_CHECKING:
    from ishiki_host.core.bus import BusEvent
    from ishiki_host.core.entries import Entry
    from ishiki_host.plugins.runtime_api import Dispose, RuntimeContext

__all__ = ["KeywordMatcher", "StandardWakeup", "StandardWakeupEngine", "wake_rule"]

logger = logging.getLogger(__name__)

REASON = "wakeup.standard"
_END_EVENTS = ("turn.done", "turn.failed", "turn.aborted")
# Code points of scripts written without spaces between words: a keyword edge there needs no word boundary.
_UNSPACED = (
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x2FFFF),  # CJK extensions B-F
)


class StandardWakeupEngine(WakeupEngine):
    """Starts a turn for a direct message, a mention of the bot, a quote of the bot, any message of a group that
    needs no mention, or a keyword.

    Other group messages are recorded without a turn; the persona sees them at its next turn.
    """

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "keywords": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "pattern": "\\S"},
                "default": [],
                "description": "Words that start a turn when a message contains them (case-insensitive, whole words).",
            },
            "direct": {"type": "boolean", "default": True, "description": "Answer every direct (private) message."},
            "mention": {"type": "boolean", "default": True, "description": "Answer messages that mention the bot."},
            "quote": {"type": "boolean", "default": True, "description": "Answer messages that quote the bot."},
        },
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> StandardWakeup:
        """Make the engine instance for one runtime."""
        return StandardWakeup(ctx, resolve_options(self.config_schema, config, where="wakeup.standard"))


class StandardWakeup:
    """One runtime's standard wakeup engine (see the module docstring)."""

    def __init__(self, ctx: RuntimeContext, options: Mapping[str, Any]):
        self.ctx = ctx
        self.direct = bool(options["direct"])
        self.mention = bool(options["mention"])
        self.quote = bool(options["quote"])
        self.keywords = KeywordMatcher(options["keywords"])

    def attach(self, ctx: RuntimeContext) -> Dispose:
        """Subscribe to ``message.appended`` and the turn end events; returns the unsubscriber."""
        self.ctx = ctx
        unsubscribe = [ctx.bus.subscribe("message.appended", self._on_appended)]
        unsubscribe += [ctx.bus.subscribe(name, self._on_turn_end) for name in _END_EVENTS]

        def dispose() -> None:
            for undo in unsubscribe:
                undo()

        return dispose

    async def reconsider(self, entries: Sequence[Entry]) -> None:
        """Apply the rule to messages a crashed turn left unanswered (in order; one turn for them all)."""
        for entry in entries:
            await self.decide(entry)

    async def decide(self, entry: Entry) -> str | None:
        """Start a turn for ``entry`` if a rule holds; returns the rule (``None``: recorded only)."""
        rule = wake_rule(entry, direct=self.direct, mention=self.mention, quote=self.quote, keywords=self.keywords)
        if rule is None:
            return None
        try:
            await self.ctx.agent.continue_(None, reason=REASON, info={"entry": entry.id, "rule": rule})
        except AgentStopped:
            logger.debug("%s: entry %s not answered: the agent is stopping", self.ctx.key, entry.id)
            return None
        return rule

    async def _on_appended(self, event: BusEvent) -> None:
        if not event.data.get("joined"):  # a joined entry is the running turn's; unseen ones come back below
            await self.decide(event["entry"])

    async def _on_turn_end(self, event: BusEvent) -> None:
        for entry in getattr(event.data.get("outcome"), "unseen", ()):
            await self.decide(entry)


def wake_rule(
    entry: Entry,
    *,
    direct: bool = True,
    mention: bool = True,
    quote: bool = True,
    keywords: KeywordMatcher | None = None,
) -> str | None:
    """The first rule that starts a turn for ``entry`` (direct, mention, quote, open, keyword), or ``None``."""
    source = wake_source(entry)
    if source is None:
        return None
    if direct and is_direct(source):
        return "direct"
    if mention and source.get("mentionsSelf"):
        return "mention"
    if quote and quotes_self(source):
        return "quote"
    if is_open_chat(source):
        return "open"
    if keywords and keywords.search(message_text(entry)):
        return "keyword"
    return None


class KeywordMatcher:
    """Whole-word, case-insensitive keyword search (see the module docstring for what a word edge is)."""

    def __init__(self, keywords: Sequence[str]):
        normalized = (_normalize(k) for k in keywords)
        self.keywords: tuple[str, ...] = tuple(dict.fromkeys(k for k in normalized if k))

    def __bool__(self) -> bool:
        return bool(self.keywords)

    def search(self, text: str) -> bool:
        """Whether any keyword occurs in ``text`` as a whole word."""
        return self.find(text) is not None

    def find(self, text: str) -> str | None:
        """The first keyword (normalized) that occurs in ``text``, if any."""
        haystack = _normalize(text)
        return next((k for k in self.keywords if _occurs(k, haystack)), None)


def _normalize(text: str) -> str:
    return " ".join(text.casefold().split())


def _occurs(keyword: str, text: str) -> bool:
    start = text.find(keyword)
    while start >= 0:
        end = start + len(keyword)
        before = text[start - 1] if start > 0 else ""
        after = text[end] if end < len(text) else ""
        if not (_joins(before, keyword[0]) or _joins(keyword[-1], after)):
            return True
        start = text.find(keyword, start + 1)
    return False


def _joins(left: str, right: str) -> bool:
    """Whether two adjacent characters are inside one word of a space-separated script."""
    return _wordish(left) and _wordish(right)


def _wordish(char: str) -> bool:
    if not char or not (char.isalnum() or char == "_"):
        return False
    code = ord(char)
    return not any(low <= code <= high for low, high in _UNSPACED)
