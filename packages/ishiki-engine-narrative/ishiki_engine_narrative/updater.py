"""The narrative update: one model call folds entries into the story and appends the new ``narrative`` entry.

It runs after each turn (``priority="background"``: the reply was already sent) and, as a catch-up, when more
messages piled up after the narrative than the window holds. The new entry's ``upto`` is the id of the last
entry folded; a failed update appends a ``narrative.update`` record and leaves the story as it was, so the
next update folds those entries too. Facts are never edited: the story only grows by appending.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ishiki_host import Message, ModelRequest
from ishiki_host.errors import ModelError

from ishiki_engine_narrative._text import clip
from ishiki_engine_narrative.errors import RoleOutputInvalid
from ishiki_engine_narrative.records import UPDATE_KIND, describe_error
from ishiki_engine_narrative.story import ENTRY_TYPE, LIMITS, Narrative, parse_narrative
from ishiki_engine_narrative.transcript import render_story, render_transcript
from ishiki_engine_narrative.window import is_message, project_window

if TYPE_CHECKING:
    from ishiki_host import Entry, FactLogProtocol, LanguageModel, Priority

    from ishiki_engine_narrative.config import RoleSettings

__all__ = ["NarrativeUpdater"]

logger = logging.getLogger(__name__)

_FORMAT = f"""## Answer format
Answer with one JSON object and nothing else, with exactly these keys:
{{"present": ["..."], "situation": "...", "threads": ["..."], "intent": "..."}}
- present: the people taking part now, by the names the events use (at most {LIMITS["present"]})
- situation: what is going on, in at most 150 words
- threads: open questions, promises and tasks not done yet, one line each (at most {LIMITS["threads"]})
- intent: what the persona (YOU in the events) means to do next, in one sentence"""
_PERSONA_CHARS = 3000


class NarrativeUpdater:
    """Folds entries into the narrative of one runtime (``model`` answers unless the role names its own)."""

    def __init__(self, settings: RoleSettings, model: LanguageModel, persona: str):
        self.settings = settings
        self.model = settings.model or model
        self.persona = persona

    def request(
        self, previous: Narrative | None, entries: Sequence[Entry], priority: Priority, skipped: int = 0
    ) -> ModelRequest:
        """The update's request: the persona, the story so far, what happened since, the answer format."""
        events = render_transcript(project_window(entries)) or "(nothing)"
        if skipped:
            events = f"({skipped} older messages could not be read back and are left out)\n{events}"
        user = "\n\n".join(
            [
                f"## The persona\n{clip(self.persona.strip(), _PERSONA_CHARS) or '(not described)'}",
                f"## The story so far\n{render_story(previous)}",
                f"## What happened since (oldest first)\n{events}",
                _FORMAT,
            ]
        )
        return ModelRequest(
            messages=(Message.system(self.settings.prompt), Message.user(user)),
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            priority=priority,
        )

    async def fold(
        self,
        log: FactLogProtocol,
        previous: Entry | None,
        entries: Sequence[Entry],
        *,
        reason: str,
        priority: Priority,
        skipped: int = 0,
        after_turn: int | None = None,
    ) -> Narrative | None:
        """Fold ``entries`` (oldest first) into the story; the new narrative, or ``None`` when the update failed."""
        story = Narrative.from_entry(previous) if previous is not None else None
        request = self.request(story, entries, priority, skipped)
        base: dict[str, Any] = {"reason": reason, "model": self.model.name}
        if after_turn is not None:
            base["after_turn"] = after_turn
        text = None
        try:
            result = await self.model.generate(request)
            text = result.text
            narrative, clipped = parse_narrative(result.text)
        except (ModelError, RoleOutputInvalid) as exc:
            logger.warning("narrative update (%s) failed: %s", reason, describe_error(exc))
            record = {"kind": UPDATE_KIND, "ok": False, **base, "error": describe_error(exc)}
            if text:
                record["text"] = clip(text, 4000)
            await log.append("custom", record)
            return None
        model = result.model or self.model.name
        usage = {"purpose": "narrative.update", "model": model, **result.usage.to_dict()}
        data: dict[str, Any] = {**narrative.to_dict(), "upto": entries[-1].id, **base, "model": model}
        data["folded"] = sum(1 for entry in entries if is_message(entry))
        data["usage"] = result.usage.to_dict()
        if skipped:
            data["skipped"] = skipped
        if clipped:
            data["clipped"] = True
        await log.append_many([("usage", usage), (ENTRY_TYPE, data)])
        return narrative
