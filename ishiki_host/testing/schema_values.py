"""Values made up from a JSON Schema: the arguments ``TestModel`` calls a tool with.

``example_arguments(schema)`` is a JSON object for a tool's ``parameters``; ``example_value(schema)`` a value of
any schema. Both are deterministic (no randomness, no seed) and write the smallest value that validates:

- ``const``, then the first of ``enum``, then the first of ``examples``, then ``default``, taken as given;
- objects: every ``required`` property (and those ``dependentRequired`` pulls in), more in order of
  ``properties`` up to ``minProperties``; a required name without a schema gets one from
  ``additionalProperties`` (a placeholder string when that is not a schema);
- strings: a ``format`` (``date-time``, ``date``, ``time``, ``email``, ``uri``, ``uuid``, ``ipv4``, ``ipv6``,
  ``hostname``) as a fixed sample, else ``"a"`` repeated to ``minLength`` (at most ``maxLength``); a ``pattern``
  is written by ``pattern_values`` when it is simple (literals, ``\\d``/``\\w``/``.``, classes, groups,
  alternatives, quantifiers). **A pattern that walk cannot honour** (lookarounds, backreferences, ``\\p{..}``,
  or one whose shortest text breaks the length bounds) **gives a string that may not match it**: the agent then
  rejects the call with the schema error, as it would a model's;
- integers and numbers: 0 when the bounds allow it, else the allowed value nearest to 0 (``minimum``,
  ``maximum``, ``exclusiveMinimum``/``exclusiveMaximum`` in both the draft-4 and the later form,
  ``multipleOf``); booleans ``False``; ``null`` ``None``;
- arrays: ``prefixItems`` (or a list ``items``), then ``items`` up to ``minItems``; with ``uniqueItems`` each
  item is a different variant (``"a"``, ``"b"``...; 0, 1...; the next ``enum`` member);
- ``anyOf`` / ``oneOf``: the first branch (its keywords over the schema's own); ``allOf``: the parts merged;
  a list ``type``: its first type other than ``null``; no ``type``: guessed from the keywords, else a string;
- ``$ref``: a JSON pointer into the same document (``#/$defs/...``, ``#/definitions/...``); a remote reference,
  a ``false`` schema, contradictory bounds or a recursion through required properties raise
  ``SchemaValueError``. ``not``, ``if``/``then``/``else`` and ``contains`` are not looked at.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from ishiki_host.testing.pattern_values import pattern_example

__all__ = ["SchemaValueError", "example_arguments", "example_value"]

_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "a@example.com",
    "uri": "http://localhost/",
    "url": "http://localhost/",
    "uri-reference": "/a",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "localhost",
}
_TYPE_HINTS = (
    ("object", ("properties", "required", "additionalProperties", "minProperties", "patternProperties")),
    ("array", ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")),
    ("string", ("minLength", "maxLength", "pattern", "format")),
    ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
)
_MAX_DEPTH = 32
_GIVEN = ("const", "enum", "examples", "default")


class SchemaValueError(ValueError):
    """No value could be made up for a schema (see the module docstring for when)."""


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments to call a tool whose ``parameters`` are ``schema`` with (``{}`` if it is not an object)."""
    value = example_value(schema)
    return dict(value) if isinstance(value, Mapping) else {}


def example_value(schema: Mapping[str, Any] | bool, *, variant: int = 0) -> Any:
    """A value that validates against ``schema`` (see the module docstring); ``variant`` picks another one of
    the same shape where there is a choice (what ``uniqueItems`` needs)."""
    return _Maker(schema).value(schema, variant, 0)


class _Maker:
    """Makes values for the subschemas of one document (``root``, where ``$ref`` pointers start)."""

    def __init__(self, root: Mapping[str, Any] | bool):
        self.root = root

    def value(self, schema: Mapping[str, Any] | bool, variant: int, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise SchemaValueError("the schema recurses through required values deeper than 32 levels")
        schema = self.flatten(schema, depth)
        for keyword in _GIVEN:
            if keyword in schema:
                given = _given(schema, keyword, variant)
                if given is not _NOTHING:
                    return given
        kind = _kind(schema)
        if kind == "object":
            return self.object(schema, variant, depth)
        if kind == "array":
            return self.array(schema, variant, depth)
        if kind in ("integer", "number"):
            return _number(schema, variant, integer=kind == "integer")
        if kind == "boolean":
            return variant % 2 == 1
        if kind == "null":
            return None
        return _string(schema, variant)

    def flatten(self, schema: Mapping[str, Any] | bool, depth: int) -> Mapping[str, Any]:
        """``schema`` with ``$ref``, ``allOf`` and the first ``anyOf``/``oneOf`` branch folded in."""
        if depth > _MAX_DEPTH:
            raise SchemaValueError("the schema's references or branches nest deeper than 32 levels")
        if schema is True:
            return {}
        if schema is False or not isinstance(schema, Mapping):
            raise SchemaValueError(f"no value validates against the schema {schema!r}")
        out = dict(schema)
        if "$ref" in out:
            target = self.flatten(self.resolve(out.pop("$ref")), depth + 1)
            out = {**target, **out}
        for part in out.pop("allOf", ()):
            out = _merge(out, self.flatten(part, depth + 1))
        for keyword in ("anyOf", "oneOf"):
            branches = out.pop(keyword, None)
            if branches:
                out = {**out, **self.flatten(branches[0], depth + 1)}
        return out

    def resolve(self, ref: str) -> Mapping[str, Any] | bool:
        """The subschema a local JSON pointer (``#/...``) names."""
        if not ref.startswith("#"):
            raise SchemaValueError(f"only references into the same schema are followed, not {ref!r}")
        node: Any = self.root
        for token in [t for t in ref[1:].split("/") if t]:
            token = token.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or token not in node:
                raise SchemaValueError(f"the reference {ref!r} names nothing in the schema")
            node = node[token]
        if not isinstance(node, Mapping | bool):
            raise SchemaValueError(f"the reference {ref!r} names {node!r}, not a schema")
        return node

    def object(self, schema: Mapping[str, Any], variant: int, depth: int) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        names = _wanted_properties(schema, properties)
        extra = schema.get("additionalProperties")
        out = {}
        for name in names:
            sub = properties.get(name, extra if isinstance(extra, Mapping) else {"type": "string"})
            out[name] = self.value(sub, variant, depth + 1)
        return out

    def array(self, schema: Mapping[str, Any], variant: int, depth: int) -> list[Any]:
        items = schema.get("items", {})
        prefix = schema.get("prefixItems", items if isinstance(items, list) else [])
        rest = schema.get("additionalItems", {}) if isinstance(items, list) else items
        unique = bool(schema.get("uniqueItems"))
        out = []
        for index in range(int(schema.get("minItems", 0))):
            sub = prefix[index] if index < len(prefix) else rest
            out.append(self.value(sub, variant + index if unique else variant, depth + 1))
        return out


class _Nothing:
    """No usable value under a keyword."""


_NOTHING = _Nothing()


def _given(schema: Mapping[str, Any], keyword: str, variant: int) -> Any:
    value = schema[keyword]
    if keyword in ("enum", "examples"):
        if not isinstance(value, list) or not value:
            return _NOTHING
        return value[variant % len(value)] if keyword == "enum" else value[0]
    return value


def _merge(base: Mapping[str, Any], part: Mapping[str, Any]) -> dict[str, Any]:
    """``allOf``: the keywords of both, properties and required joined."""
    out = {**base, **part}
    if "properties" in base and "properties" in part:
        out["properties"] = {**base["properties"], **part["properties"]}
    if "required" in base and "required" in part:
        out["required"] = [*base["required"], *[r for r in part["required"] if r not in base["required"]]]
    return out


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or ["null"]
        return str(kinds[0])
    if isinstance(kind, str):
        return kind
    for guess, keywords in _TYPE_HINTS:
        if any(k in schema for k in keywords):
            return guess
    return "string"


def _wanted_properties(schema: Mapping[str, Any], properties: Mapping[str, Any]) -> list[str]:
    """Required names, what ``dependentRequired`` adds, then optional ones up to ``minProperties``."""
    names = list(dict.fromkeys(schema.get("required") or ()))
    for name in names:  # the list grows while it is walked: dependencies of dependencies count too
        depends = (schema.get("dependentRequired") or {}).get(name) or (schema.get("dependencies") or {}).get(name)
        if isinstance(depends, list):
            names += [d for d in depends if d not in names]
    for name in properties:
        if len(names) >= int(schema.get("minProperties", 0)):
            break
        if name not in names:
            names.append(name)
    return names


def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, bool, float | None, bool]:
    """``(low, low is exclusive, high, high is exclusive)`` in either draft's form."""
    low, high = schema.get("minimum"), schema.get("maximum")
    low_open = high_open = False
    exclusive_low, exclusive_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if exclusive_low is True or exclusive_high is True:  # draft 4: a flag on minimum / maximum
        low_open, high_open = exclusive_low is True, exclusive_high is True
    else:
        if isinstance(exclusive_low, int | float) and (low is None or exclusive_low >= low):
            low, low_open = exclusive_low, True
        if isinstance(exclusive_high, int | float) and (high is None or exclusive_high <= high):
            high, high_open = exclusive_high, True
    return low, low_open, high, high_open


def _number(schema: Mapping[str, Any], variant: int, *, integer: bool) -> int | float:
    low, low_open, high, high_open = _bounds(schema)
    step = _step(schema, low, high, integer=integer)
    value = _first_allowed(low, low_open, step) + variant * step
    if high is not None and (value > high or (high_open and value >= high)):
        value = _last_allowed(high, high_open, step) - variant * step
    if low is not None and (value < low or (low_open and value <= low)):
        raise SchemaValueError(f"no {'integer' if integer else 'number'} fits the bounds of {dict(schema)}")
    return int(value) if integer else float(value)


def _step(schema: Mapping[str, Any], low: float | None, high: float | None, *, integer: bool) -> float:
    """What values move by: ``multipleOf`` (its smallest integer multiple for integers), else 1, or less than
    1 for a number between close bounds."""
    step = schema.get("multipleOf")
    if step is None:
        close = not integer and low is not None and high is not None and high - low <= 1
        return (high - low) / 2 if close and high is not None and low is not None else 1
    if integer:
        return Fraction(str(step)).numerator  # k * n/d is an integer exactly when d divides k
    return float(step)


def _first_allowed(low: float | None, low_open: bool, step: float) -> float:
    """The smallest multiple of ``step`` above the lower bound, or 0 when the bound allows it."""
    if low is None or low < 0 or (low == 0 and not low_open):
        return 0
    multiple = math.ceil(low / step) * step
    return multiple + step if low_open and multiple <= low else multiple


def _last_allowed(high: float, high_open: bool, step: float) -> float:
    multiple = math.floor(high / step) * step
    return multiple - step if high_open and multiple >= high else multiple


def _string(schema: Mapping[str, Any], variant: int) -> str:
    low = int(schema.get("minLength", 0))
    high = schema.get("maxLength")
    pattern = schema.get("pattern")

    def fits(text: str) -> bool:
        in_bounds = len(text) >= low and (high is None or len(text) <= high)
        return in_bounds and (pattern is None or re.search(pattern, text) is not None)

    placeholder = chr(ord("a") + variant % 26) * max(low, 1)
    placeholder = placeholder[: int(high)] if high is not None else placeholder
    candidates = [_FORMATS.get(str(schema.get("format")))]
    if pattern is not None:
        candidates += [pattern_example(pattern), pattern_example(pattern, max(low, 1))]
    candidates.append(placeholder)
    for candidate in candidates:
        if candidate is not None and fits(candidate):
            return candidate
    return next((c for c in candidates[1:] if c is not None), placeholder)  # documented: may not match
