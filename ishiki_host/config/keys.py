"""The old camelCase spelling of config keys, still read: ``baseUrl`` is ``base_url``.

Every key Ishiki defines is snake_case. Files written before the change keep working: ``normalize_keys``
renames each key written in the old spelling of a property the JSON Schema knows at that place (following
``properties``, ``items``/``prefixItems``, ``additionalProperties``, ``patternProperties``, local ``$ref``
and ``allOf``/``anyOf``/``oneOf``), and returns what it renamed so ``ishiki check`` can suggest the new
spelling. Nothing else changes:

- a key the schema does not know in either spelling is left as written (validation says "unknown key"); so
  is another tool's spelling that is not exactly Ishiki's old one (``timeoutMS`` is not ``timeoutMs``);
- a key under a map of names (provider ids, extension names) is never renamed: only known properties are;
- a key written in both spellings is a clash: the snake_case value is kept and the clash is an error.

``normalize_document`` does this for a parsed file and also records the line of every renamed path, so errors
found later under a renamed key still name its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ishiki_host.config.yamlio import Key, YamlDocument, format_path
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError

__all__ = ["KeyRename", "Normalized", "normalize_document", "normalize_keys", "snake_case"]

_CAMEL = re.compile(r"^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$")
_WORD_END = re.compile(r"([a-z0-9])([A-Z])")
_ACRONYM_END = re.compile(r"([A-Z]+)([A-Z][a-z])")
_BRANCHES = ("allOf", "anyOf", "oneOf")


def snake_case(key: str) -> str:
    """``key`` in snake_case when it is written in camelCase (``timeoutMS`` -> ``timeout_ms``), else ``key``."""
    if not _CAMEL.match(key):
        return key
    return _WORD_END.sub(r"\1_\2", _ACRONYM_END.sub(r"\1_\2", key)).lower()


def _camel(key: str) -> str:
    """The old spelling of a snake_case key: ``max_tokens`` -> ``maxTokens``."""
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclass(frozen=True, slots=True)
class KeyRename:
    """One key read in its old spelling: ``old`` at ``path`` (the key's own path, as written) is ``new``.

    ``clash``: the file has both spellings at that place (the ``new`` one's value is kept).
    """

    path: tuple[Key, ...]
    old: str
    new: str
    line: int | None = None
    clash: bool = False

    @property
    def message(self) -> str:
        """What ``ishiki check`` says about it."""
        if self.clash:
            old, new = self.old, self.new
            return f"`{old}` and `{new}` are one key written twice (`{old}` is the old spelling); keep `{new}`"
        return f"`{self.old}` is the old spelling; write `{self.new}`"


@dataclass(frozen=True, slots=True)
class Normalized:
    """A document with its old spellings renamed, and every rename and clash found (in document order)."""

    data: Json
    renames: tuple[KeyRename, ...] = ()

    @property
    def clashes(self) -> tuple[KeyRename, ...]:
        """The keys written in both spellings: errors."""
        return tuple(r for r in self.renames if r.clash)

    @property
    def warnings(self) -> tuple[KeyRename, ...]:
        """The keys written in the old spelling only: they work, with a suggestion."""
        return tuple(r for r in self.renames if not r.clash)


def normalize_keys(
    schema: Mapping[str, Json],
    data: Json,
    lines: Mapping[tuple[Key, ...], int] | None = None,
    prefix: Sequence[Key] = (),
) -> Normalized:
    """``data`` (a value at ``prefix`` of a document whose key lines are ``lines``) with every old-spelled key
    that ``schema`` knows renamed; ``data`` itself is not changed. A document already in snake_case comes back
    equal, and normalizing twice changes nothing more."""
    return _normalized(schema, data, lines or {}, tuple(prefix))[0]


def _normalized(
    schema: Mapping[str, Json], data: Json, lines: Mapping[tuple[Key, ...], int], prefix: tuple[Key, ...]
) -> tuple[Normalized, list[tuple[tuple[Key, ...], tuple[Key, ...]]]]:
    if not _has_camel_key(data):
        return Normalized(data), []  # the common case, and a quick one: nothing to rename
    walk = _Walk(schema, lines)
    result = walk.value([schema], data, prefix, prefix)
    return Normalized(result, tuple(walk.renames)), walk.moves


def normalize_document(
    doc: YamlDocument,
    schema: Mapping[str, Json],
    error: type[ConfigError],
    data: Json,
    prefix: Sequence[Key] = (),
) -> tuple[Json, list[ConfigError]]:
    """Normalize ``data`` (the value at ``prefix`` of ``doc``: ``doc.data`` itself by default) against ``schema``.

    Returns the renamed data and the errors (keys written in both spellings). Each old spelling becomes a
    warning in ``doc.warnings``; both name the file, line and key path. ``doc.lines`` gains the line of every
    renamed path, so errors found later under a renamed key keep their line.
    """
    found, moves = _normalized(schema, data, doc.lines, tuple(prefix))
    _alias_lines(doc, moves)
    doc.warnings.extend(_problem(doc, r, error) for r in found.warnings)
    return found.data, [_problem(doc, r, error) for r in found.clashes]


def _has_camel_key(data: Json) -> bool:
    """Whether any key anywhere in ``data`` has a capital letter (walked with a stack: documents nest deep)."""
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            if any(key.lower() != key for key in value):
                return True
            pending.extend(v for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            pending.extend(v for v in value if isinstance(v, dict | list))
    return False


def _problem(doc: YamlDocument, rename: KeyRename, error: type[ConfigError]) -> ConfigError:
    return error(rename.message, file=doc.file, line=rename.line, path=format_path(rename.path))


def _alias_lines(doc: YamlDocument, moves: Sequence[tuple[tuple[Key, ...], tuple[Key, ...]]]) -> None:
    """Give each path under a renamed key (as written -> as renamed) its line under the new name too."""
    longest_first = sorted(moves, key=lambda m: -len(m[0]))
    for path, line in list(doc.lines.items()):
        for old, new in longest_first:
            if path[: len(old)] == old:
                doc.lines.setdefault((*new, *path[len(old) :]), line)
                break


@dataclass
class _Walk:
    """One normalization: the root schema (for ``$ref``), the key lines, and the renames found so far."""

    root: Mapping[str, Json]
    lines: Mapping[tuple[Key, ...], int]
    renames: list[KeyRename] = field(default_factory=list)
    moves: list[tuple[tuple[Key, ...], tuple[Key, ...]]] = field(default_factory=list)

    def value(self, schemas: list[Mapping[str, Json]], data: Json, path: tuple[Key, ...], new: tuple[Key, ...]) -> Json:
        """``data`` (at ``path`` as written, ``new`` as renamed) normalized under every schema in ``schemas``."""
        if not schemas:
            return data
        flat = list(self.flatten(schemas))
        if isinstance(data, dict):
            return self.mapping(flat, data, path, new)
        if isinstance(data, list):
            return [self.value(_items(flat, i), item, (*path, i), (*new, i)) for i, item in enumerate(data)]
        return data

    def mapping(
        self, schemas: list[Mapping[str, Json]], data: dict[str, Json], path: tuple[Key, ...], new: tuple[Key, ...]
    ) -> Json:
        known = {key for s in schemas for key in _properties(s)}
        result: dict[str, Json] = {}
        for key, item in data.items():
            name = snake_case(key)
            line = self.lines.get((*path, key))
            if name == key or name not in known or key in known or _camel(name) != key:
                name = key
            elif name in data:
                self.renames.append(KeyRename((*path, key), key, name, line, clash=True))
                continue
            else:
                self.renames.append(KeyRename((*path, key), key, name, line))
                self.moves.append(((*path, key), (*new, name)))
            result[name] = self.value(_children(schemas, name), item, (*path, key), (*new, name))
        return result

    def flatten(self, schemas: list[Mapping[str, Json]]) -> Iterator[Mapping[str, Json]]:
        """Each schema with its ``$ref`` and ``allOf``/``anyOf``/``oneOf`` branches, depth first."""
        pending = list(reversed(schemas))
        seen: set[int] = set()
        while pending:
            schema = pending.pop()
            if id(schema) in seen:
                continue  # a $ref cycle
            seen.add(id(schema))
            yield schema
            ref = schema.get("$ref")
            target = self.resolve(ref) if isinstance(ref, str) else None
            nested = [b for key in _BRANCHES for b in _list(schema.get(key)) if isinstance(b, Mapping)]
            pending.extend(reversed([*([target] if target is not None else []), *nested]))

    def resolve(self, ref: str) -> Mapping[str, Json] | None:
        """The local schema ``ref`` points at (``#/$defs/x``), or ``None`` for any other reference."""
        if not ref.startswith("#"):
            return None
        node: Json = dict(self.root)
        for part in (p for p in ref[1:].split("/") if p):
            if not isinstance(node, dict):
                return None
            node = node.get(part.replace("~1", "/").replace("~0", "~"))
        return node if isinstance(node, dict) else None


def _list(value: Json) -> list[Json]:
    return value if isinstance(value, list) else []


def _properties(schema: Mapping[str, Json]) -> Mapping[str, Json]:
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else {}


def _children(schemas: list[Mapping[str, Json]], key: str) -> list[Mapping[str, Json]]:
    """The schemas of the value at ``key``: its properties, else matching patterns, else the extra schema."""
    found: list[Mapping[str, Json]] = []
    for schema in schemas:
        sub = _properties(schema).get(key)
        if isinstance(sub, Mapping):
            found.append(sub)
            continue
        patterns = schema.get("patternProperties")
        matched = [s for p, s in patterns.items() if re.search(p, key)] if isinstance(patterns, Mapping) else []
        found.extend(s for s in matched if isinstance(s, Mapping))
        extra = schema.get("additionalProperties")
        if not matched and isinstance(extra, Mapping):
            found.append(extra)
    return found


def _items(schemas: list[Mapping[str, Json]], index: int) -> list[Mapping[str, Json]]:
    found: list[Mapping[str, Json]] = []
    for schema in schemas:
        prefix = _list(schema.get("prefixItems"))
        sub = prefix[index] if index < len(prefix) else schema.get("items")
        if isinstance(sub, Mapping):
            found.append(sub)
    return found
