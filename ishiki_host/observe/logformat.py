"""``log_format: json``: one JSON object per log line, for log shippers (Loki, Vector, journald's JSON).

Each line holds ``time`` (ISO 8601 with the UTC offset, to the millisecond), ``level``, ``logger`` and
``message`` (the formatted text), then every structured field the call gave in ``extra`` (the answered-message
line's ``profile``, ``latency_seconds``, ``tools``...), and ``exception`` with the traceback when there is one.
A field that JSON cannot hold is written as its ``str()``; a field named like one of the four is left out
rather than overwrite it.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonFormatter", "TextFormatter"]

# The attributes every LogRecord has: whatever else is on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
_OWN = ("time", "level", "logger", "message")


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON object on one line."""
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).astimezone().isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name not in _STANDARD and name not in _OWN and not name.startswith("_"):
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``log_format: text``, the default: ``12:00:01 INFO    ishiki_host.host: profile ana is ready``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
