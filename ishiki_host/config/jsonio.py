"""Reading configuration JSON safely (``heartbeats.json``, ``mcp.json``), with the limits of the YAML loader.

``json.loads`` is no loader for a file someone may have mangled: it recurses, so a file nested 100,000 deep
raises ``RecursionError``; a 5,000-digit integer raises a ``ValueError`` of its own; it keeps the last of two
equal keys without a word and accepts ``NaN``. ``parse_json`` reads strict JSON (RFC 8259) with an explicit
stack instead, and refuses each hazard with one ``ConfigError`` naming the file and the line:

- nesting deeper than ``MAX_DEPTH``, more than ``MAX_VALUES`` values, an integer longer than
  ``MAX_INT_DIGITS``, a number too large for a float, ``NaN`` and ``Infinity``;
- a lone UTF-16 surrogate escape (``"\\ud800"``): no UTF-8 file can hold the text it stands for;
- a duplicate key is reported in ``YamlDocument.errors`` and the last value is kept, as ``parse_yaml`` does.

The result is a ``YamlDocument`` with the line of every key path, so JSON and YAML files report errors the
same way. Strings are decoded by the standard library (``JSONDecoder.raw_decode`` of one string token, which
does not recurse); only the structure is walked here. ``load_json`` reads the file through ``read_text``
first (size, encoding and NUL-byte limits).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ishiki_host.config.yamlio import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_INT_DIGITS,
    MAX_VALUES,
    Key,
    YamlDocument,
    format_path,
    read_text,
    shorten,
)
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError

__all__ = ["load_json", "parse_json"]

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LITERALS: dict[str, Json] = {"true": True, "false": False, "null": None}
_DECODER = json.JSONDecoder(strict=True)


def load_json(path: Path, display: str, error: type[ConfigError], limit: int = MAX_FILE_BYTES) -> YamlDocument:
    """Read and parse one JSON file (see the module docstring). Raises ``error`` when it is unusable."""
    return parse_json(read_text(path, display, error, limit), display, error)


def parse_json(text: str, display: str, error: type[ConfigError]) -> YamlDocument:
    """Parse JSON text into a ``YamlDocument``. Raises ``error`` (file and line) when it is not usable JSON."""
    parser = _Parser(text.removeprefix("\ufeff"), display, error)
    data = parser.parse()
    return YamlDocument(display, data, parser.lines, parser.errors)


@dataclass
class _Open:
    """An array or object being read."""

    value: dict[str, Json] | list[Json]
    path: tuple[Key, ...]
    line: int
    first: bool = True


class _Parser:
    """Reads one JSON text with an explicit stack (no recursion)."""

    def __init__(self, text: str, file: str, error: type[ConfigError]) -> None:
        self.text, self.file, self.error = text, file, error
        self.pos = 0
        self.stack: list[_Open] = []
        self.lines: dict[tuple[Key, ...], int] = {}
        self.errors: list[ConfigError] = []
        self.values = 0
        self._line, self._counted = 1, 0

    def parse(self) -> Json:
        self.skip()
        self.lines[()] = self.line()
        result = self.value(())
        while self.stack:
            self.step(self.stack[-1])
        self.skip()
        if self.pos < len(self.text):
            raise self.fail("unexpected text after the JSON value")
        return result

    def line(self) -> int:
        """The 1-based line of the current position (counted on from the last call: positions only grow)."""
        self._line += self.text.count("\n", self._counted, self.pos)
        self._counted = self.pos
        return self._line

    def fail(self, message: str, path: tuple[Key, ...] = ()) -> ConfigError:
        return self.error(message, file=self.file, line=self.line(), path=format_path(path))

    def skip(self) -> None:
        match = _WHITESPACE.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def peek(self) -> str:
        return self.text[self.pos : self.pos + 1]

    def step(self, top: _Open) -> None:
        """Read the next item of the innermost array or object, or its end."""
        self.skip()
        close = "]" if isinstance(top.value, list) else "}"
        if self.peek() == close:
            self.pos += 1
            self.stack.pop()
            return
        if not self.peek():
            kind = "an array" if close == "]" else "an object"
            raise self.fail(f"the file ends inside {kind} opened at line {top.line}", top.path)
        if not top.first:
            if self.peek() != ",":
                raise self.fail(f"expected ',' or '{close}', found {self.peek()!r}", top.path)
            self.pos += 1
            self.skip()
        top.first = False
        if isinstance(top.value, list):
            path = (*top.path, len(top.value))
            self.lines[path] = self.line()
            top.value.append(self.value(path))
        else:
            self.member(top.value, top.path)

    def member(self, target: dict[str, Json], parent: tuple[Key, ...]) -> None:
        if self.peek() != '"':
            raise self.fail(f"expected a key in double quotes, found {self.peek()!r}", parent)
        line = self.line()
        key = self.string()
        path = (*parent, key)
        if key in target:
            first = self.lines.get(path)
            self.errors.append(self.fail(f"duplicate key '{shorten(key)}' (first at line {first})", path))
        self.lines[path] = line
        self.skip()
        if self.peek() != ":":
            raise self.fail(f"expected ':' after the key '{shorten(key)}'", path)
        self.pos += 1
        target[key] = self.value(path)

    def value(self, path: tuple[Key, ...]) -> Json:
        """The value at the position: a scalar, or an empty container pushed on the stack to be filled."""
        self.skip()
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.fail(f"more than {MAX_VALUES:,} values", path)
        char = self.peek()
        if char in ("[", "{"):
            if len(self.stack) >= MAX_DEPTH:
                raise self.fail(f"nested deeper than {MAX_DEPTH} levels")  # no path: it would be as deep
            container: dict[str, Json] | list[Json] = [] if char == "[" else {}
            self.stack.append(_Open(container, path, self.line()))
            self.pos += 1
            return container
        if char == '"':
            return self.string()
        number = _NUMBER.match(self.text, self.pos)
        if number is not None:
            return self.number(number, path)
        for word, constant in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return constant
        raise self.fail(self.not_a_value(char), path)

    def not_a_value(self, char: str) -> str:
        if not char:
            return "the file ends where a value is expected"
        word = re.match(r"-?[A-Za-z]+", self.text[self.pos : self.pos + 20])
        if word is not None and word.group().lstrip("-") in ("NaN", "Infinity"):
            return f"{word.group()} is not a JSON number"
        hint = " (JSON strings take double quotes)" if char == "'" else ""
        return f"expected a value (string, number, object, array, true, false or null), found {char!r}{hint}"

    def string(self) -> str:
        try:
            value, end = _DECODER.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            self.pos = max(self.pos, exc.pos)
            reason = exc.msg.removesuffix(" at").removesuffix(" starting")
            raise self.fail(f"bad string: {reason} (column {exc.colno})") from None
        assert isinstance(value, str)  # raw_decode at a '"' reads exactly one string
        if _SURROGATE.search(value):
            raise self.fail("a lone UTF-16 surrogate (\\ud800-\\udfff) is not text; write the character itself")
        self.pos = end
        return value

    def number(self, match: re.Match[str], path: tuple[Key, ...]) -> int | float:
        text = match.group()
        if match.group(1) is None and match.group(2) is None:
            digits = len(text.lstrip("-"))
            if digits > MAX_INT_DIGITS:
                raise self.fail(f"an integer of {digits:,} digits; the limit is {MAX_INT_DIGITS}", path)
            self.pos = match.end()
            return int(text)
        value = float(text)
        if not math.isfinite(value):
            raise self.fail(f"the number {shorten(text)} is too large", path)
        self.pos = match.end()
        return value
