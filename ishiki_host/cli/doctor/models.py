"""The model check of ``ishiki doctor``: every model of models.yaml gets the probe of ``ishiki models --probe``.

The probes run concurrently, each cut at the timeout, through a gateway whose HTTP goes through the doctor's
``DateRecorder`` (for the clock check). A failed probe is an error when a profile is left without any model
that answered (its group's other members failed too, or it names the model directly) and a warning when its
groups fall back to a member that answered; a key the server refused is always an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ishiki_host.channels.base import Finding
from ishiki_host.cli.models import provider_apis
from ishiki_host.errors import ConfigError
from ishiki_host.gateway import Gateway, models_report
from ishiki_host.plugins.configdir import ConfigDir

__all__ = ["model_findings"]


async def model_findings(config: ConfigDir, seconds: float, transport: httpx.AsyncBaseTransport) -> list[Finding]:
    """One finding per model of ``config.models`` (see the module docstring)."""
    models = config.models
    if not any(p.models for p in models.providers.values()):
        return [
            Finding("error", "models", "models.yaml names no model", "add a provider with its models to models.yaml")
        ]
    try:
        async with Gateway(
            models, provider_apis(models, config.registry), config_dir=config.root, transport=transport
        ) as gateway:
            report = await models_report(models, gateway, True, timeout_seconds=seconds)
    except ConfigError as exc:
        return [Finding("error", "models", f"the gateway cannot start: {exc}", f"fix {exc.file or 'models.yaml'}")]
    answered = {m["ref"] for m in report["models"] if m["probe"]["ok"]}
    context = _Context(
        answered=answered,
        stranded=_stranded(config, answered),
        provider_errors={p["id"]: p["error"] for p in report["providers"] if p.get("error")},
        groups={g["name"]: tuple(g["members"]) for g in report["groups"]},
    )
    return [_finding(model, context) for model in report["models"]]


@dataclass(frozen=True, slots=True)
class _Context:
    answered: set[str]
    stranded: Mapping[str, list[str]]
    provider_errors: Mapping[str, str]
    groups: Mapping[str, tuple[str, ...]]


def _stranded(config: ConfigDir, answered: set[str]) -> dict[str, list[str]]:
    """Member -> the enabled profiles that count on it and have no member that answered."""
    stranded: dict[str, list[str]] = {}
    for state in config.profiles:
        if state.profile is None or state.state == "disabled":
            continue
        members = config.models.resolve(state.profile.model) or ()
        if members and not answered.intersection(members):
            for member in members:
                stranded.setdefault(member, []).append(state.id)
    return stranded


def _finding(model: Mapping[str, Any], context: _Context) -> Finding:
    ref, probe = model["ref"], model["probe"]
    url = probe.get("url")
    what = f"model {ref}"
    at = f" at {url}" if url else ""
    if probe["ok"]:
        return Finding("ok", what, f"answered in {probe['latency_seconds'] * 1000:.0f} ms{at}")
    kind = probe["error_kind"]
    detail = f"{kind}{at}: {context.provider_errors.get(model['provider']) or probe['error']}"
    fix = _fix(kind, model["provider"], model["id"], url)
    if ref in context.stranded:
        profiles = ", ".join(context.stranded[ref])
        return Finding("error", what, f"{detail}; no model of profile {profiles} answered", fix)
    fallback = sorted({m for g in model["groups"] for m in context.groups.get(g, ()) if m in context.answered})
    if fallback:
        groups = model["groups"]
        detail += f"; {', '.join(groups)} fall{'s' if len(groups) == 1 else ''} back to {', '.join(fallback)}"
    return Finding("error" if kind == "auth" else "warning", what, detail, fix)


def _fix(kind: str, provider: str, model_id: str, url: str | None) -> str:
    where = f"providers.{provider}"
    if kind == "auth":
        return f"the server refused the key: put the right one in the variable {where}.api_key names in models.yaml"
    if kind == "unavailable":
        server = url or "the server"
        return f"start {server} (`ollama serve` for Ollama) or point {where}.base_url at a running server"
    if kind == "rate_limited":
        return "the server answers but limits the rate: wait, or raise the account's limits"
    if kind == "bad_request":
        return f"check that the server knows the model id {model_id!r} ({where}.models) and speaks the API named"
    return f"see `ishiki models --probe` and fix {where} in models.yaml"
