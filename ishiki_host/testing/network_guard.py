"""The network guard: in tests, an httpx request to anything but a loopback address fails loudly.

It is opt-in, so installing the host does not change the tests of every project in the environment: the pytest
plugin installs it for a test marked ``@pytest.mark.ishiki_network_guard``, and for every test of a session
whose configuration (``pyproject.toml``'s ``[tool.pytest.ini_options]``, ``pytest.ini``...) sets
``ishiki_network_guard = true`` (``guard_wanted``); the plugin registers both names, so ``--strict-markers``
and ``--strict-config`` accept them. A blocked request raises ``NetworkGuardError``; because adapters may
catch and classify errors, the test is also failed at teardown with the list of addresses it tried, so a
swallowed attempt cannot pass unnoticed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    import pytest

__all__ = ["GUARD_NAME", "NetworkGuardError", "guard_wanted", "guarded_transports", "is_loopback"]

GUARD_NAME = "ishiki_network_guard"
"""The ini option and the marker that turn the guard on."""


class NetworkGuardError(RuntimeError):
    """A test tried to reach a non-loopback host."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback IP (``127.0.0.0/8``, ``::1``)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check(request: httpx.Request, violations: list[str]) -> None:
    host = request.url.host
    if not is_loopback(host):
        violations.append(str(request.url))
        raise NetworkGuardError(f"tests may only reach 127.0.0.1; this test tried {request.url}")


def guarded_transports(violations: list[str]) -> list[tuple[type, str, Callable[..., Any]]]:
    """``(class, attribute, replacement)`` triples that route httpx's real transports through the check."""
    original_async = httpx.AsyncHTTPTransport.handle_async_request
    original_sync = httpx.HTTPTransport.handle_request

    async def handle_async_request(self: httpx.AsyncHTTPTransport, request: httpx.Request) -> httpx.Response:
        _check(request, violations)
        return await original_async(self, request)

    def handle_request(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        _check(request, violations)
        return original_sync(self, request)

    return [
        (httpx.AsyncHTTPTransport, "handle_async_request", handle_async_request),
        (httpx.HTTPTransport, "handle_request", handle_request),
    ]


def guard_wanted(config: pytest.Config, node: pytest.Item) -> bool:
    """Whether the guard is on for the test ``node``: the session's ini option, or the marker on the test (or
    on its module or class)."""
    return bool(config.getini(GUARD_NAME)) or node.get_closest_marker(GUARD_NAME) is not None
