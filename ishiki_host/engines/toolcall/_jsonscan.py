"""Finding and repairing the JSON that language models write inside their answers.

``JsonScanner`` finds where a JSON value that starts with ``{`` or ``[`` ends, string-aware (a brace or a
closing tag inside a string value does not count) and incrementally (feed it a growing text). ``loads_lenient``
parses a span, repairing it first when it is not valid JSON.

Repairs are the ones that cannot change what the model meant:

- a trailing comma before ``}``/``]`` (or at the end) is dropped;
- brackets still open at the end are closed, and a closer that skips an open inner bracket closes it too;
- a raw newline, tab or other control character inside a string is escaped;
- an invalid escape inside a string (``\\d`` in a regex, ``\\'``) keeps its backslash as a literal one;
- a single-quoted string becomes a double-quoted one; ``True``/``False``/``None`` become JSON literals;
- ``//`` and ``/* */`` comments outside strings are dropped.

What is never repaired: a value cut off inside a string, after a key or a colon (the end of what the model
meant is unknown, and completing it would invent content). ``JsonRepairError`` says why.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["JsonRepairError", "JsonScanner", "loads_lenient", "repair_json"]

_OUTSIDE = re.compile(r"[{}\[\]\"'`/]")
_IN_STRING = {'"': re.compile(r'[\\"]'), "'": re.compile(r"[\\']")}
_CLOSER_OF = {"{": "}", "[": "]"}
_OPENER_OF = {"}": "{", "]": "["}


class JsonRepairError(ValueError):
    """A JSON span that is not valid and cannot be repaired safely; the message says why, for the model."""


def _is_fence(text: str, index: int) -> bool:
    """Whether a backtick at ``index`` opens a line of three or more (a Markdown code fence)."""
    if text[index : index + 3] != "```":
        return False
    line_start = text.rfind("\n", 0, index) + 1
    return not text[line_start:index].strip(" \t")


def _skip_comment(text: str, index: int) -> int | None:
    """Past a ``//`` or ``/* */`` comment starting at ``index`` (past the slash if it is none); ``None``: wait."""
    follower = text[index + 1 : index + 2]
    if follower not in ("/", "*"):
        return index + 1 if follower else None
    close = text.find("\n" if follower == "/" else "*/", index + 2)
    if close < 0:
        return None
    return close if follower == "/" else close + 2


class JsonScanner:
    """Finds the end of one JSON object or array, as text arrives.

    Call ``scan`` with a text whose character at ``start`` is the value's first (``{`` or ``[``), then again
    with the same text grown longer; it returns the index just past the value once its brackets balance,
    ``None`` while more text is needed. Strings in single or double quotes are skipped whole, escapes
    included, even when an escape is split between two calls; so are ``//`` and ``/* */`` comments. With
    ``stop_at_fence``, a Markdown fence line outside a string ends the scan early (``fenced`` is then true
    and the returned index is the fence's).
    """

    __slots__ = ("_escape", "_pos", "_quote", "fenced", "stack", "stop_at_fence")

    def __init__(self, start: int = 0, *, stop_at_fence: bool = False):
        self.stack: list[str] = []
        self.stop_at_fence = stop_at_fence
        self.fenced = False
        self._quote: str | None = None
        self._escape = False
        self._pos = start

    @property
    def in_string(self) -> bool:
        """Whether the text so far ends inside a string."""
        return self._quote is not None

    def scan(self, text: str) -> int | None:
        """Advance over ``text`` from where the last call stopped; the end index once the value closes."""
        pos, end = self._pos, len(text)
        while pos < end:
            if self._escape:
                self._escape, pos = False, pos + 1
            elif self._quote is not None:
                pos = self._skip_string(text, pos)
            else:
                match = _OUTSIDE.search(text, pos)
                if match is None:
                    pos = end
                    break
                if match.group() == "/":
                    skipped = _skip_comment(text, match.start())
                    if skipped is None:
                        pos = match.start()
                        break
                    pos = skipped
                    continue
                done = self._structural(text, match.start())
                pos = match.start() + 1
                if done is not None:
                    self._pos = done
                    return done
        self._pos = pos
        return None

    def _skip_string(self, text: str, pos: int) -> int:
        assert self._quote is not None
        match = _IN_STRING[self._quote].search(text, pos)
        if match is None:
            return len(text)
        if match.group() == "\\":
            self._escape = True
        else:
            self._quote = None
        return match.end()

    def _structural(self, text: str, index: int) -> int | None:
        char = text[index]
        if char in "\"'":
            self._quote = char
        elif char in "{[":
            self.stack.append(char)
        elif char == "`":
            if self.stop_at_fence and _is_fence(text, index):
                self.fenced = True
                return index
        else:
            opener = _OPENER_OF[char]
            if opener in self.stack:
                while self.stack.pop() != opener:
                    pass
                if not self.stack:
                    return index + 1
        return None


def loads_lenient(raw: str) -> tuple[Any, list[str]]:
    """Parse ``raw`` as JSON, repairing it if needed; returns the value and the repairs made (empty if none)."""
    try:
        return json.loads(raw), []
    except ValueError:
        pass
    repaired, repairs = repair_json(raw)
    try:
        return json.loads(repaired), repairs
    except ValueError as exc:
        raise JsonRepairError(_describe_decode_error(repaired, exc)) from None


def _describe_decode_error(text: str, exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        excerpt = text[max(0, exc.pos - 30) : exc.pos + 10].replace("\n", " ")
        return f"invalid JSON ({exc.msg} at character {exc.pos}, near {excerpt!r})"
    return f"invalid JSON ({exc})"


def repair_json(raw: str) -> tuple[str, list[str]]:
    """Rewrite ``raw`` with the safe repairs applied; the rewritten text and the repairs made, in order.

    The result may still be invalid JSON (the caller parses it); ``JsonRepairError`` is raised when the text
    ends inside a string, which no safe repair can fix.
    """
    return _Repairer(raw).run()


_REPAIR_TOKENS = re.compile(r"[{}\[\]\"',]|\b(?:True|False|None)\b|//|/\*")
_STRING_SPECIAL = {'"': re.compile(r'[\\"\x00-\x1f]'), "'": re.compile(r"[\\'\"\x00-\x1f]")}
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_VALID_ESCAPES = frozenset('"\\/bfnrt')
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


class _Repairer:
    """One pass over a broken JSON text, writing the repaired text to ``out``."""

    def __init__(self, raw: str):
        self.raw = raw
        self.out: list[str] = []
        self.stack: list[str] = []
        self.repairs: list[str] = []

    def note(self, repair: str) -> None:
        if repair not in self.repairs:
            self.repairs.append(repair)

    def run(self) -> tuple[str, list[str]]:
        raw, pos = self.raw, 0
        while (match := _REPAIR_TOKENS.search(raw, pos)) is not None:
            self.out.append(raw[pos : match.start()])
            pos = self._token(match.group(), match.start(), match.end())
        self.out.append(raw[pos:])
        self._close_open_brackets()
        return "".join(self.out), self.repairs

    def _token(self, token: str, start: int, end: int) -> int:
        if token in "\"'":
            return self._string(start)
        if token in ("//", "/*"):
            return self._comment(token, end)
        if token in "{[":
            self.stack.append(token)
            self.out.append(token)
        elif token in "}]":
            self._closer(token)
        elif token == ",":
            self._comma(end)
        else:
            self.note("Python literal")
            self.out.append(_PY_LITERALS[token])
        return end

    def _comment(self, token: str, end: int) -> int:
        """Skip a ``//`` or ``/* */`` comment (never valid JSON, so dropping it cannot change a value)."""
        self.note("comment")
        close = self.raw.find("\n" if token == "//" else "*/", end)
        if close < 0:
            return len(self.raw)
        return close if token == "//" else close + 2

    def _closer(self, token: str) -> None:
        opener = _OPENER_OF[token]
        if opener not in self.stack:
            self.note("extra closing bracket")
            return
        while (top := self.stack.pop()) != opener:
            self.note("mismatched bracket")
            self.out.append(_CLOSER_OF[top])
        self.out.append(token)

    def _comma(self, end: int) -> None:
        rest = self.raw[end:].lstrip()
        if not rest or rest[0] in "}]":
            self.note("trailing comma")
        else:
            self.out.append(",")

    def _string(self, start: int) -> int:
        quote, raw = self.raw[start], self.raw
        if quote == "'":
            self.note("single-quoted string")
        special, pos = _STRING_SPECIAL[quote], start + 1
        self.out.append('"')
        while (match := special.search(raw, pos)) is not None:
            self.out.append(raw[pos : match.start()])
            char, pos = match.group(), match.end()
            if char == quote:
                self.out.append('"')
                return pos
            if char == "\\":
                pos = self._escape(pos)
            elif char == '"':
                self.out.append('\\"')
            else:
                self.note("raw control character in a string")
                self.out.append(_CONTROL_ESCAPES.get(char, f"\\u{ord(char):04x}"))
        raise JsonRepairError("the JSON was cut off inside a string value")

    def _escape(self, pos: int) -> int:
        """Handle the character after a backslash at ``pos - 1``; returns the position after it."""
        if pos >= len(self.raw):
            raise JsonRepairError("the JSON was cut off inside a string value")
        char = self.raw[pos]
        if char in _VALID_ESCAPES or (char == "u" and _HEX4.match(self.raw, pos + 1)):
            self.out.append("\\" + char)
        elif char == "'":
            self.out.append("'")
        else:
            self.note("invalid escape in a string")
            self.out.append("\\\\" + _CONTROL_ESCAPES.get(char, char if char >= " " else f"\\u{ord(char):04x}"))
        return pos + 1

    def _close_open_brackets(self) -> None:
        if not self.stack:
            return
        tail = "".join(self.out).rstrip()
        if tail.endswith(","):
            self.note("trailing comma")
            tail = tail[:-1].rstrip()
        self.note("unclosed bracket")
        self.out = [tail, *(_CLOSER_OF[b] for b in reversed(self.stack))]
        self.stack.clear()
