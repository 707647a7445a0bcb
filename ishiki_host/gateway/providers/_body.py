"""Request bodies as JSON bytes, with each distinct set of tool definitions and each message encoded once.

Every model call of a turn, and of every turn of a runtime, offers the same tools, and their definitions are
most of a request body (the kernel tools alone are about 7 KB of an 8 KB first call). ``ToolsJSON`` keeps the
JSON text of the tool lists it has encoded, keyed by each tool's name, description and parameters object (the
schemas are shared objects, kept alive by the entry so their identity stays valid); ``json_body`` splices
that text into the rest of the body, which is encoded as httpx would encode it (compact, UTF-8, no NaN).

The messages of a long conversation are the rest of it, and from one call to the next they are the same
``Message`` objects (a context engine's projection keeps them; see ``ishiki_host.core.window.Projection``) with
a few new ones at the end. ``MessagesJSON`` keeps the JSON text of each message it encoded, by identity (the
entry holds the message, so its id stays valid), and the joined text of the conversation after the first
message (the system prompt, made anew each turn) by the identity of its first message: a call whose messages
extend a conversation it encoded before encodes the new ones and the first, and reuses the joined text of the
rest. Both are cleared whole when they grow past their bounds (``size`` messages, ``text_bytes`` characters).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ishiki_host.core.messages import Message
from ishiki_host.core.model import ToolSpec
from ishiki_host.core.window import extends

__all__ = ["MessagesJSON", "ToolsJSON", "json_body"]

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


class MessagesJSON:
    """The JSON texts of messages encoded by ``encode_one`` (see the module docstring)."""

    def __init__(self, encode_one: Callable[[Message], Any], size: int = 65_536, text_bytes: int = 64 << 20):
        self._encode_one = encode_one
        self._size = size
        self._text_bytes = text_bytes
        self._texts: dict[int, tuple[Message, str]] = {}
        self._runs: dict[int, tuple[tuple[Message, ...], str]] = {}
        self._run_chars = 0

    def __len__(self) -> int:
        return len(self._texts)

    def text(self, messages: Sequence[Message]) -> str:
        """The JSON array of ``messages``, each as ``encode_one`` makes it."""
        if len(messages) < 2:
            return f"[{','.join(self.pieces(messages))}]"
        rest = tuple(messages[1:])
        run = self._runs.get(id(rest[0]))
        known = len(run[0]) if run is not None else 0
        if run is not None and run[0][0] is rest[0] and extends(rest, run[0]):
            joined = run[1] if len(rest) == known else f"{run[1]},{','.join(self.pieces(rest[known:]))}"
            self._run_chars -= len(run[1])
        else:
            joined = ",".join(self.pieces(rest))
        self._remember(rest, joined)
        return f"[{self.pieces(messages[:1])[0]},{joined}]"

    def _remember(self, rest: tuple[Message, ...], joined: str) -> None:
        if self._run_chars + len(joined) > self._text_bytes:
            self._runs.clear()
            self._run_chars = 0
        self._runs[id(rest[0])] = (rest, joined)
        self._run_chars += len(joined)

    def pieces(self, messages: Sequence[Message]) -> list[str]:
        """The JSON text of each message, encoded once."""
        texts = self._texts
        if len(texts) + len(messages) > self._size:
            texts.clear()
        pieces = []
        for message in messages:
            known = texts.get(id(message))
            if known is None or known[0] is not message:
                known = texts[id(message)] = (message, _ENCODER.encode(self._encode_one(message)))
            pieces.append(known[1])
        return pieces


def json_body(body: Mapping[str, Any], **encoded: str) -> bytes:
    """``body`` as compact UTF-8 JSON, with each of ``encoded`` (a JSON text) added under its name."""
    text = _ENCODER.encode(body)
    if encoded:
        extra = ",".join(f"{_ENCODER.encode(name)}:{value}" for name, value in encoded.items())
        text = f"{text[:-1]}{',' if len(text) > 2 else ''}{extra}}}"
    return text.encode("utf-8")
