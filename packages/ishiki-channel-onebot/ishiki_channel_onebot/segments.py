"""OneBot v11 message segments: reading a message (the array form, or the CQ-code string form) and building one.

A message is a list of segments ``{"type": ..., "data": {...}}``. Implementations send it as that array
(``message_format: array``, NapCat's and Lagrange's default) or as one string with CQ codes
(``[CQ:at,qq=123]``, with ``&amp;`` ``&#91;`` ``&#93;`` ``&#44;`` escapes); ``parse_message`` reads both into
``Segment``s. The builders (``text``, ``at``, ``reply``, ``image``, ``face``, ``record``) make the segments
the channel sends and the test kit delivers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ishiki_host.errors import EventInvalid

__all__ = [
    "Segment",
    "at",
    "cq_escape",
    "cq_unescape",
    "face",
    "image",
    "parse_cq",
    "parse_message",
    "record",
    "reply",
    "text",
    "to_json",
]

_CQ = re.compile(r"\[CQ:([A-Za-z0-9_.-]+)((?:,[^\]]*)?)\]")


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment: its ``type`` (``text``, ``at``, ``image``...) and its ``data`` (values as sent)."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        """``data[key]`` as text (numbers as their digits), or ``None`` when missing or not a scalar."""
        value = self.data.get(key)
        if isinstance(value, bool) or value is None or isinstance(value, dict | list):
            return None
        return str(value)


def to_json(segments: list[Segment]) -> list[dict[str, Any]]:
    """The array form of ``segments``, as an action's ``message`` takes it."""
    return [{"type": s.type, "data": dict(s.data)} for s in segments]


def text(value: str) -> Segment:
    """A text segment."""
    return Segment("text", {"text": value})


def at(qq: int | str) -> Segment:
    """A mention of ``qq`` (``all`` mentions everyone)."""
    return Segment("at", {"qq": str(qq)})


def reply(message_id: int | str) -> Segment:
    """A reply to ``message_id`` (it goes first in a message)."""
    return Segment("reply", {"id": str(message_id)})


def image(file: str, *, url: str | None = None) -> Segment:
    """An image: ``file`` is a file id, a URL, ``file://`` path or ``base64://`` data; ``url`` as received."""
    data: dict[str, Any] = {"file": file}
    if url is not None:
        data["url"] = url
    return Segment("image", data)


def face(face_id: int | str) -> Segment:
    """A QQ face (built-in emoticon) by its id."""
    return Segment("face", {"id": str(face_id)})


def record(file: str, *, url: str | None = None) -> Segment:
    """A voice record, as ``image`` names its file."""
    data: dict[str, Any] = {"file": file}
    if url is not None:
        data["url"] = url
    return Segment("record", data)


def cq_escape(value: str, *, in_code: bool = False) -> str:
    """Escape text for the CQ-code string form (``,`` too inside a code's parameters)."""
    value = value.replace("&", "&amp;").replace("[", "&#91;").replace("]", "&#93;")
    return value.replace(",", "&#44;") if in_code else value


def cq_unescape(value: str) -> str:
    """Undo ``cq_escape``."""
    return value.replace("&#44;", ",").replace("&#91;", "[").replace("&#93;", "]").replace("&amp;", "&")


def parse_cq(message: str) -> list[Segment]:
    """The segments of a CQ-code string: text between codes, each ``[CQ:type,k=v,...]`` a segment."""
    segments: list[Segment] = []
    position = 0
    for match in _CQ.finditer(message):
        if match.start() > position:
            segments.append(text(cq_unescape(message[position : match.start()])))
        data: dict[str, Any] = {}
        for pair in match.group(2).split(",")[1:]:
            key, _, value = pair.partition("=")
            data[key] = cq_unescape(value)
        segments.append(Segment(match.group(1), data))
        position = match.end()
    if position < len(message):
        segments.append(text(cq_unescape(message[position:])))
    return segments


def parse_message(value: object) -> list[Segment]:
    """The segments of an event's ``message`` (array or CQ string); ``EventInvalid`` for any other shape."""
    if isinstance(value, str):
        return parse_cq(value)
    if not isinstance(value, list):
        raise EventInvalid(f"message must be an array of segments or a CQ-code string, got {type(value).__name__}")
    segments: list[Segment] = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str) or not item["type"]:
            raise EventInvalid(f"a message segment must be an object with a type, got {item!r:.80}")
        data = item.get("data")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise EventInvalid(f"the data of a {item['type']} segment must be an object, got {data!r:.80}")
        segments.append(Segment(item["type"], data))
    return segments
