"""Loading ``models.yaml`` into ``ModelsConfig``.

Errors never stop the load: a provider or group with an error is left out (and reported), the rest load. The
keys a provider has beyond the common ones belong to its API; with a ``catalog`` they are checked against
that API's ``config_schema`` (unknown keys are errors) and land in ``ProviderConfig.options``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ishiki_host.config.keys import normalize_document
from ishiki_host.config.models import (
    CircuitBreakerConfig,
    GroupConfig,
    ModelPrice,
    ModelsConfig,
    ModelSpec,
    ProviderConfig,
)
from ishiki_host.config.schemas import load_schema
from ishiki_host.config.services import PROVIDER_GROUP, ServiceCatalog, service_name
from ishiki_host.config.validation import compiled, did_you_mean, schema_errors, with_defaults
from ishiki_host.config.yamlio import YamlDocument, format_path, load_yaml
from ishiki_host.errors import ConfigError, ModelsConfigInvalid

__all__ = ["MODELS_FILES", "load_models", "models_from_document"]

MODELS_FILES = ("models.yaml", "models.yml")
_COMMON = frozenset(load_schema("models")["properties"]["providers"]["additionalProperties"]["properties"])


def load_models(
    config_dir: Path,
    env: Mapping[str, str] | None = None,
    *,
    catalog: ServiceCatalog | None = None,
) -> tuple[ModelsConfig, list[ConfigError]]:
    """Load ``config_dir/models.yaml``; ``env`` defaults to ``os.environ``.

    Returns what loaded and every problem found. With ``catalog``, provider-API keys are validated too.
    """
    present = [name for name in MODELS_FILES if (config_dir / name).exists()]
    if not present:
        missing = ModelsConfigInvalid(
            "not found: profiles need models.yaml to name their model", file=str(config_dir / MODELS_FILES[0])
        )
        return ModelsConfig(), [missing]
    display = str(config_dir / present[0])
    if len(present) > 1:
        return ModelsConfig(file=display), [
            ModelsConfigInvalid("both models.yaml and models.yml exist; keep one", file=display)
        ]
    try:
        doc = load_yaml(config_dir / present[0], display, ModelsConfigInvalid, os.environ if env is None else env)
    except ModelsConfigInvalid as exc:
        return ModelsConfig(file=display), [exc]
    return models_from_document(doc, catalog)


def models_from_document(
    doc: YamlDocument, catalog: ServiceCatalog | None = None
) -> tuple[ModelsConfig, list[ConfigError]]:
    """Validate a parsed ``models.yaml`` and build ``ModelsConfig`` from what is valid."""
    data = {} if doc.data is None else doc.data
    errors: list[ConfigError] = list(doc.errors)
    if not isinstance(data, dict):
        errors.append(
            ModelsConfigInvalid("expected a mapping with 'providers' and 'groups'", file=doc.file, line=doc.line(()))
        )
        return ModelsConfig(file=doc.file), errors
    data, clashes = normalize_document(doc, load_schema("models"), ModelsConfigInvalid, data)
    assert isinstance(data, dict)  # normalizing keeps a mapping a mapping
    errors.extend(clashes)
    found = schema_errors(compiled(load_schema("models")), data, doc, ModelsConfigInvalid)
    errors.extend(found)
    data = with_defaults(load_schema("models"), data)
    providers: dict[str, ProviderConfig] = {}
    for pid, written in _mapping(data.get("providers")).items():
        raw, clashes = _api_keys(doc, pid, written, catalog)
        problems = [*clashes, *_provider_problems(doc, pid, raw, catalog)]
        errors.extend(problems)
        if not problems and not _touched(errors, ("providers", pid)) and isinstance(raw, dict):
            providers[pid] = _provider(pid, raw, catalog)
    groups: dict[str, GroupConfig] = {}
    for name, raw in _mapping(data.get("groups")).items():
        problems = _group_problems(doc, name, raw, providers, data)
        errors.extend(problems)
        if not problems and not _touched(errors, ("groups", name)) and isinstance(raw, dict):
            groups[name] = _group(name, raw)
    errors.sort(key=lambda e: (e.line or 0, e.path))
    warnings = tuple(sorted(doc.warnings, key=lambda e: (e.line or 0, e.path)))
    return ModelsConfig(providers=providers, groups=groups, file=doc.file, warnings=warnings), errors


def _api_keys(doc: YamlDocument, pid: str, raw: Any, catalog: ServiceCatalog | None) -> tuple[Any, list[ConfigError]]:
    """The provider block with the old spellings of its API's own keys renamed (``streamUsage``)."""
    if not isinstance(raw, dict) or catalog is None or not isinstance(raw.get("api"), str):
        return raw, []
    spec = catalog.spec(service_name(PROVIDER_GROUP, raw["api"]))
    if spec is None:
        return raw, []
    options = {k: v for k, v in raw.items() if k not in _COMMON}
    renamed, clashes = normalize_document(doc, spec.config_schema, ModelsConfigInvalid, options, ("providers", pid))
    assert isinstance(renamed, dict)
    return {**{k: v for k, v in raw.items() if k in _COMMON}, **renamed}, clashes


def _touched(errors: list[ConfigError], path: tuple[str, str]) -> bool:
    """Whether an error sits at or under ``path``."""
    text = format_path(path)
    return any(e.path == text or e.path.startswith((f"{text}.", f"{text}[")) for e in errors)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _provider_problems(doc: YamlDocument, pid: str, raw: Any, catalog: ServiceCatalog | None) -> list[ConfigError]:
    if not isinstance(raw, dict) or catalog is None or not isinstance(raw.get("api"), str):
        return []
    spec = catalog.spec(service_name(PROVIDER_GROUP, raw["api"]))
    if spec is None:
        return []  # the profiles using it wait for the API; nothing to check its keys against
    where = ("providers", pid)
    problems: list[ConfigError] = []
    if spec.needs_base_url and "base_url" not in raw:
        problems.append(_error(doc, where, f"api '{raw['api']}' needs base_url"))
    options = {k: v for k, v in raw.items() if k not in _COMMON}
    for err in schema_errors(compiled(spec.config_schema), options, doc, ModelsConfigInvalid, where):
        if "unknown key" in err.message:
            key = err.path.rsplit(".", 1)[-1]
            hint = did_you_mean(key, [*_COMMON, *spec.config_schema.get("properties", {})])
            err = ModelsConfigInvalid(f"unknown key '{key}'{hint}", file=err.file, line=err.line, path=err.path)
        problems.append(err)
    return problems


def _group_problems(
    doc: YamlDocument, name: str, raw: Any, providers: Mapping[str, ProviderConfig], data: Mapping[str, Any]
) -> list[ConfigError]:
    if not isinstance(raw, dict) or not isinstance(raw.get("models"), list):
        return []
    problems = []
    declared = _mapping(data.get("providers"))
    for index, member in enumerate(raw["models"]):
        if not isinstance(member, str) or ":" not in member:
            continue  # the schema already said so
        pid, _, model_id = member.partition(":")
        provider = providers.get(pid)
        if provider is not None and provider.model(model_id) is not None:
            continue
        if pid in declared and provider is None:
            message = f"'{member}': provider '{pid}' has errors"
        elif provider is not None:
            hint = did_you_mean(model_id, [m.id for m in provider.models])
            message = f"'{member}': provider '{pid}' lists no model '{model_id}'{hint}"
        else:
            message = f"'{member}': no provider '{pid}'{did_you_mean(pid, list(declared))}"
        problems.append(_error(doc, ("groups", name, "models", index), message))
    return problems


def _error(doc: YamlDocument, path: tuple[Any, ...], message: str) -> ConfigError:
    return ModelsConfigInvalid(message, file=doc.file, line=doc.line(path), path=format_path(path))


def _provider(pid: str, raw: Mapping[str, Any], catalog: ServiceCatalog | None) -> ProviderConfig:
    options = {k: v for k, v in raw.items() if k not in _COMMON}
    spec = catalog.spec(service_name(PROVIDER_GROUP, raw["api"])) if catalog else None
    if spec is not None:
        options = with_defaults(spec.config_schema, options)
    return ProviderConfig(
        id=pid,
        api=raw["api"],
        base_url=raw.get("base_url"),
        api_key=raw.get("api_key"),
        headers=dict(raw["headers"]),
        models=tuple(_model(m) for m in raw["models"]),
        max_concurrency=raw["max_concurrency"],
        timeout_seconds=float(raw["timeout_seconds"]),
        connect_timeout_seconds=float(raw["connect_timeout_seconds"]),
        read_timeout_seconds=float(raw["read_timeout_seconds"]),
        options=options,
    )


def _model(raw: Mapping[str, Any]) -> ModelSpec:
    return ModelSpec(
        id=raw["id"],
        context_window=raw["context_window"],
        max_tokens=raw["max_tokens"],
        tool_call=raw["tool_call"],
        input=tuple(raw["input"]),
        price=_price(raw["price"]) if "price" in raw else None,
    )


def _price(raw: Mapping[str, Any]) -> ModelPrice:
    cached = raw.get("cached_input")
    return ModelPrice(
        input=float(raw["input"]),
        output=float(raw["output"]),
        cached_input=float(cached) if cached is not None else None,
        currency=raw["currency"],
    )


def _group(name: str, raw: Mapping[str, Any]) -> GroupConfig:
    breaker = raw["circuit_breaker"]
    return GroupConfig(
        name=name,
        members=tuple(raw["models"]),
        strategy=raw["strategy"],
        circuit_breaker=CircuitBreakerConfig(
            failure_threshold=breaker["failure_threshold"], cooldown_seconds=float(breaker["cooldown_seconds"])
        ),
        seed=raw.get("seed"),
    )
