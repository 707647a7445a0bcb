"""A provider's clients: its connections spread over small httpx pools, used in turn.

httpcore 1.0 scans every connection of a pool for every request it assigns, so one pool of 64 connections
costs milliseconds of CPU per request under load (quadratic overall). A provider of an HTTP API therefore gets
``ceil(maxConcurrency / POOL_SIZE)`` clients, each with its own small pool, and calls go to them in turn; the
gateway's scheduler still bounds the calls in flight to ``maxConcurrency``. APIs without a base URL (the
scripted one) get one client. Every httpx client of a gateway shares one TLS context (building one reads the
CA bundle, ~20 ms).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import httpx

from ishiki_host.config.models import ProviderConfig
from ishiki_host.errors import ConfigError
from ishiki_host.gateway.api import ModelAPI, ProviderClient
from ishiki_host.gateway.providers.scripted import CONFIG_DIR_OPTION

__all__ = ["POOL_SIZE", "HttpClients", "ProviderPool", "make_pool"]

POOL_SIZE = 4
"""Keep-alive connections per httpx pool."""


class HttpClients:
    """The httpx clients a gateway made (closed with it), and their shared TLS context."""

    def __init__(self) -> None:
        self.clients: list[httpx.AsyncClient] = []
        self._tls: ssl.SSLContext | None = None

    def make(self, timeout: httpx.Timeout, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
        """A new client with a small pool."""
        if self._tls is None:
            self._tls = httpx.create_ssl_context()
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=POOL_SIZE)
        client = httpx.AsyncClient(timeout=timeout, limits=limits, transport=transport, verify=self._tls)
        self.clients.append(client)
        return client

    async def aclose(self) -> None:
        """Close every client."""
        for client in self.clients:
            await client.aclose()
        self.clients.clear()


@dataclass
class ProviderPool:
    """One provider of a gateway: its clients (none when it cannot start: ``error`` says why) and counters."""

    config: ProviderConfig
    clients: tuple[ProviderClient, ...] = ()
    error: str | None = None
    calls: int = 0
    failures: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    _turn: int = 0

    @property
    def client(self) -> ProviderClient | None:
        """The next client, in turn (``None`` when the provider cannot start)."""
        if not self.clients:
            return None
        self._turn = (self._turn + 1) % len(self.clients)
        return self.clients[self._turn]


def make_pool(
    provider: ProviderConfig,
    apis: Mapping[str, ModelAPI],
    http: HttpClients,
    *,
    transport: httpx.AsyncBaseTransport | None,
    config_dir: str | None,
) -> ProviderPool | ConfigError:
    """The provider's pool, a pool holding the reason it cannot start, or the ``ConfigError`` its API raised."""
    api = apis.get(provider.api)
    if api is None:
        known = ", ".join(sorted(apis)) or "none"
        return ProviderPool(provider, error=f"provider API {provider.api!r} is not installed (installed: {known})")
    if api.needs_base_url and not provider.base_url:
        return ProviderPool(provider, error=f"provider {provider.id!r} needs a baseUrl")
    if config_dir is not None:
        provider = replace(provider, options={**provider.options, CONFIG_DIR_OPTION: config_dir})
    timeout = httpx.Timeout(
        provider.read_timeout_seconds, connect=provider.connect_timeout_seconds, pool=provider.timeout_seconds
    )
    count = -(-provider.max_concurrency // POOL_SIZE) if api.needs_base_url else 1
    try:
        clients = tuple(api.create(provider, http.make(timeout, transport)) for _ in range(count))
    except ConfigError as exc:
        return exc
    return ProviderPool(provider, clients)
