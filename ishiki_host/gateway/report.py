"""What ``ishiki models [DIR] [--json] [--probe]`` shows: providers, groups, models, breakers, probe results.

``models_report`` builds the whole answer as JSON-ready data so the CLI only prints it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from ishiki_host.config.models import ModelPrice, ModelsConfig
    from ishiki_host.gateway.gateway import Gateway, ProbeResult

__all__ = ["ProbeListener", "models_report"]


ProbeListener = Callable[["ProbeResult", str | None], None]
"""Told of each probe as it ends, with the URL it went to (``None``: the API's default), as
``ishiki models --probe`` prints its progress."""


async def models_report(
    config: ModelsConfig,
    gateway: Gateway | None,
    probe: bool,
    *,
    timeout_seconds: float | None = None,
    on_probe: ProbeListener | None = None,
) -> dict[str, Any]:
    """The report of ``config`` (each model with its ``price`` per million tokens, if configured); with a
    gateway, each model's breaker state and statistics and its provider's error and counters; with ``probe``,
    one tiny request to every model (concurrently) with its latency or error, and the URL it went to.

    Each probe takes at most ``timeout_seconds`` (``None``: the provider's own ``timeoutSeconds``), so one
    server that hangs holds the report up no longer than that; ``on_probe`` hears of each probe as it ends.
    ``probe`` needs a gateway (``ValueError`` otherwise).
    """
    if probe and gateway is None:
        raise ValueError("probing models needs a gateway")
    status = gateway.status() if gateway is not None else None
    probes = await _probe_all(gateway, config, timeout_seconds, on_probe) if probe and gateway is not None else {}
    providers = []
    models = []
    for provider in config.providers.values():
        entry: dict[str, Any] = {
            "id": provider.id,
            "api": provider.api,
            "base_url": provider.base_url,
            "max_concurrency": provider.max_concurrency,
            "models": [m.id for m in provider.models],
        }
        if status is not None:
            entry.update({k: status["providers"][provider.id][k] for k in ("error", "calls", "failures", "tokens")})
        providers.append(entry)
        for spec in provider.models:
            ref = f"{provider.id}:{spec.id}"
            model: dict[str, Any] = {
                "ref": ref,
                "provider": provider.id,
                "id": spec.id,
                "context_window": spec.context_window,
                "max_tokens": spec.max_tokens,
                "input": list(spec.input),
                "tool_call": spec.tool_call,
                "price": _price(spec.price),
                "groups": [g.name for g in config.groups.values() if ref in g.members],
            }
            if status is not None:
                model["breaker"] = status["members"].get(ref)
            if ref in probes:
                model["probe"] = {**probes[ref].to_dict(), "url": provider.base_url}
            models.append(model)
    groups = [
        {
            "name": group.name,
            "strategy": group.strategy,
            "members": list(group.members),
            "circuit_breaker": {
                "failure_threshold": group.circuit_breaker.failure_threshold,
                "cooldown_seconds": group.circuit_breaker.cooldown_seconds,
            },
            "seed": group.seed,
        }
        for group in config.groups.values()
    ]
    return {"file": config.file, "providers": providers, "groups": groups, "models": models}


def _price(price: ModelPrice | None) -> dict[str, Any] | None:
    if price is None:
        return None
    return {
        "input": price.input,
        "output": price.output,
        "cached_input": price.cached_input,
        "currency": price.currency,
    }


async def _probe_all(
    gateway: Gateway, config: ModelsConfig, timeout_seconds: float | None, on_probe: ProbeListener | None
) -> dict[str, ProbeResult]:
    results: dict[str, ProbeResult] = {}

    async def one(member: str, url: str | None) -> None:
        results[member] = result = await gateway.probe(member, limit_seconds=timeout_seconds)
        if on_probe is not None:
            on_probe(result, url)

    async with anyio.create_task_group() as tg:
        for provider in config.providers.values():
            for spec in provider.models:
                tg.start_soon(one, f"{provider.id}:{spec.id}", provider.base_url)
    return results
