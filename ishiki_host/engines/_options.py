"""Engine options from a JSON Schema: the schema is the one source of every default.

An engine declares its config as a JSON Schema whose properties carry ``default`` and ``description``.
``resolve_options`` validates a config against it and fills in the defaults; ``options_table`` renders the
schema as the Markdown table the docs embed (``ishiki_host.engines.docs`` keeps the docs in step).
``model_option`` checks an option naming another model of ``models.yaml`` when the engine is created.

Every new runtime creates its engines from the same profile, so the schema's validator is the one compiled for
its content (``config.validation.compiled``) and a config found valid is remembered (``remember_valid``): building
the validator and walking the schema was most of an engine's creation, about a tenth of a millisecond a runtime.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Mapping
from typing import Any

import jsonschema

from ishiki_host.config.keys import normalize_keys
from ishiki_host.config.validation import compiled, known_valid, remember_valid
from ishiki_host.errors import ConfigError

__all__ = ["model_option", "options_table", "resolve_options", "schema_defaults"]


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of every top-level property that has one (deep copies: callers may mutate them)."""
    properties = schema.get("properties", {})
    return {name: copy.deepcopy(prop["default"]) for name, prop in properties.items() if "default" in prop}


def resolve_options(schema: Mapping[str, Any], config: Mapping[str, Any] | None, *, where: str = "") -> dict[str, Any]:
    """``config`` validated against ``schema``, with the schema's defaults filled in.

    Keys in their old camelCase spelling are read as their snake_case form (``ishiki_host.config.keys``).
    Raises ``ConfigError`` whose ``path`` is ``where`` joined with the offending key (``wakeup.willingness.base``)
    and whose message names the bad value; an unknown key gets a "did you mean" hint.
    """
    renamed = normalize_keys(schema, dict(config or {})).data
    config = dict(renamed) if isinstance(renamed, dict) else {}
    _validate(schema, config, where)
    return {**schema_defaults(schema), **config}


def _validate(schema: Mapping[str, Any], config: Mapping[str, Any], where: str) -> None:
    validator = compiled(schema)
    if known_valid(validator, config):
        return
    error = min(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), str(e.message)), default=None)
    if error is None:
        remember_valid(validator, config)
    else:
        keys = [str(part) for part in error.absolute_path]
        raise ConfigError(_message(schema, config, error), path=".".join(p for p in (where, *keys) if p))


def model_option(ctx: Any, ref: object, *, path: str) -> str | None:
    """A model reference option (``None`` when unset), checked now so a typo is a ``ConfigError`` at start.

    ``ctx`` is the ``RuntimeContext``; ``path`` names the option (``wakeup.jev.model``) in the error.
    """
    if not isinstance(ref, str):
        return None
    try:
        ctx.models(ref)
    except Exception as exc:
        detail = exc.message if isinstance(exc, ConfigError) else str(exc).strip("'\"")
        message = f'no model "{ref}" in models.yaml (a group or provider:modelId): {detail}'
        raise ConfigError(message, file=str(ctx.profile.file), path=path) from None
    return ref


def _message(schema: Mapping[str, Any], config: Mapping[str, Any], error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        known = sorted(schema.get("properties", {}))
        unknown = sorted(set(config) - set(known))
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, known, n=1)
            hints.append(f'unknown option "{key}"' + (f' (did you mean "{close[0]}"?)' if close else ""))
        return "; ".join(hints) + f"; known options: {', '.join(known)}"
    return f"{json.dumps(error.instance, ensure_ascii=False, default=str)} is invalid: {error.message}"


def _type_of(prop: Mapping[str, Any]) -> str:
    kind = prop.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and isinstance(prop.get("items"), Mapping):
        return f"array of {_type_of(prop['items'])}"
    return str(kind)


def options_table(schema: Mapping[str, Any]) -> str:
    """The options of ``schema`` as a Markdown table: option, type, default, description."""
    rows = ["| option | type | default | description |", "|---|---|---|---|"]
    for name, prop in schema.get("properties", {}).items():
        default = json.dumps(prop["default"], ensure_ascii=False) if "default" in prop else "(none)"
        description = str(prop.get("description", "")).replace("|", "\\|").replace("\n", " ")
        rows.append(f"| `{name}` | {_type_of(prop)} | `{default}` | {description} |")
    return "\n".join(rows)
