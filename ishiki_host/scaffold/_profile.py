"""``ishiki new profile``: a ``profile.yml`` that lists every key of the profile schema, with its comment.

The text is generated from ``profile.schema.json`` (descriptions, defaults, allowed values), so it never
lags behind the schema the loader enforces. Only ``model`` (required) and, when the console is free,
``channels`` are set; every other key is commented out at its default (remove the ``# `` to change it).
The default engines' options come from their own ``config_schema``.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ishiki_host.config.schemas import load_schema
from ishiki_host.config.services import ENGINE_GROUPS, EXTENSION_GROUP
from ishiki_host.errors import ConfigDirError, ScaffoldError

if TYPE_CHECKING:
    from ishiki_host.plugins.configdir import ConfigDir
    from ishiki_host.plugins.discovery import PluginRegistry

__all__ = ["CONSOLE_CLAIM", "PROFILE_ID", "render_persona", "render_profile", "write_profile"]

CONSOLE_CLAIM = "console:local"
"""The sid of the built-in console channel, which a new profile claims when no other profile does."""

PROFILE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""What a profile id (its directory name) may be."""

_WIDTH = 116
_PLAIN = re.compile(r"^[A-Za-z][\w.:/-]*$")
_HEADER = """\
# profile.yml of the persona "{id}". The directory name is its id; persona.md beside this file is its prompt.
# Every key of the profile schema is below, with what it does. A line "# key: value" is commented out and
# shows the default; remove the "# " to set it. `ishiki check` validates this file; unknown keys are errors.
"""
_PERSONA = """\
You are {id}, a helpful and concise assistant.

Answer in the language you are spoken to. Say so plainly when you do not know something.
"""


def render_persona(profile_id: str) -> str:
    """A starting ``persona.md``."""
    return _PERSONA.format(id=profile_id)


def render_profile(
    profile_id: str, *, model: str = "default", claim_console: bool = True, registry: PluginRegistry | None = None
) -> str:
    """The commented ``profile.yml`` of a new profile.

    ``claim_console``: set ``channels`` to the console (otherwise the claim is shown commented out).
    ``registry`` names the installed engines and extensions in the comments (discovered when not given).
    """
    if registry is None:
        from ishiki_host.plugins.discovery import discover

        registry = discover()
    schema = load_schema("profile")
    writer = _Writer(registry, {"model": model}, claim_console)
    for key, sub in schema["properties"].items():
        writer.top_level(key, sub)
    return _HEADER.format(id=profile_id) + "\n".join(writer.lines).rstrip() + "\n"


def write_profile(root: Path, profile_id: str, *, model: str | None = None, force: bool = False) -> Path:
    """Write ``profiles/<id>/profile.yml`` and ``persona.md`` under the config directory ``root``.

    The model defaults to a group of the directory's ``models.yaml`` (``default`` when it has one); the
    console is claimed unless another profile has it. ``ScaffoldError`` for a bad id, or for files that exist
    (unless ``force``). Returns the profile directory.
    """
    if not PROFILE_ID.match(profile_id):
        raise ScaffoldError(f"bad profile id {profile_id!r}: use letters, digits, '.', '_' and '-'")
    from ishiki_host.plugins.configdir import PROFILES_DIR, load_config_dir
    from ishiki_host.plugins.discovery import discover

    registry = discover()
    try:
        config: ConfigDir | None = load_config_dir(root, registry=registry) if root.is_dir() else None
    except ConfigDirError:
        config = None
    directory = root / PROFILES_DIR / profile_id
    files = {
        "profile.yml": render_profile(
            profile_id,
            model=model or _default_model(config),
            claim_console=_console_free(config, profile_id),
            registry=registry,
        ),
        "persona.md": render_persona(profile_id),
    }
    existing = [name for name in files if (directory / name).exists()]
    if existing and not force:
        raise ScaffoldError(f"{directory} already has {', '.join(existing)} (use --force to overwrite)")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (directory / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ScaffoldError(f"cannot write {directory}: {exc.strerror or exc}") from exc
    return directory


def _default_model(config: ConfigDir | None) -> str:
    """A model reference the directory's ``models.yaml`` resolves: ``default``, another group, or a model."""
    models = config.models if config is not None else None
    if models is None or "default" in models.groups or not (models.groups or models.providers):
        return "default"
    if models.groups:
        return next(iter(models.groups))
    provider = next(p for p in models.providers.values())
    return f"{provider.id}:{provider.models[0].id}" if provider.models else "default"


def _console_free(config: ConfigDir | None, profile_id: str) -> bool:
    """Whether no other profile of the directory claims the console."""
    others = [p for p in (config.profiles if config is not None else ()) if p.id != profile_id]
    return not any(p.profile is not None and CONSOLE_CLAIM in p.profile.claims.by_sid for p in others)


@dataclass
class _Writer:
    registry: PluginRegistry
    values: Mapping[str, str]
    claim_console: bool
    lines: list[str] = field(default_factory=list)

    def top_level(self, key: str, sub: Mapping[str, Any]) -> None:
        self.lines.append("")
        if key == "model":
            self.describe(sub, 0, prefix="Required. ")
            self.lines.append(f"model: {_scalar(self.values['model'])}")
        elif key == "channels":
            self.channels(sub)
        elif key == "extends":
            self.extends(sub)
        elif key in ENGINE_GROUPS:
            self.engine_section(key, sub)
        else:
            self.key(key, sub, 0)

    def key(self, key: str, sub: Mapping[str, Any], indent: int) -> None:
        """A key, commented out: its description, then ``# key: default`` or its nested keys."""
        self.describe(sub, indent)
        pad = " " * indent
        if "properties" in sub:
            self.lines.append(f"{pad}# {key}:")
            for child, child_schema in sub["properties"].items():
                self.key(child, child_schema, indent + 2)
        else:
            self.lines.append(f"{pad}# {key}: {_value(sub)}")

    def channels(self, sub: Mapping[str, Any]) -> None:
        self.describe(sub, 0)
        pattern = sub["additionalProperties"]
        if self.claim_console:
            self.lines += ["channels:", *self.comment(pattern.get("description", ""), 2), f'  {CONSOLE_CLAIM}: ["*"]']
            return
        self.lines += self.comment("Another profile of this directory claims the console; claim other chats.", 0)
        self.lines += ["# channels:", *self.comment(pattern.get("description", ""), 2), f'  # {CONSOLE_CLAIM}: ["*"]']

    def extends(self, sub: Mapping[str, Any]) -> None:
        self.describe(sub, 0)
        installed = self.registry.names(EXTENSION_GROUP)
        example = installed[0] if installed else "my-extension"
        self.lines += self.comment(_installed("extensions", installed), 0)
        self.lines += ["# extends:", *self.comment(f"An extension by its name, e.g. {example}:", 2), f"  # {example}:"]
        for child, child_schema in sub["additionalProperties"]["properties"].items():
            self.key(child, child_schema, 4)

    def engine_section(self, kind: str, sub: Mapping[str, Any]) -> None:
        self.describe(sub, 0)
        group = ENGINE_GROUPS[kind]
        default = sub["properties"]["engine"]["default"]
        self.lines += self.comment(_installed("engines", self.registry.names(group)), 0)
        self.lines.append(f"# {kind}:")
        self.key("engine", sub["properties"]["engine"], 2)
        spec = self.registry.spec(f"{group}.{default}")
        options = spec.config_schema.get("properties", {}) if spec is not None else {}
        if options:
            self.lines += self.comment(f"The options of the {default} engine (another engine's go under its name).", 2)
            self.lines.append(f"  # {default}:")
            for option, option_schema in options.items():
                self.key(option, option_schema, 4)

    def describe(self, sub: Mapping[str, Any], indent: int, *, prefix: str = "") -> None:
        text = prefix + str(sub.get("description", "")).strip()
        if "enum" in sub:
            text += f" One of: {', '.join(str(v) for v in sub['enum'])}."
        self.lines += self.comment(text, indent)

    def comment(self, text: str, indent: int) -> list[str]:
        pad = " " * indent
        return [f"{pad}# {line}" for line in textwrap.wrap(text, _WIDTH - indent)] if text else []


def _installed(what: str, names: Sequence[str]) -> str:
    return f"Installed here: {', '.join(names)}." if names else f"No {what} of this kind are installed here."


def _value(sub: Mapping[str, Any]) -> str:
    """The default as YAML (a placeholder when the key has none)."""
    if "default" not in sub:
        return {"array": "[]", "object": "{}", "boolean": "false"}.get(str(sub.get("type")), '""')
    return _scalar(sub["default"])


def _scalar(value: Any) -> str:
    if isinstance(value, str) and _PLAIN.match(value) and value not in ("true", "false", "null", "yes", "no"):
        return value
    return json.dumps(value, ensure_ascii=False)
