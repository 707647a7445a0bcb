"""The fact-log records of the narrative engines, so a turn can be inspected afterwards.

Every role call appends one ``custom`` entry of kind ``narrative.role`` inside the turn it served (before the
step's assistant message): the role, the step, the model, what it answered (text and tool calls), what was
read from it (``parsed``), its ``usage``, and on failure the ``error`` and the ``fallback`` taken. A narrative
update that failed appends a ``custom`` entry of kind ``narrative.update`` (a successful one is the
``narrative`` entry itself). See docs/factlog.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host import Usage

from ishiki_engine_narrative._text import clip

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ishiki_host import FactLogProtocol, ModelRequest, ModelResult

__all__ = ["ROLE_KIND", "UPDATE_KIND", "Recorder", "add_usage", "describe_error"]

ROLE_KIND = "narrative.role"
UPDATE_KIND = "narrative.update"
_TEXT_LIMIT = 4000


def describe_error(error: BaseException) -> str:
    """``ClassName: message``, clipped, for records and notes."""
    return clip(f"{type(error).__name__}: {error}", 1000)


def add_usage(usages: Iterable[Usage]) -> Usage:
    """The sum of ``usages`` (estimated when any part was)."""
    total = Usage()
    for usage in usages:
        total = Usage(
            total.input_tokens + usage.input_tokens,
            total.output_tokens + usage.output_tokens,
            total.estimated or usage.estimated,
        )
    return total


@dataclass(frozen=True)
class Recorder:
    """Appends role records for one step (``turn`` and ``step`` are ``None`` outside an agent's turn)."""

    log: FactLogProtocol
    turn: int | None
    step: int | None
    narrative: int | None
    record_prompts: bool = False

    async def role(
        self,
        role: str,
        model: str,
        request: ModelRequest,
        *,
        result: ModelResult | None = None,
        parsed: Any = None,
        error: BaseException | None = None,
        fallback: str | None = None,
    ) -> None:
        """Record one role call: what it answered, what was read from it, or why it failed."""
        data: dict[str, Any] = {"kind": ROLE_KIND, "role": role, "step": self.step, "model": model}
        data["ok"] = error is None
        data["narrative"] = self.narrative
        if result is not None:
            if result.text:
                data["text"] = clip(result.text, _TEXT_LIMIT)
            if result.tool_calls:
                data["tool_calls"] = [call.to_dict() for call in result.tool_calls]
            data["usage"] = result.usage.to_dict()
        if parsed is not None:
            data["parsed"] = parsed
        if error is not None:
            data["error"] = describe_error(error)
        if fallback is not None:
            data["fallback"] = fallback
        user = request.messages[-1].text if request.messages else ""
        data["prompt_chars"] = len(user)
        if self.record_prompts:
            data["system"] = request.messages[0].text if request.messages else ""
            data["prompt"] = user
        await self.log.append("custom", data, turn=self.turn)
