"""Model-facing messages: what a context engine projects facts into and a model request carries.

A ``Message`` has a role (system, user, assistant, tool) and content parts (text and images). An assistant
message may carry ``tool_calls``; a tool message answers one call by ``tool_call_id``. Messages are frozen
values and round-trip through ``to_dict``/``from_dict`` (the fact log stores them that way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ishiki_host.jsontypes import Json

__all__ = ["ImagePart", "Message", "Part", "Role", "TextPart", "ToolCall"]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text."""

    text: str

    def to_dict(self) -> dict[str, Json]:
        """JSON form."""
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image by URL: ``data:`` URLs go to providers as is; ``asset://`` URLs are resolved by the runtime."""

    url: str
    media_type: str | None = None

    def to_dict(self) -> dict[str, Json]:
        """JSON form."""
        out: dict[str, Json] = {"type": "image", "url": self.url}
        if self.media_type:
            out["media_type"] = self.media_type
        return out


Part = TextPart | ImagePart


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call a model asked for.

    ``arguments`` is the parsed JSON object. When the model's arguments were not a JSON object,
    ``arguments`` is empty, ``raw_arguments`` keeps what was sent and ``parse_error`` says why: the agent then
    answers the call with an error result instead of running the tool.
    """

    id: str
    name: str
    arguments: Mapping[str, Json] = field(default_factory=dict)
    raw_arguments: str | None = None
    parse_error: str | None = None

    def to_dict(self) -> dict[str, Json]:
        """JSON form."""
        out: dict[str, Json] = {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}
        if self.parse_error is not None:
            out["raw_arguments"] = self.raw_arguments
            out["parse_error"] = self.parse_error
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Json]) -> ToolCall:
        """Inverse of ``to_dict``."""
        return cls(
            id=str(data["id"]),
            name=str(data["name"]),
            arguments=dict(data.get("arguments") or {}),
            raw_arguments=data.get("raw_arguments"),
            parse_error=data.get("parse_error"),
        )


def _part_from_dict(data: Mapping[str, Json]) -> Part:
    if data.get("type") == "image":
        return ImagePart(url=str(data["url"]), media_type=data.get("media_type"))
    return TextPart(text=str(data.get("text", "")))


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a model conversation."""

    role: Role
    parts: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False

    @property
    def text(self) -> str:
        """The text parts joined (images left out)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """The image parts."""
        return tuple(p for p in self.parts if isinstance(p, ImagePart))

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message."""
        return cls("system", (TextPart(text),))

    @classmethod
    def user(cls, text: str, images: Sequence[ImagePart] = ()) -> Message:
        """A user message, optionally with images."""
        return cls("user", (TextPart(text), *images))

    @classmethod
    def assistant(cls, text: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        """An assistant message; empty text is left out of the parts."""
        return cls("assistant", (TextPart(text),) if text else (), tuple(tool_calls))

    @classmethod
    def tool(cls, call: ToolCall, content: str, *, is_error: bool = False) -> Message:
        """The result of ``call``."""
        return cls("tool", (TextPart(content),), tool_call_id=call.id, tool_name=call.name, is_error=is_error)

    def to_dict(self) -> dict[str, Json]:
        """JSON form (the ``data`` of a fact-log message entry, without the entry's own fields)."""
        out: dict[str, Json] = {"role": self.role, "parts": [p.to_dict() for p in self.parts]}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.tool_name is not None:
            out["tool_name"] = self.tool_name
        if self.is_error:
            out["is_error"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Json]) -> Message:
        """Inverse of ``to_dict``; a plain ``content`` string is accepted for text."""
        parts: tuple[Part, ...]
        if "parts" in data:
            parts = tuple(_part_from_dict(p) for p in data["parts"])
        else:
            parts = (TextPart(str(data.get("content", ""))),)
        return cls(
            role=data["role"],
            parts=parts,
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            tool_name=data.get("tool_name"),
            is_error=bool(data.get("is_error", False)),
        )
