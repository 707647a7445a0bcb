"""A provider's clients: its connections spread over small httpx pools, used in turn.

httpcore 1.0 scans every connection of a pool for every request it assigns, so one pool of 64 connections
costs milliseconds of CPU per request under load (quadratic overall). A provider of an HTTP API therefore gets
``ceil(max_concurrency / POOL_SIZE)`` clients, each with its own small pool, and each call goes to the client
with the fewest calls in flight (``ProviderPool.acquire``, once the scheduler granted the call its slot). The
scheduler bounds the calls in flight to ``max_concurrency``, so no client has more than ``POOL_SIZE`` at once and
every connection stays a keep-alive one (handing clients out in turn let some get more calls than connections
kept: the extra ones were opened and closed again, a connect every few calls under load). APIs without a base
URL (the scripted one) get one client. Every httpx client of a gateway shares one TLS context (building one
reads the CA bundle, ~20 ms).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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
    in_flight: list[int] = field(init=False)
    """Calls in flight per client (same order as ``clients``)."""

    def __post_init__(self) -> None:
        self.in_flight = [0] * len(self.clients)

    @property
    def usable(self) -> bool:
        """Whether the provider has a client (``error`` says why not)."""
        return bool(self.clients)

    def acquire(self) -> tuple[int, ProviderClient]:
        """The client with the fewest calls in flight (the first such) and its index; ``release(index)`` after."""
        counts = self.in_flight
        index = counts.index(min(counts))
        counts[index] += 1
        return index, self.clients[index]

    def release(self, index: int) -> None:
        """The call that ``acquire`` gave client ``index`` for has ended."""
        self.in_flight[index] -= 1

    @contextmanager
    def lease(self) -> Iterator[ProviderClient]:
        """``acquire`` for the block."""
        index, client = self.acquire()
        try:
            yield client
        finally:
            self.release(index)


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
        return ProviderPool(provider, error=f"provider {provider.id!r} needs a base_url")
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
