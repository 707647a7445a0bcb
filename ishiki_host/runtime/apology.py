"""What a sender is told when a turn they started fails: one short apology per failure streak, never the error.

A turn *they started* is one with inbound messages from people (``TurnReport.inbound``, joined messages
included). A beat, a wake or a wait that fails with no new message says nothing in the chat: the log has it.

The apology is the profile's ``failure_reply`` (``None``: nothing is said), sent as a host notice
(``runtime.notices``): not the persona speaking, not recorded. It goes to each channel the turn's messages came
from (in cross mode one turn may answer several, and each was waiting), replying to that channel's newest
message of the turn in group chats. A streak is the run of failed turns between two that end ``done``: each
channel is told once per streak, and a turn that ends ``done`` (any turn, a beat's too: the model answers
again) ends it. One attempt per channel and streak: a notice that cannot be sent is logged by ``Notices`` and
not retried, and nothing here starts a turn, so a failing channel cannot loop.

The reason (the error's class and message, on one line) never goes into the chat. It is in the log, and for
every failed turn a person started ``Notices.show_failure`` hands it to connections that show such things to
their operator (the console's dim line), after the apology.

Left alone, neither apologized for nor ending a streak: a ``context_length`` failure belongs to the session
(the memory extension compacts, retries and says so in the chat), and a ``FactLogError`` to the runtime (it
stops and recovers from its log, deciding again on what is unanswered: the turn may have answered already).
An aborted turn (a stop or a reload) is neither a failure nor a success.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from ishiki_host.channels.inbound import source_target
from ishiki_host.errors import FactLogError

if TYPE_CHECKING:
    import logging

    from ishiki_host.addresses.ids import Target
    from ishiki_host.core.entries import Entry
    from ishiki_host.plugins.runtime_api import TurnReport

__all__ = ["REASON_LIMIT", "FailureReplies", "failure_reason"]

REASON_LIMIT = 300
"""Most characters of the reason shown to the operator (the log has all of it)."""

Notify = Callable[..., Awaitable[bool]]
"""``Notices.notice(text, target, reply_to=...)``: whether the notice went out."""
ShowFailure = Callable[["Target", str], None]
"""``Notices.show_failure(target, reason)``."""


def failure_reason(report: TurnReport) -> str:
    """The reason of a failed turn on one line: the error's class and message, cut at ``REASON_LIMIT``."""
    error = report.error
    text = f"{report.reason}: {error}" if error is not None and str(error) else report.reason
    text = " ".join(text.split())
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 3] + "..."


class FailureReplies:
    """The apologies of one runtime (see the module docstring); ``turn_ended`` is the tracker's ``closing``."""

    def __init__(self, text: str | None, notify: Notify, show: ShowFailure, logger: logging.Logger):
        self._text = text if text and text.strip() else None
        self._notify = notify
        self._show = show
        self._logger = logger
        self._told: set[Target] = set()

    def turn_ended(self, report: TurnReport) -> Awaitable[None] | None:
        """Handle a turn's end: a ``done`` ends the streak; a failure a person started is answered."""
        if report.status == "done":
            self._told.clear()
            return None
        if report.status != "failed" or report.outcome.kind == "context_length":
            return None
        if isinstance(report.error, FactLogError):
            return None
        chats = _newest_by_chat(report.inbound)
        if not chats:
            return None  # a beat, a wake or a wait with no new message: the runner has logged it
        return self._answer(chats, failure_reason(report), report.turn)

    async def _answer(self, chats: Mapping[Target, Entry], reason: str, turn: int) -> None:
        for target, newest in chats.items():
            if self._text is not None and target not in self._told:
                self._told.add(target)
                if not await self._notify(self._text, target, reply_to=_reply_to(newest)):
                    self._logger.warning("turn %s failed; the apology to %s was not sent", turn, target)
            self._show(target, reason)


def _newest_by_chat(inbound: tuple[Entry, ...]) -> dict[Target, Entry]:
    """Each channel the entries came from, with its newest entry, in the order the channels last spoke."""
    chats: dict[Target, Entry] = {}
    for entry in inbound:
        target = source_target(entry)
        if target is not None:
            chats.pop(target, None)
            chats[target] = entry
    return chats


def _reply_to(entry: Entry) -> str | None:
    """The message to reply to in a group chat (``None`` in a private one, as ``Notices.reply`` does)."""
    source = entry.data.get("source")
    if not isinstance(source, Mapping) or source.get("isDirect", True):
        return None
    message_id = source.get("messageId")
    return message_id if isinstance(message_id, str) else None
