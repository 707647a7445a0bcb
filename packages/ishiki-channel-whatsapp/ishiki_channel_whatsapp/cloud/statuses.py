"""Statuses of the messages this number sent (``sent``, ``delivered``, ``read``, ``failed``...): counted, and a
failed one logged with its error code.

A notification may come again (Meta redelivers until it gets a 200), so each ``(message id, status)`` is counted
once among the recent ones. A failure is logged as an error naming the message, the recipient and Meta's code
and words; a 131047 says what the operator can do about it.
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from typing import Any

from ishiki_channel_whatsapp.cloud.graph import WINDOW_CLOSED

__all__ = ["StatusBook"]

_RECENT = 4096
WINDOW_HINT = (
    "more than 24 hours passed since they last wrote: WhatsApp delivers only templates until they write again "
    "(set template_on_window_closed to send one)"
)


class StatusBook:
    """The statuses of account ``label`` (see the module docstring)."""

    def __init__(self, label: str, logger: logging.Logger):
        self._label = label
        self._log = logger
        self.counts: Counter[str] = Counter()
        self._recent: OrderedDict[tuple[str, str], None] = OrderedDict()

    def take(self, status: Any) -> None:
        """Count one entry of a change's ``statuses`` (a malformed one is logged at debug level and skipped)."""
        if not isinstance(status, dict) or not isinstance(status.get("status"), str):
            self._log.debug("whatsapp account %s: skipped a malformed status %r", self._label, status)
            return
        key = (str(status.get("id")), status["status"])
        if key in self._recent:
            return
        self._recent[key] = None
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)
        self.counts[status["status"]] += 1
        if status["status"] == "failed":
            self._failed(status)

    def _failed(self, status: dict[str, Any]) -> None:
        errors = [e for e in status.get("errors") or [] if isinstance(e, dict)]
        described = "; ".join(_describe(e) for e in errors) or "no error given"
        codes = {e.get("code") for e in errors}
        self._log.error(
            "whatsapp account %s: message %s to %s failed: %s%s",
            self._label,
            status.get("id"),
            status.get("recipient_id"),
            described,
            f"; {WINDOW_HINT}" if WINDOW_CLOSED in codes else "",
        )


def _describe(error: dict[str, Any]) -> str:
    data = error.get("error_data")
    details = data.get("details") if isinstance(data, dict) else None
    words = " ".join(str(part) for part in (error.get("title"), details or error.get("message")) if part)
    return f"{error.get('code')} {words}".strip()
