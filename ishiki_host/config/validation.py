"""JSON Schema validation with errors a person can act on, and defaults taken from the schema.

Validators are compiled once per schema content (its canonical JSON) and reused, the least recently used
dropped beyond a bound: a schema built again for every call (as a plugin may do) costs one ``json.dumps``.
Each error names the key path and the YAML line, says what was expected in plain words and, for an unknown key
or value, suggests the closest known one.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ishiki_host.config.keys import normalize_document, normalize_keys
from ishiki_host.config.yamlio import Key, format_path
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

    from ishiki_host.config.yamlio import YamlDocument
    from ishiki_host.errors import ConfigError

__all__ = [
    "compiled",
    "did_you_mean",
    "known_valid",
    "remember_valid",
    "schema_errors",
    "schema_problems",
    "with_defaults",
]

_HIDDEN = "<hidden>"
_SECRET = re.compile(r"(key|token|secret|password|passwd|authorization|credentials?)$", re.IGNORECASE)
_COMPILED_MAX = 256
# (validator id, JSON of a small value) known to be valid; the value keeps the validator alive, so its id is not
# reused by another while the entry is here (the compiled cache may have dropped it).
_VALID: dict[tuple[int, str], Draft202012Validator] = {}
_VALID_MAX = 4096
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def compiled(schema: Mapping[str, Json]) -> Draft202012Validator:
    """The validator of ``schema``, compiled on first use of its content (see the module docstring).

    The validator holds its own copy of the schema, so changing ``schema`` afterwards changes nothing cached.
    A schema that is not JSON (a value ``json.dumps`` refuses) is compiled for this call only.
    """
    try:
        canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return _compile(schema)
    return _compiled_json(canonical)


@functools.lru_cache(maxsize=_COMPILED_MAX)
def _compiled_json(canonical: str) -> Draft202012Validator:
    return _compile(json.loads(canonical))


def _compile(schema: Mapping[str, Json]) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def with_defaults(schema: Mapping[str, Json], data: Json) -> Json:
    """A copy of ``data`` with the schema's ``default`` values filled in for absent properties, recursively.

    Keys in their old camelCase spelling that the schema knows in snake_case (``maxTokens``) come back renamed
    (``max_tokens``; ``ishiki_host.config.keys``), so a plugin always reads snake_case keys.
    """
    return _filled(schema, normalize_keys(schema, data).data)


def _filled(schema: Mapping[str, Json], data: Json) -> Json:
    if isinstance(data, list):
        items = schema.get("items")
        return [_filled(items, item) for item in data] if isinstance(items, Mapping) else data
    if not isinstance(data, dict):
        return data
    properties: Mapping[str, Json] = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    if not properties and not isinstance(extra, Mapping):
        return data
    result = dict(data)
    for key, sub in properties.items():
        if key not in result and "default" in sub:
            default = sub["default"]
            result[key] = copy.deepcopy(default) if isinstance(default, dict | list) else default
        if key in result and isinstance(result[key], dict | list):
            result[key] = _filled(sub, result[key])
    if isinstance(extra, Mapping):
        for key in result.keys() - properties.keys():
            result[key] = _filled(extra, result[key])
    return result


def schema_errors(
    validator: Draft202012Validator,
    data: Json,
    doc: YamlDocument,
    error: type[ConfigError],
    prefix: Sequence[Key] = (),
) -> list[ConfigError]:
    """Every schema violation of ``data`` as a ``ConfigError`` of class ``error``, in document order.

    ``prefix`` is where ``data`` sits in ``doc`` (a plugin's block inside a profile).
    """
    if known_valid(validator, data):
        return []
    found: list[ConfigError] = []
    for err in validator.iter_errors(data):
        for path, message in _describe(err):
            full = (*prefix, *path)
            found.append(error(message, file=doc.file, line=doc.line(full), path=format_path(full)))
    found.sort(key=lambda e: (e.line or 0, e.path))
    if not found:
        remember_valid(validator, data)
    return found


def known_valid(validator: Draft202012Validator, data: Any) -> bool:
    """Whether small ``data`` was found valid for ``validator`` before (``remember_valid``)."""
    key = _memo_key(validator, data)
    return key is not None and key in _VALID


def remember_valid(validator: Draft202012Validator, data: Any) -> None:
    """Remember that ``data`` is valid for ``validator`` (a small object only; up to a bound), so the same block
    of a profile, or the same engine config of each new runtime, is not validated again."""
    key = _memo_key(validator, data)
    if key is not None and len(_VALID) < _VALID_MAX:
        _VALID[key] = validator


def _memo_key(validator: Draft202012Validator, data: Any) -> tuple[int, str] | None:
    """A key for remembering that small ``data`` is valid (profiles repeat the same engine blocks)."""
    if not isinstance(data, dict) or len(data) > 8:
        return None
    try:
        return id(validator), json.dumps(data, sort_keys=True)
    except (TypeError, ValueError):
        return None


def _describe(err: ValidationError) -> list[tuple[tuple[Key, ...], str]]:
    """(key path, message) pairs for one jsonschema error; an unknown-keys error gives one pair per key."""
    path: tuple[Key, ...] = tuple(err.absolute_path)
    kind, expected, instance, schema = err.validator, _value(err), err.instance, _schema(err)
    if "propertyNames" in err.relative_schema_path:
        return [((*path, str(instance)), str(schema.get("x-error", err.message)))]
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = list(schema.get("properties", {}))
        extra = [k for k in instance if k not in known and not _pattern_match(schema, k)]
        return [((*path, k), f"unknown key '{k}'{did_you_mean(str(k), known)}") for k in extra]
    if kind == "required":
        missing = [k for k in expected if isinstance(instance, dict) and k not in instance]
        return [(path, f"missing required key '{k}'") for k in missing]
    return [(path, _message(err, path))]


def _schema(err: ValidationError) -> Mapping[str, Json]:
    return err.schema if isinstance(err.schema, Mapping) else {}


def _value(err: ValidationError) -> Any:
    return err.validator_value


def _pattern_match(schema: Mapping[str, Json], key: str) -> bool:
    return any(re.search(p, key) for p in schema.get("patternProperties", {}))


def _message(err: ValidationError, path: tuple[Key, ...]) -> str:
    kind, expected, instance = err.validator, _value(err), err.instance
    shown = _show(instance, path)
    if kind == "type":
        wanted = " or ".join(expected) if isinstance(expected, list) else expected
        return f"expected {_article(wanted)}, got {_json_type(instance)}{_value_note(instance, shown)}"
    if kind == "enum":
        options = ", ".join(repr(v) for v in expected)
        hint = did_you_mean(instance, [str(v) for v in expected]) if isinstance(instance, str) else ""
        return f"must be one of {options}; got {shown}{hint}"
    bounds = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if kind in bounds:
        return f"must be {bounds[kind]} {expected}; got {shown}"
    if kind == "minItems":
        return "must not be empty" if expected == 1 else f"must have at least {expected} items"
    if kind == "minLength":
        return "must not be empty" if expected == 1 else f"must be at least {expected} characters long"
    if kind == "maxLength" and isinstance(instance, str):
        return f"must be at most {expected} characters long; got {len(instance)}"
    if kind == "minProperties":
        return "must not be empty"
    if kind == "pattern":
        return str(_schema(err).get("x-error", f"{shown} does not match the pattern {expected!r}"))
    return _strip_secret(err.message, instance, path)


def _json_type(value: Any) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def _article(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _value_note(instance: Any, shown: str) -> str:
    plain = isinstance(instance, str | int | float) and not isinstance(instance, bool)
    return f" ({shown})" if plain and shown != _HIDDEN else ""


def _secret(path: tuple[Key, ...]) -> bool:
    return any(isinstance(k, str) and _SECRET.search(k) for k in path[-1:])


def _show(value: Any, path: tuple[Key, ...]) -> str:
    if _secret(path):
        return _HIDDEN
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _strip_secret(message: str, instance: Any, path: tuple[Key, ...]) -> str:
    if _secret(path) and isinstance(instance, str) and instance:
        return message.replace(repr(instance), _HIDDEN)
    return message if len(message) <= 200 else message[:197] + "..."


def schema_problems(
    schema: Mapping[str, Json],
    data: Json,
    doc: YamlDocument,
    error: type[ConfigError],
    prefix: Sequence[Key] = (),
) -> list[ConfigError]:
    """Every violation of ``schema`` by ``data`` (a value of ``doc``, at ``prefix``), as errors of class
    ``error`` naming the file, key path and line, in document order; empty when ``data`` is valid.

    What a plugin calls to validate a config file of its own (read with ``read_text`` and ``parse_yaml``, which
    also parses JSON) the way the host validates its own: plain words, "did you mean" for unknown keys and
    values, secrets never echoed. A key in its old camelCase spelling is valid (it is read as its snake_case
    form, as ``with_defaults`` renames it, and noted in ``doc.warnings``); a key written in both spellings is an
    error.
    """
    renamed, clashes = normalize_document(doc, schema, error, data, prefix)
    return [*clashes, *schema_errors(compiled(schema), renamed, doc, error, prefix)]
