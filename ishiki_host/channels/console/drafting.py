"""``DraftingConsole``: the interactive console, which also shows replies as they are written.

The host streams a reply through the ``DraftingConnection`` methods (``ishiki_host.channels.base``). Each
``show_draft`` prints only what is new since the last one: finished lines go above the prompt (in the
reply's colour), the line still being written is shown just above the prompt, where it grows. ``finish_draft``
prints what of the final text was not printed yet (all of it again when it no longer starts with what was
shown) and returns the ids as ``send`` would. ``drop_draft`` ends the partial text: quietly when the text was
the model's words before a tool call (``tools``), with a dim ``(cut off)`` when the turn failed or was
aborted. Without a prompt on the screen (interactive streams that are no terminal), the new text is written
straight out.

Only the interactive console is a ``DraftingConnection``: on piped output the host sends the final message
alone, so stdout stays exactly the chat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host.channels.base import SendResult, TurnActivity
from ishiki_host.channels.console.connection import ConsoleConnection
from ishiki_host.channels.split import split_message

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ishiki_host.channels.base import Draft, DraftEnd

__all__ = ["DraftingConsole"]

_COLOR, _DIM, _RESET = "\x1b[36m", "\x1b[2m", "\x1b[0m"
_PART_LIMIT = 16_000


@dataclass(slots=True)
class _Shown:
    """What one draft printed: ``text`` as far as it went out, ``above`` how much of it is above the prompt
    (finished lines; the rest is the partial line)."""

    text: str = ""
    above: int = 0


class DraftingConsole(ConsoleConnection):
    """The interactive console with streamed replies (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._drafts: dict[str, _Shown] = {}
        self._partial = ""  # the line of a draft still being written, shown above the prompt

    def _shown(self, draft: Draft) -> _Shown:
        return self._drafts.setdefault(draft.id, _Shown())

    async def show_draft(self, channel_id: str, draft: Draft) -> None:
        """Print what ``draft.text`` adds to what this draft showed (see the module docstring)."""
        shown = self._shown(draft)
        self._writing()
        if not draft.text.startswith(shown.text):  # the newest text no longer extends the old: show it anew
            self._end_line(shown, "")
            self._drafts[draft.id] = shown = _Shown()
        self._extend(shown, draft.text)

    async def finish_draft(self, channel_id: str, draft: Draft, text: str) -> SendResult:
        """Print the rest of ``text`` and end the reply's line; the ids of its parts, as ``send`` gives."""
        shown = self._drafts.pop(draft.id, None)
        if shown is None or not text.startswith(shown.text):
            if shown is not None:
                self._end_line(shown, "")
            shown = _Shown()
        self._extend(shown, text)
        self._end_line(shown, "")
        return SendResult(tuple(self._out_id() for _ in split_message(text, _PART_LIMIT)))

    async def drop_draft(self, channel_id: str, draft: Draft, why: DraftEnd) -> None:
        """End the draft's partial text: quietly before a tool call, with a dim ``(cut off)`` otherwise."""
        shown = self._drafts.pop(draft.id, None)
        if shown is not None:
            self._end_line(shown, "" if why == "tools" else f" {_DIM}(cut off){_RESET}")

    # -- parts ------------------------------------------------------------------------------------------

    def _writing(self) -> None:
        activity = self._activity
        if activity is not None and activity.state != "writing":
            self.show_activity("", TurnActivity("writing", activity.started_at, activity.model, step=activity.step))

    def _extend(self, shown: _Shown, text: str) -> None:
        """Print ``text`` beyond ``shown.text``: finished lines above the prompt, the partial one in its notes."""
        new = text[len(shown.text) :]
        shown.text = text
        if self._attached is None:  # no prompt: the text is written as it comes
            if new:
                self._write(f"{_COLOR}{new}{_RESET}")
            shown.above = len(text)
            return
        cut = text.rfind("\n") + 1
        if cut > shown.above:
            self._attached.print(f"{_COLOR}{text[shown.above : cut]}{_RESET}")
            shown.above = cut
        self._partial = text[shown.above :]
        self._attached.refresh()

    def _end_line(self, shown: _Shown, tail: str) -> None:
        """Print the partial line (and ``tail``) with its newline; nothing more is shown for this draft."""
        rest = shown.text[shown.above :]
        self._partial = ""
        if rest or tail or (shown.text and not shown.text.endswith("\n")):
            self._show(f"{_COLOR}{rest}{_RESET}{tail}\n" if rest else f"{tail}\n")
        shown.above = len(shown.text)

    def _notes(self) -> Sequence[str]:
        notes = [f"{_COLOR}{self._partial}{_RESET}"] if self._partial else []
        return [*notes, *super()._notes()]
