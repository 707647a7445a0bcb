"""Reading a role's answer: reasoning blocks left out, one JSON object read strictly, text clipped for records."""

from __future__ import annotations

import re
from typing import Any

from ishiki_host import loads_strict

from ishiki_engine_narrative.errors import RoleOutputInvalid

__all__ = ["clip", "one_line", "read_json_object", "strip_reasoning"]

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_FENCED = re.compile(r"\A```(?:json)?[ \t]*\n(.*)\n```\Z", re.S | re.I)


def strip_reasoning(text: str) -> str:
    """``text`` without ``<think>...</think>`` blocks (reasoning models write them before the answer)."""
    return _THINK.sub("", text).strip()


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def one_line(text: str) -> str:
    """``text`` with every run of whitespace, newlines included, made one space."""
    return " ".join(text.split())


def read_json_object(text: str, *, who: str) -> dict[str, Any]:
    """The one JSON object ``text`` is, read strictly.

    Reasoning blocks and surrounding whitespace are left out, and the whole answer may be one ```json fence
    (models add it unasked); nothing else is forgiven: prose around the object, two objects, duplicate keys,
    ``NaN``. Raises ``RoleOutputInvalid`` naming ``who`` and showing the start of the answer.
    """
    body = strip_reasoning(text)
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    shown = clip(text.strip(), 200)
    try:
        value = loads_strict(body)
    except ValueError as exc:
        raise RoleOutputInvalid(f"{who} did not answer with one JSON object ({exc}): {shown!r}") from None
    if not isinstance(value, dict):
        raise RoleOutputInvalid(f"{who} answered JSON that is not an object: {shown!r}")
    return value
