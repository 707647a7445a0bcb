"""The story state and the Narrator's decision: their JSON forms, strict readers and prompt renderings.

A ``Narrative`` is what the context engine keeps: who is present, what is going on, the open threads and the
persona's current intent. It is stored as the ``data`` of a ``narrative`` fact-log entry (with bookkeeping
keys such as ``upto``; see docs/factlog.md) and given to every role as "the story so far". Its size is
bounded (``LIMITS``) so the prompt stays flat however long the conversation runs.

A ``Decision`` is the Narrator's answer: ``{"intent": "act" | "reply" | "wait" | "finish", "rationale": "..."}``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from ishiki_engine_narrative._text import clip, one_line, read_json_object
from ishiki_engine_narrative.errors import RoleOutputInvalid

if TYPE_CHECKING:
    from ishiki_host import Entry

__all__ = [
    "ENTRY_TYPE",
    "FIELDS",
    "INTENTS",
    "LIMITS",
    "Decision",
    "Intent",
    "Narrative",
    "parse_decision",
    "parse_narrative",
]

logger = logging.getLogger(__name__)

ENTRY_TYPE = "narrative"
"""The fact-log entry type of a narrative update."""

Intent = Literal["act", "reply", "wait", "finish"]
INTENTS: tuple[str, ...] = get_args(Intent)
FIELDS = ("present", "situation", "threads", "intent")
LIMITS: Mapping[str, int] = {
    "present": 12,  # people listed
    "threads": 8,  # open threads listed
    "item": 160,  # characters of one person or thread
    "situation": 1200,  # characters
    "intent": 300,  # characters
    "rationale": 300,  # characters of the Narrator's rationale
}
"""Bounds of a narrative (and of a rationale); longer answers are clipped, and the entry says so."""


@dataclass(frozen=True, slots=True)
class Narrative:
    """The running story state of one runtime."""

    present: tuple[str, ...] = ()
    situation: str = ""
    threads: tuple[str, ...] = ()
    intent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The story keys of a ``narrative`` entry's ``data``."""
        return {
            "present": list(self.present),
            "situation": self.situation,
            "threads": list(self.threads),
            "intent": self.intent,
        }

    @classmethod
    def from_entry(cls, entry: Entry) -> Narrative | None:
        """The narrative a stored entry holds, or ``None`` (logged) when its data is malformed."""
        try:
            narrative, _ = _build(entry.data, who=f"narrative entry {entry.id}")
        except RoleOutputInvalid as exc:
            logger.warning("%s; the narrative engines ignore it", exc)
            return None
        return narrative

    @property
    def empty(self) -> bool:
        """Whether nothing is known yet."""
        return not (self.present or self.situation or self.threads or self.intent)

    def render(self) -> str:
        """The story as the models read it (Markdown, one fact per line)."""
        lines = [f"Present: {', '.join(self.present) if self.present else '(nobody known)'}"]
        lines.append(f"What is going on: {self.situation or '(nothing yet)'}")
        if self.threads:
            lines.append("Open threads:")
            lines += [f"- {thread}" for thread in self.threads]
        else:
            lines.append("Open threads: none")
        lines.append(f"The persona's current intent: {self.intent or '(none)'}")
        return "\n".join(lines)


def parse_narrative(text: str) -> tuple[Narrative, bool]:
    """Read an update's answer strictly: one JSON object with exactly the four story keys.

    Returns the narrative and whether it had to be clipped to ``LIMITS``. Raises ``RoleOutputInvalid``.
    """
    data = read_json_object(text, who="the narrative update")
    extra = sorted(set(data) - set(FIELDS))
    if extra:
        raise RoleOutputInvalid(f"the narrative update answered unknown keys {extra}; expected {list(FIELDS)}")
    return _build(data, who="the narrative update")


def _build(data: Mapping[str, Any], *, who: str) -> tuple[Narrative, bool]:
    missing = [key for key in FIELDS if key not in data]
    if missing:
        raise RoleOutputInvalid(f"{who} lacks {missing}; expected {list(FIELDS)}")
    present, cut_present = _strings(data["present"], "present", who)
    threads, cut_threads = _strings(data["threads"], "threads", who)
    situation, cut_situation = _string(data["situation"], "situation", who)
    intent, cut_intent = _string(data["intent"], "intent", who)
    clipped = cut_present or cut_threads or cut_situation or cut_intent
    return Narrative(present, situation, threads, intent), clipped


def _string(value: Any, key: str, who: str) -> tuple[str, bool]:
    if not isinstance(value, str):
        raise RoleOutputInvalid(f'{who}: "{key}" must be a string, not {type(value).__name__}')
    text = value.strip()
    limited = clip(text, LIMITS[key])
    return limited, limited != text


def _strings(value: Any, key: str, who: str) -> tuple[tuple[str, ...], bool]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RoleOutputInvalid(f'{who}: "{key}" must be a list of strings')
    items = [one_line(item) for item in value if item.strip()]
    kept = [clip(item, LIMITS["item"]) for item in items[: LIMITS[key]]]
    return tuple(kept), kept != items


@dataclass(frozen=True, slots=True)
class Decision:
    """The Narrator's choice of what the persona does next, with a one-line reason."""

    intent: Intent
    rationale: str

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        return {"intent": self.intent, "rationale": self.rationale}


def parse_decision(text: str) -> Decision:
    """Read the Narrator's answer strictly: ``{"intent": <one of INTENTS>, "rationale": "<text>"}``.

    Exactly those two keys; the rationale is made one line and clipped. Raises ``RoleOutputInvalid``.
    """
    data = read_json_object(text, who="the Narrator")
    if set(data) != {"intent", "rationale"}:
        missing, extra = sorted({"intent", "rationale"} - set(data)), sorted(set(data) - {"intent", "rationale"})
        raise RoleOutputInvalid(f"the Narrator's answer has missing keys {missing} / extra keys {extra}")
    intent, rationale = data["intent"], data["rationale"]
    if intent not in INTENTS:
        raise RoleOutputInvalid(f"the Narrator chose intent {intent!r}; expected one of {', '.join(INTENTS)}")
    if not isinstance(rationale, str) or not rationale.strip():
        raise RoleOutputInvalid('the Narrator\'s "rationale" must be a non-empty string')
    return Decision(intent, clip(one_line(rationale), LIMITS["rationale"]))
