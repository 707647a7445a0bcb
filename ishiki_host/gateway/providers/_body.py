"""Request bodies as JSON bytes, with each distinct set of tool definitions encoded once.

Every model call of a turn, and of every turn of a runtime, offers the same tools, and their definitions are
most of a request body (the kernel tools alone are about 7 KB of an 8 KB first call). ``ToolsJSON`` keeps the
JSON text of the tool lists it has encoded, keyed by each tool's name, description and parameters object (the
schemas are shared objects, kept alive by the entry so their identity stays valid); ``json_body`` splices
that text into the rest of the body, which is encoded as httpx would encode it (compact, UTF-8, no NaN).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ishiki_host.core.model import ToolSpec

__all__ = ["ToolsJSON", "json_body"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)

_Key = tuple[tuple[str, str, int], ...]


class ToolsJSON:
    """The JSON texts of tool lists encoded by ``encode_one``; the least recently used beyond ``size`` go."""

    def __init__(self, encode_one: Callable[[ToolSpec], Any], size: int = 256):
        self._encode_one = encode_one
        self._size = size
        self._texts: OrderedDict[_Key, tuple[tuple[Mapping[str, Any], ...], str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._texts)

    def text(self, tools: Sequence[ToolSpec]) -> str:
        """The JSON array of ``tools``, each as ``encode_one`` makes it."""
        key = tuple((tool.name, tool.description, id(tool.parameters)) for tool in tools)
        cached = self._texts.get(key)
        if cached is not None and all(a is b.parameters for a, b in zip(cached[0], tools, strict=True)):
            self._texts.move_to_end(key)
            return cached[1]
        text = _ENCODER.encode([self._encode_one(tool) for tool in tools])
        self._texts[key] = (tuple(tool.parameters for tool in tools), text)
        while len(self._texts) > self._size:
            self._texts.popitem(last=False)
        return text


def json_body(body: Mapping[str, Any], **encoded: str) -> bytes:
    """``body`` as compact UTF-8 JSON, with each of ``encoded`` (a JSON text) added under its name."""
    text = _ENCODER.encode(body)
    if encoded:
        extra = ",".join(f"{_ENCODER.encode(name)}:{value}" for name, value in encoded.items())
        text = f"{text[:-1]}{',' if len(text) > 2 else ''}{extra}}}"
    return text.encode("utf-8")
