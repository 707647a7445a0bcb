"""The options of both engines (JSON Schemas, the one source of every default) and the roles they configure.

Each role (``update`` of the context engine; ``narrator``, ``decoder``, ``replyer`` of the toolcall engine)
has its own ``model`` (a group or ``provider:modelId`` of models.yaml; absent: the profile's model), its own
``prompt`` (a file relative to the profile directory replacing the built-in instructions; absent: the
built-in one from ``prompts/``), ``max_tokens`` and an optional ``temperature``. The answer format a role must
follow is not part of the prompt file: the engines always add it, so a custom prompt cannot break parsing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
from ishiki_host import with_defaults
from ishiki_host.errors import ConfigError

if TYPE_CHECKING:
    from ishiki_host import LanguageModel, RuntimeContext

__all__ = ["CONTEXT_SCHEMA", "TOOLCALL_SCHEMA", "RoleSettings", "builtin_prompt", "resolve_options", "role_settings"]


def _role(who: str, about: str, max_tokens: int, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "model": {
            "type": "string",
            "minLength": 1,
            "description": f"{who}'s model: a group or `provider:modelId` of models.yaml. Absent: the profile's model.",
        },
        "prompt": {
            "type": "string",
            "minLength": 1,
            "description": f"A file, relative to the profile directory, replacing {who}'s built-in instructions "
            "(the answer format is always added).",
        },
        "max_tokens": {
            "type": "integer",
            "minimum": 16,
            "default": max_tokens,
            "description": f"The most tokens {who} may answer with.",
        },
        "temperature": {
            "type": "number",
            "minimum": 0,
            "maximum": 2,
            "description": f"{who}'s sampling temperature. Absent: the provider's default.",
        },
        **(extra or {}),
    }
    schema = {"type": "object", "additionalProperties": False, "default": {}, "properties": properties}
    return {**schema, "description": about}


CONTEXT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "max_messages": {
            "type": "integer",
            "minimum": 2,
            "maximum": 1000,
            "default": 24,
            "description": "The window holds at most this many messages after the last narrative update; when "
            "more arrive, the older ones are first folded into the narrative (a catch-up update), down to half.",
        },
        "recent_messages": {
            "type": "integer",
            "minimum": 0,
            "maximum": 100,
            "default": 4,
            "description": "Messages the narrative already covers that stay in the window word for word "
            "(tone and exact wording of the last exchange).",
        },
        "update": _role(
            "The update",
            "The narrative update: one background call after each turn (and a catch-up when messages pile up).",
            700,
        ),
    },
}
"""``context.narrative`` of a profile."""

TOOLCALL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "narrator": _role("The Narrator", "The Narrator: chooses act, reply, wait or finish, with a rationale.", 200),
        "decoder": _role(
            "The Action Decoder",
            "The Action Decoder: turns an act intent into tool calls over the step's real tool schemas.",
            1000,
            {
                "retries": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 10,
                    "default": 2,
                    "description": "Steps in a row the turn goes on after the Action Decoder failed, so the "
                    "Narrator, told why, decides again; then the turn ends.",
                }
            },
        ),
        "replyer": _role("The Replyer", "The Replyer: writes the message in the persona's voice.", 1000),
        "max_result_chars": {
            "type": "integer",
            "minimum": 200,
            "default": 4000,
            "description": "Characters of each tool result the roles read (the host keeps the whole result).",
        },
        "record_prompts": {
            "type": "boolean",
            "default": False,
            "description": "Also store each role's full prompt in its fact-log record (large; for debugging).",
        },
    },
}
"""``toolcall.narrative`` of a profile."""


@dataclass(frozen=True)
class RoleSettings:
    """One role, resolved: ``model`` is ``None`` for "the model the engine wraps" (the profile's)."""

    name: str
    prompt: str
    max_tokens: int
    temperature: float | None = None
    model: LanguageModel | None = None
    model_ref: str | None = None


def resolve_options(schema: Mapping[str, Any], config: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """``config`` checked against ``schema``, with its defaults filled in (the host does the same on load).

    A violation is a ``ConfigError`` whose path is ``where`` joined with the offending key.
    """
    data = dict(config or {})
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        path = ".".join([where, *(str(part) for part in error.absolute_path)])
        raise ConfigError(error.message, path=path)
    resolved: dict[str, Any] = with_defaults(schema, data)
    return resolved


def builtin_prompt(role: str) -> str:
    """The built-in instructions of ``role`` (``prompts/<role>.md`` of this package)."""
    return resources.files("ishiki_engine_narrative").joinpath("prompts", f"{role}.md").read_text("utf-8").strip()


def role_settings(ctx: RuntimeContext, config: Mapping[str, Any], role: str, where: str) -> RoleSettings:
    """Resolve ``config`` (a role block, defaults applied) for the runtime ``ctx``.

    An unknown model or an unreadable prompt file is a ``ConfigError`` naming ``where.model`` /
    ``where.prompt`` and the profile file.
    """
    file = str(ctx.profile.file)
    ref = config.get("model")
    model = None
    if ref is not None:
        try:
            model = ctx.models(ref)
        except (ConfigError, KeyError, LookupError) as exc:
            detail = exc.message if isinstance(exc, ConfigError) else str(exc).strip("'\"")
            raise ConfigError(f"model {ref!r} cannot be used: {detail}", file=file, path=f"{where}.model") from exc
    prompt = builtin_prompt(role)
    if config.get("prompt") is not None:
        prompt = _read_prompt(ctx.profile.directory, str(config["prompt"]), file, f"{where}.prompt")
    temperature = config.get("temperature")
    return RoleSettings(
        name=role,
        prompt=prompt,
        max_tokens=int(config.get("max_tokens", 1000)),
        temperature=float(temperature) if temperature is not None else None,
        model=model,
        model_ref=ref,
    )


def _read_prompt(directory: Path, name: str, file: str, path: str) -> str:
    target = (directory / name).resolve()
    try:
        text = target.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot read the prompt file {target}: {reason}", file=file, path=path) from exc
    if not text:
        raise ConfigError(f"the prompt file {target} is empty", file=file, path=path)
    return text
