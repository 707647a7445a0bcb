"""How the roles read a conversation: messages as a plain transcript, and the story block of the system prompt.

Roles never receive the host's raw message history: every role gets one rendered prompt (persona and rules,
the story so far, the recent events), so a role can be any model, with or without native tool calling, and
history shapes some providers reject (tool results without their call) never reach one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ishiki_engine_narrative._text import clip

if TYPE_CHECKING:
    from ishiki_host import Message

    from ishiki_engine_narrative.story import Narrative

__all__ = ["render_story", "render_transcript", "story_block", "strip_story_block"]

_BLOCK = re.compile(r"\n*<narrative(?: [^>]*)?>.*?</narrative>\n*", re.S)
NO_STORY = "(nothing yet: the story starts now)"


def render_transcript(messages: Iterable[Message], *, max_result_chars: int = 4000) -> str:
    """One line (or paragraph) per message, oldest first; system messages are left out."""
    lines = [line for line in (_line(m, max_result_chars) for m in messages) if line]
    return "\n".join(lines)


def _line(message: Message, max_result_chars: int) -> str:
    images = f" [{len(message.images)} image(s)]" if message.images else ""
    if message.role == "user":
        return f"USER: {message.text}{images}"
    if message.role == "assistant":
        said = [f"YOU: {message.text}"] if message.text else []
        for call in message.tool_calls:
            arguments = call.raw_arguments if call.parse_error else json.dumps(dict(call.arguments), ensure_ascii=False)
            said.append(f"YOU called {call.name} {arguments}")
        return "\n".join(said)
    if message.role == "tool":
        status = " (error)" if message.is_error else ""
        return f"RESULT of {message.tool_name or 'a tool'}{status}: {clip(message.text, max_result_chars)}"
    return ""


def render_story(narrative: Narrative | None) -> str:
    """The story so far, or a line saying there is none yet."""
    return narrative.render() if narrative is not None and not narrative.empty else NO_STORY


def story_block(narrative: Narrative | None, entry_id: int | None) -> str:
    """The context engine's section of the system prompt: the story, tagged so the toolcall roles can find it."""
    tag = f'<narrative entry="{entry_id}">' if entry_id is not None else "<narrative>"
    return f"{tag}\n## The story so far\n{render_story(narrative)}\n</narrative>"


def strip_story_block(system: str) -> str:
    """The system prompt without the story block (the roles get the freshest story on its own)."""
    return _BLOCK.sub("\n\n", system).strip()
