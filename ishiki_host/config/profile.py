"""Loading one profile directory: ``profiles/<id>/profile.yml`` (or ``.yaml``) and ``persona.md`` beside it.

The profile is checked against the shipped schema, then each engine's and extension's block against the
schema that service declares (when it is installed: a missing service is the activation's business, not an
error here). Every problem names the file, the key path and the line, and the load carries on to find the
others. Only ``enable: false`` stops it early: a disabled profile is not checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ishiki_host.config.claims import Claims, compile_claims
from ishiki_host.config.keys import normalize_document
from ishiki_host.config.profile_types import (
    CodemodeConfig,
    EngineChoice,
    EngineKind,
    ExtensionUse,
    FailoverConfig,
    Profile,
    ResourcesConfig,
    SessionConfig,
    ToolsearchConfig,
    TrustConfig,
    TypingConfig,
    unlisted_of,
)
from ishiki_host.config.schemas import load_schema
from ishiki_host.config.services import ENGINE_GROUPS, EXTENSION_GROUP, ServiceCatalog, service_name
from ishiki_host.config.validation import compiled, did_you_mean, schema_errors, with_defaults
from ishiki_host.config.yamlio import Key, YamlDocument, format_path, line_of, load_yaml, read_text
from ishiki_host.errors import ConfigError, ProfileInvalid

if TYPE_CHECKING:
    from ishiki_host.config.models import ModelsConfig

__all__ = ["PERSONA_FILE", "PROFILE_FILES", "ProfileLoad", "load_profile", "profile_from_document"]

PROFILE_FILES = ("profile.yml", "profile.yaml")
PERSONA_FILE = "persona.md"
_SECTIONS = frozenset(
    ("channels", "extends", "context", "wakeup", "toolcall", "failover", "codemode", "toolsearch", "typing")
) | {"resources", "trust", "session"}
_ENGINE_KINDS: tuple[EngineKind, ...] = ("context", "wakeup", "toolcall")


@dataclass(frozen=True, slots=True)
class ProfileLoad:
    """What loading one profile directory gave: the profile when valid, else its errors.

    ``file`` is the profile file as shown in messages (``None`` when there is none); ``disabled`` is true for
    ``enable: false``. ``warnings`` are what works but should be written otherwise (keys in their old camelCase
    spelling); they never make a profile invalid.
    """

    id: str
    directory: Path
    file: str | None
    profile: Profile | None
    disabled: bool = False
    errors: tuple[ConfigError, ...] = ()
    lines: Mapping[tuple[Key, ...], int] = field(default_factory=dict, repr=False)
    warnings: tuple[ConfigError, ...] = ()

    def line(self, path: tuple[Key, ...]) -> int | None:
        """The line of ``path`` in the profile file, or of its longest prefix that has one."""
        return line_of(self.lines, path)


def load_profile(
    directory: Path,
    display_dir: str,
    catalog: ServiceCatalog | None = None,
    models: ModelsConfig | None = None,
) -> ProfileLoad:
    """Load ``directory`` (shown as ``display_dir`` in messages). Never raises ``ConfigError``."""
    pid = directory.name
    present = [name for name in PROFILE_FILES if (directory / name).is_file()]
    if len(present) != 1:
        message = "both profile.yml and profile.yaml exist; keep one" if present else "no profile.yml in this directory"
        return ProfileLoad(pid, directory, None, None, errors=(ProfileInvalid(message, file=display_dir),))
    display = f"{display_dir}/{present[0]}"
    try:
        doc = load_yaml(directory / present[0], display, ProfileInvalid)
    except ProfileInvalid as exc:
        return ProfileLoad(pid, directory, display, None, errors=(exc,))
    if isinstance(doc.data, dict) and doc.data.get("enable") is False:
        return ProfileLoad(pid, directory, display, None, disabled=True, lines=doc.lines)
    errors: list[ConfigError] = []
    persona = _persona(directory, display_dir, errors)
    profile, problems = profile_from_document(pid, directory / present[0], doc, persona, catalog, models)
    errors.extend(problems)
    warnings = tuple(sorted(doc.warnings, key=lambda e: (e.line or 0, e.path)))
    loaded = None if errors else profile
    return ProfileLoad(pid, directory, display, loaded, errors=tuple(errors), lines=doc.lines, warnings=warnings)


def _persona(directory: Path, display_dir: str, errors: list[ConfigError]) -> str:
    path = directory / PERSONA_FILE
    display = f"{display_dir}/{PERSONA_FILE}"
    if not path.exists():
        errors.append(
            ProfileInvalid("not found: write the persona's prompt in persona.md beside the profile", file=display)
        )
        return ""
    try:
        return read_text(path, display, ProfileInvalid)
    except ProfileInvalid as exc:
        errors.append(exc)
        return ""


def profile_from_document(
    pid: str,
    file: Path,
    doc: YamlDocument,
    persona: str = "",
    catalog: ServiceCatalog | None = None,
    models: ModelsConfig | None = None,
) -> tuple[Profile | None, list[ConfigError]]:
    """Validate a parsed profile and build it. ``models=None`` skips the check of the ``model`` reference."""
    errors: list[ConfigError] = list(doc.errors)
    data = doc.data
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {'list' if isinstance(data, list) else type(data).__name__}"
        errors.append(
            ProfileInvalid(
                f"expected a mapping of profile keys (at least 'model:'), got {got}", file=doc.file, line=doc.line(())
            )
        )
        return None, errors
    schema = load_schema("profile")
    renamed, clashes = normalize_document(doc, schema, ProfileInvalid, data)
    assert isinstance(renamed, dict)  # normalizing keeps a mapping a mapping
    data, dropped = _normalized(renamed)
    errors.extend([*clashes, *schema_errors(compiled(schema), data, doc, ProfileInvalid)])
    touched = _Touched(errors)
    trust_section = data.get("trust")
    given_trust: Mapping[str, Any] = trust_section if isinstance(trust_section, dict) else {}  # before defaults
    data, clashes = _plugin_keys(doc, with_defaults(schema, data), catalog)
    errors.extend(clashes)
    claims = Claims()
    if not touched("channels"):
        claims, problems = compile_claims(data["channels"])
        errors.extend(_err(doc, path, message) for path, message in problems)
    if not touched("trust"):
        errors.extend(_trust_problems(doc, given_trust))
        data = {**data, "trust": {**data["trust"], **_unlisted(given_trust)}}
    if models is not None and "model" in data and not touched("model"):
        errors.extend(_model_problems(doc, data["model"], models))
    engines = {kind: _engine(doc, kind, data[kind], catalog, errors) for kind in _ENGINE_KINDS if not touched(kind)}
    extends = () if touched("extends") else _extends(doc, data["extends"], dropped, catalog, errors)
    if errors:
        return None, sorted(errors, key=lambda e: (e.line or 0, e.path))
    return _build(pid, file, persona, data, claims, engines, extends), errors


class _Touched:
    """Whether an error already sits under a top-level key (then later checks of that key are skipped)."""

    def __init__(self, errors: list[ConfigError]) -> None:
        self.keys = {e.path.split(".", 1)[0].split("[", 1)[0] for e in errors}

    def __call__(self, key: str) -> bool:
        return key in self.keys


def _normalized(data: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Empty sections become ``{}``; ``extends`` entries with ``enable: false`` are dropped (and returned);
    ``session.summarizer: off`` (which YAML reads as false) is the mode ``off``."""
    result = {k: ({} if v is None and k in _SECTIONS else v) for k, v in data.items()}
    dropped: set[str] = set()
    extends = result.get("extends")
    if isinstance(extends, dict):
        kept = {}
        for name, entry in extends.items():
            if isinstance(entry, dict) and entry.get("enable") is False:
                dropped.add(name)
            else:
                kept[name] = {} if entry is None else entry
        result["extends"] = kept
    for kind in ENGINE_GROUPS:
        section = result.get(kind)
        if isinstance(section, dict):
            result[kind] = {k: ({} if v is None and k != "engine" else v) for k, v in section.items()}
    session = result.get("session")
    if isinstance(session, dict) and session.get("summarizer") is False:
        result["session"] = {**session, "summarizer": "off"}  # YAML reads a bare `off` as false
    return result, dropped


def _plugin_keys(
    doc: YamlDocument, data: dict[str, Any], catalog: ServiceCatalog | None
) -> tuple[dict[str, Any], list[ConfigError]]:
    """``data`` with the old spellings in the engines' and extensions' blocks renamed by each one's schema (so
    ``Profile.document`` holds snake_case keys only), and the keys written in both spellings."""
    if catalog is None:
        return data, []
    result, clashes = dict(data), list[ConfigError]()
    for kind in _ENGINE_KINDS:
        section = result.get(kind)
        name = section.get("engine") if isinstance(section, dict) else None
        if not isinstance(section, dict) or not isinstance(name, str) or name not in section:
            continue
        spec = catalog.spec(service_name(ENGINE_GROUPS[kind], name))
        if spec is not None:
            block, found = normalize_document(doc, spec.config_schema, ProfileInvalid, section[name], (kind, name))
            result[kind], clashes = {**section, name: block}, [*clashes, *found]
    extends = result.get("extends")
    if isinstance(extends, dict):
        renamed = {}
        for name, entry in extends.items():
            spec = catalog.spec(service_name(EXTENSION_GROUP, name))
            if spec is not None and isinstance(entry, dict) and "config" in entry:
                where = ("extends", name, "config")
                block, found = normalize_document(doc, spec.config_schema, ProfileInvalid, entry["config"], where)
                entry, clashes = {**entry, "config": block}, [*clashes, *found]
            renamed[name] = entry
        result["extends"] = renamed
    return result, clashes


def _err(doc: YamlDocument, path: tuple[Key, ...], message: str) -> ConfigError:
    return ProfileInvalid(message, file=doc.file, line=doc.line(path), path=format_path(path))


def _trust_problems(doc: YamlDocument, trust: Mapping[str, Any]) -> list[ConfigError]:
    """``trust.unlisted`` and its older spelling ``allow_unlisted``, both given, must say the same."""
    mode, legacy = trust.get("unlisted"), trust.get("allow_unlisted")
    if mode is None or legacy is None or unlisted_of(legacy) == mode:
        return []
    message = (
        f"allow_unlisted: {str(legacy).lower()} means unlisted: {unlisted_of(legacy)}, but unlisted is {mode!r}; "
        "keep only unlisted"
    )
    return [_err(doc, ("trust", "allow_unlisted"), message)]


def _unlisted(trust: Mapping[str, Any]) -> dict[str, Any]:
    """``unlisted`` and ``allow_unlisted`` as the file means them: ``unlisted`` when given, else what
    ``allow_unlisted`` stands for, else ``serve`` (the schema's defaults cannot tell which one was written)."""
    mode = trust.get("unlisted") or (unlisted_of(trust["allow_unlisted"]) if "allow_unlisted" in trust else "serve")
    return {"unlisted": mode, "allow_unlisted": mode == "serve"}


def _model_problems(doc: YamlDocument, model: str, models: ModelsConfig) -> list[ConfigError]:
    if models.resolve(model) is not None:
        return []
    refs = [f"{p.id}:{m.id}" for p in models.providers.values() for m in p.models]
    where = "models.yaml" if models.file is None else models.file
    provider_id, sep, model_id = model.partition(":")
    provider = models.providers.get(provider_id) if sep else None
    if provider is not None:  # the provider exists: the nearest of its own models
        listed = [m.id for m in provider.models]
        hint = did_you_mean(model_id, listed) or f" (it lists {_names(listed)})"
        message = f"'{model}': provider '{provider_id}' of {where} lists no model '{model_id}'{hint}"
    elif sep:  # no such provider: the nearest provider, else the nearest provider:modelId
        hint = did_you_mean(provider_id, models.providers) or did_you_mean(model, refs)
        hint = hint or f" (providers: {_names(models.providers)})"
        message = f"'{model}': {where} has no provider '{provider_id}'{hint}"
    else:  # a group name (or a provider:modelId missing its provider)
        hint = did_you_mean(model, models.groups) or did_you_mean(model, refs)
        message = f"'{model}' names no group and no provider:modelId of {where}{hint or _listing(models, refs)}"
    return [_err(doc, ("model",), message)]


def _names(names: Iterable[str]) -> str:
    shown = sorted(names)
    return ", ".join(f"'{n}'" for n in shown) if shown else "none"


def _listing(models: ModelsConfig, refs: Sequence[str]) -> str:
    """What a reference can name, when nothing is close: the groups, else the ``provider:modelId`` refs."""
    return f" (groups: {_names(models.groups)})" if models.groups else f" (models: {_names(refs)})"


def _engine(
    doc: YamlDocument,
    kind: EngineKind,
    section: Mapping[str, Any],
    catalog: ServiceCatalog | None,
    errors: list[ConfigError],
) -> EngineChoice:
    name = section["engine"]
    for other in section.keys() - {"engine", name}:
        errors.append(_err(doc, (kind, other), f"options for engine '{other}', but {kind}.engine is '{name}'"))
    block = section.get(name, {})
    spec = catalog.spec(service_name(ENGINE_GROUPS[kind], name)) if catalog else None
    if spec is None:
        return EngineChoice(kind, name, block)
    errors.extend(schema_errors(compiled(spec.config_schema), block, doc, ProfileInvalid, (kind, name)))
    return EngineChoice(kind, name, with_defaults(spec.config_schema, block))


def _extends(
    doc: YamlDocument,
    extends: Mapping[str, Any],
    dropped: set[str],
    catalog: ServiceCatalog | None,
    errors: list[ConfigError],
) -> tuple[ExtensionUse, ...]:
    """On-by-default built-ins not named in the file (sorted), then the file's extensions in order."""

    def use(name: str, config: Mapping[str, Any]) -> ExtensionUse:
        spec = catalog.spec(service_name(EXTENSION_GROUP, name)) if catalog else None
        if spec is None:
            return ExtensionUse(name, config)
        path = ("extends", name, "config")
        errors.extend(schema_errors(compiled(spec.config_schema), config, doc, ProfileInvalid, path))
        return ExtensionUse(name, with_defaults(spec.config_schema, config))

    defaults = [n for n in (catalog.default_extensions() if catalog else ()) if n not in extends and n not in dropped]
    return (*(use(name, {}) for name in defaults), *(use(name, entry["config"]) for name, entry in extends.items()))


def _optional(section: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A feature section that is on: present and not ``enable: false``."""
    return section if section is not None and section.get("enable", True) else None


def _build(
    pid: str,
    file: Path,
    persona: str,
    data: Mapping[str, Any],
    claims: Claims,
    engines: Mapping[EngineKind, EngineChoice],
    extends: tuple[ExtensionUse, ...],
) -> Profile:
    codemode, toolsearch, typing = (_optional(data.get(k)) for k in ("codemode", "toolsearch", "typing"))
    failover, resources, trust, session = (data[k] for k in ("failover", "resources", "trust", "session"))
    return Profile(
        id=pid,
        directory=file.parent,
        file=file,
        persona=persona,
        model=data["model"],
        mode=data["mode"],
        claims=claims,
        extends=extends,
        context=engines["context"],
        wakeup=engines["wakeup"],
        toolcall=engines["toolcall"],
        failover=FailoverConfig(failover["attempts"], failover["backoff_ms"], failover["failover_on"]),
        codemode=_codemode(codemode) if codemode is not None else None,
        toolsearch=ToolsearchConfig(toolsearch["max_results"], tuple(toolsearch["resident"])) if toolsearch else None,
        typing=TypingConfig(float(typing["chars_per_second"]), typing["max_delay_ms"]) if typing else None,
        resources=ResourcesConfig(resources["artifact_threshold_chars"], resources["max_asset_bytes"]),
        trust=TrustConfig(
            tuple(trust["owners"]),
            tuple(trust["trusted"]),
            trust["allow_unlisted"],
            dict(trust["commands"]),
            trust["unlisted"],
            float(trust["pairing_expiry_seconds"]),
        ),
        session=SessionConfig(session["summarizer"], float(session["compact_threshold"])),
        reply_with_text=data["reply_with_text"],
        suggest_commands=data["suggest_commands"],
        stream_replies=data["stream_replies"],
        max_steps=data["max_steps"],
        failure_reply=data["failure_reply"] if (data["failure_reply"] or "").strip() else None,
        document=data,
    )


def _codemode(section: Mapping[str, Any]) -> CodemodeConfig:
    return CodemodeConfig(
        timeout_ms=section["timeout_ms"],
        memory_limit_bytes=section["memory_limit_bytes"],
        max_jobs=section["max_jobs"],
        max_tool_input_bytes=section["max_tool_input_bytes"],
        max_tool_output_bytes=section["max_tool_output_bytes"],
        max_result_bytes=section["max_result_bytes"],
        max_concurrent_tool_calls=section["max_concurrent_tool_calls"],
        max_tool_calls=section["max_tool_calls"],
        max_log_bytes=section["max_log_bytes"],
        direct=tuple(section["direct"]),
    )
