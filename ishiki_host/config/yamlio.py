"""Reading configuration YAML safely, keeping the line of every key.

A config file is untrusted input: it may be binary, huge, deeply nested or an alias bomb. ``load_yaml`` refuses
each with one clear ``ConfigError`` and never lets a parser error or a ``RecursionError`` escape. Values are
built straight from the parser's events (no recursion, libyaml when available), with

- the line of every key path (``YamlDocument.line``), for error messages;
- keys kept as written (``on:`` stays the string ``on``), duplicate keys reported;
- dates left as strings (no implicit timestamps), merge keys (``<<``) supported;
- limits on nesting depth, on values after alias expansion and on the length of an integer (``MAX_INT_DIGITS``:
  a 5,000-digit integer is past what Python turns into text, and a long sexagesimal one takes quadratic time);
- optional ``${VAR}`` expansion of string values (``ishiki_host.config.envvars``). A value expanded from a
  plain (unquoted) scalar is typed by YAML rules afterwards (``${PORT:-8}`` is the integer 8); quote it to keep
  a string. An expansion that comes out empty is the empty string.
"""

from __future__ import annotations

import copy
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml import events as ev

from ishiki_host.config.envvars import expand_vars
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_VALUES",
    "Key",
    "YamlDocument",
    "format_path",
    "line_of",
    "load_yaml",
    "parse_yaml",
    "read_text",
    "shorten",
]

MAX_FILE_BYTES = 1 << 20
"""Largest config file read (1 MiB)."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences, aliases included."""
MAX_VALUES = 100_000
"""Most values in one document after alias expansion (an alias bomb stops here)."""
MAX_INT_DIGITS = 100
"""Longest integer written in a config file, in characters (no setting needs more; 2**64 has 20 digits)."""

Key = str | int
_MERGE = "tag:yaml.org,2002:merge"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_INT = "tag:yaml.org,2002:int"


class _Resolver(yaml.resolver.Resolver):
    """YAML 1.1 implicit types without timestamps: a date stays the string it was written as."""


_Resolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}

if getattr(yaml, "__with_libyaml__", False):  # pragma: no branch - libyaml ships in PyYAML's wheels
    from yaml.cyaml import CParser  # type: ignore[attr-defined]

    class _Parser(CParser):
        """libyaml's event parser."""

else:  # pragma: no cover

    class _Parser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]
        """PyYAML's pure-Python event parser."""

        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


_RESOLVER = _Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def _resolve(value: str, implicit: Any) -> str:
    """The tag YAML gives a scalar written without one."""
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, value, implicit)  # type: ignore[no-untyped-call]
    return tag


def _line(event: ev.Event) -> int | None:
    mark: Any = event.start_mark
    return None if mark is None else int(mark.line) + 1


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters (with ``...``), to quote a value in an error message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_path(path: Sequence[Key]) -> str:
    """A key path as text: ``channels.console:local[0]``."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


@dataclass
class YamlDocument:
    """A parsed file: its data, the line of each key path, and the non-fatal problems found on the way.

    ``warnings`` are what works but should be written otherwise (a key in its old spelling:
    ``ishiki_host.config.keys``); the loaders add them, the parsers never do.
    """

    file: str
    data: Json
    lines: dict[tuple[Key, ...], int] = field(default_factory=dict)
    errors: list[ConfigError] = field(default_factory=list)
    warnings: list[ConfigError] = field(default_factory=list)

    def line(self, path: Sequence[Key]) -> int | None:
        """The line of ``path``, or of its longest prefix that has one (1-based)."""
        return line_of(self.lines, path)


def line_of(lines: Mapping[tuple[Key, ...], int], path: Sequence[Key]) -> int | None:
    """The line of ``path`` in ``lines``, or of its longest prefix that has one."""
    key = tuple(path)
    while key:
        if key in lines:
            return lines[key]
        key = key[:-1]
    return lines.get(())


def read_text(path: Path, display: str, error: type[ConfigError], limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes, or ``error`` saying why not."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise error("not a regular file", file=display)
        if info.st_size > limit:
            raise error(f"file too large ({info.st_size:,} bytes; the limit is {limit:,})", file=display)
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", file=display) from exc
    if len(raw) > limit:
        raise error(f"file too large (more than {limit:,} bytes)", file=display)
    if b"\0" in raw:
        raise error("binary file (contains NUL bytes), expected UTF-8 text", file=display)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})", file=display, line=line
        ) from exc


def load_yaml(path: Path, display: str, error: type[ConfigError], env: Mapping[str, str] | None = None) -> YamlDocument:
    """Read and parse one YAML file; ``env`` turns on ``${VAR}`` expansion. Raises ``error`` when unusable."""
    return parse_yaml(read_text(path, display, error), display, error, env)


def parse_yaml(text: str, display: str, error: type[ConfigError], env: Mapping[str, str] | None = None) -> YamlDocument:
    """Parse YAML text (one document) into a ``YamlDocument``. Raises ``error`` when it is not usable YAML."""
    builder = _Builder(display, error, env)
    parser = _Parser(text)
    try:
        while not builder.done:
            event = parser.get_event()
            if event is None:  # the stream ended without StreamEndEvent: nothing more to read
                break
            builder.feed(event)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        raise error(f"invalid YAML: {problem}", file=display, line=mark.line + 1 if mark else None) from exc
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {exc}", file=display) from exc
    finally:
        parser.dispose()
    return YamlDocument(display, builder.result, builder.lines, builder.errors)


@dataclass
class _Frame:
    """A mapping or sequence being built."""

    value: dict[str, Json] | list[Json]
    path: tuple[Key, ...]
    anchor: str | None
    start_values: int
    key: str | None = None
    child_height: int = 0
    merge_next: bool = False
    merges: list[Json] = field(default_factory=list)


class _Builder:
    """Builds Python values from parser events with an explicit stack (no recursion)."""

    def __init__(self, file: str, error: type[ConfigError], env: Mapping[str, str] | None) -> None:
        self.file, self.error, self.env = file, error, env
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int, int] | None] = {}  # value, values, height; None while open
        self.lines: dict[tuple[Key, ...], int] = {}
        self.errors: list[ConfigError] = []
        self.result: Any = None
        self.values = 0
        self.documents = 0
        self.done = False

    def fail(self, message: str, event: ev.Event, path: tuple[Key, ...] = ()) -> ConfigError:
        return self.error(message, file=self.file, line=_line(event), path=format_path(path))

    def feed(self, event: ev.Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def end(self, event: ev.Event) -> None:
        self.done = True

    def document(self, event: ev.Event) -> None:
        self.documents += 1
        if self.documents > 1:
            raise self.fail("several YAML documents in one file; expected one", event)

    def count(self, n: int, height: int, event: ev.Event) -> None:
        self.values += n
        if self.values > MAX_VALUES:
            raise self.fail(f"more than {MAX_VALUES:,} values after alias expansion (an alias bomb?)", event)
        if len(self.stack) + height > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels", event)

    def open(self, event: ev.MappingStartEvent | ev.SequenceStartEvent) -> None:
        if self.stack and self.at_key():
            raise self.fail("a key must be plain text, not a mapping or a list", event)
        path = self.child_path(event)
        self.count(1, 1, event)
        value: dict[str, Json] | list[Json] = {} if isinstance(event, ev.MappingStartEvent) else []
        if event.anchor:
            self.anchors[event.anchor] = None
        self.stack.append(_Frame(value, path, event.anchor, self.values))

    def close(self, event: ev.Event) -> None:
        frame = self.stack.pop()
        if isinstance(frame.value, dict):
            for merged in frame.merges:
                for key, item in merged.items():
                    frame.value.setdefault(key, item)
        height = frame.child_height + 1
        if frame.anchor:
            self.anchors[frame.anchor] = (frame.value, self.values - frame.start_values + 1, height)
        self.attach(frame.value, event, height)

    def scalar(self, event: ev.ScalarEvent) -> None:
        if self.stack and self.at_key():
            self.set_key(event)
            return
        path = self.child_path(event)
        self.count(1, 0, event)
        value = self.construct(event, path)
        if event.anchor:
            self.anchors[event.anchor] = (value, 1, 0)
        self.attach(value, event, 0)

    def alias(self, event: ev.AliasEvent) -> None:
        if self.stack and self.at_key():
            raise self.fail("an alias cannot be used as a key", event)
        if event.anchor not in self.anchors:
            raise self.fail(f"unknown alias '*{event.anchor}'", event)
        target = self.anchors[event.anchor]
        if target is None:
            raise self.fail(f"alias '*{event.anchor}' refers to itself (a recursive structure)", event)
        value, values, height = target
        self.child_path(event)
        self.count(values, height, event)
        self.attach(copy.deepcopy(value), event, height)

    def at_key(self) -> bool:
        top = self.stack[-1]
        return isinstance(top.value, dict) and top.key is None and not top.merge_next

    def set_key(self, event: ev.ScalarEvent) -> None:
        top = self.stack[-1]
        tag = event.tag if event.tag not in (None, "!") else _resolve(event.value, event.implicit)
        if tag == _MERGE:
            top.merge_next = True
            return
        assert isinstance(top.value, dict)
        path = (*top.path, event.value)
        if event.value in top.value and path in self.lines:
            self.errors.append(
                self.fail(f"duplicate key '{event.value}' (first at line {self.lines[path]})", event, path)
            )
        top.key = event.value
        self.lines[path] = _line(event) or 0

    def child_path(self, event: ev.Event) -> tuple[Key, ...]:
        if not self.stack:
            self.lines[()] = _line(event) or 0
            return ()
        top = self.stack[-1]
        if isinstance(top.value, list):
            path = (*top.path, len(top.value))
            self.lines[path] = _line(event) or 0
            return path
        return (*top.path, top.key) if top.key is not None else top.path

    def attach(self, value: Any, event: ev.Event, height: int) -> None:
        if not self.stack:
            self.result = value
            return
        top = self.stack[-1]
        top.child_height = max(top.child_height, height)
        if isinstance(top.value, list):
            top.value.append(value)
        elif top.merge_next:
            top.merge_next = False
            self.merge(top, value, event)
        else:
            assert top.key is not None
            top.value[top.key] = value
            top.key = None

    def merge(self, frame: _Frame, value: Any, event: ev.Event) -> None:
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(s, dict) for s in sources):
            raise self.fail("a merge key '<<' takes a mapping or a list of mappings", event)
        frame.merges.extend(sources)

    def construct(self, event: ev.ScalarEvent, path: tuple[Key, ...]) -> Any:
        value = event.value
        if self.env is not None and "$" in value and event.tag in (None, "!"):
            value, problems = expand_vars(value, self.env)
            self.errors.extend(self.fail(problem, event, path) for problem in problems)
            if not value:
                return ""  # an empty expansion is an empty string, not YAML's null
        tag = event.tag if event.tag not in (None, "!") else _resolve(value, event.implicit)
        constructor = _CONSTRUCTOR.yaml_constructors.get(tag)
        if constructor is None or tag in (_MERGE, "tag:yaml.org,2002:binary"):
            raise self.fail(f"unsupported YAML tag {tag!r}", event)
        if tag == _INT and len(value) > MAX_INT_DIGITS:
            raise self.fail(f"an integer of {len(value):,} characters; the limit is {MAX_INT_DIGITS}", event, path)
        node = yaml.ScalarNode(tag, value, None, None, event.style)
        try:
            return constructor(_CONSTRUCTOR, node)
        except (ValueError, yaml.YAMLError) as exc:
            raise self.fail(f"bad {tag.rsplit(':', 1)[-1]} value {shorten(value)!r}", event) from exc


_HANDLERS: dict[type, Any] = {
    ev.StreamEndEvent: _Builder.end,
    ev.DocumentStartEvent: _Builder.document,
    ev.MappingStartEvent: _Builder.open,
    ev.SequenceStartEvent: _Builder.open,
    ev.MappingEndEvent: _Builder.close,
    ev.SequenceEndEvent: _Builder.close,
    ev.ScalarEvent: _Builder.scalar,
    ev.AliasEvent: _Builder.alias,
}
