"""The ingress check of ``ishiki doctor``: ``http.listen`` can be bound, and the public URL fits webhooks.

``http.listen`` is bound for a moment (as the host binds it, ``SO_REUSEADDR``) and let go. When the address is
taken, ``GET /healthz`` there tells a running host (fine) from another program (an error: the host would run
without HTTP). Platforms post webhooks only to a public ``https`` URL: a channel that takes webhooks (an
account with ``mode: webhook``, a WhatsApp Cloud API account) without ``http.listen`` is an error, without
``http.public_url`` or with an ``http`` one a warning. With a host running, ``GET <public_url>/healthz``
shows whether the URL reaches it (through the doctor's ``DateRecorder``, so its answer dates the clock too).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ishiki_host.channels.base import Finding
from ishiki_host.config.host import HttpSettings
from ishiki_host.ingress.app import HEALTH_PATH

__all__ = ["ingress_findings", "webhook_accounts"]


def webhook_accounts(channels: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """The labels (``whatsapp#0``) of the accounts whose platform calls the host (see the module docstring)."""
    return [
        f"{platform}#{index}"
        for platform, accounts in channels.items()
        for index, account in enumerate(accounts)
        if account.get("mode") == "webhook" or (platform == "whatsapp" and account.get("backend") == "cloud")
    ]


async def ingress_findings(
    http: HttpSettings, hooks: Sequence[str], seconds: float, *, host_running: bool, transport: httpx.AsyncBaseTransport
) -> list[Finding]:
    """The findings about ``http.listen`` and ``http.public_url`` (``hooks``: the webhook accounts)."""
    needs = ", ".join(hooks)
    if http.listen is None:
        if hooks:
            fix = "set http.listen (e.g. 127.0.0.1:8080) and http.public_url in ishiki.yaml (docs/http.md)"
            return [Finding("error", "http ingress", f"off (no http.listen), but {needs} take webhooks", fix)]
        return [Finding("ok", "http ingress", "off (no http.listen; no channel takes webhooks)")]
    found = [await _listen(http, seconds)]
    public = http.public_url
    fix = "put a reverse proxy with TLS in front (docs/http.md) and set http.public_url to its https URL"
    if public is None:
        if hooks:
            found.append(Finding("warning", "public URL", f"no http.public_url, but {needs} take webhooks", fix))
        else:
            found.append(Finding("ok", "public URL", "none (no channel takes webhooks)"))
    elif not public.startswith("https://"):
        found.append(
            Finding("warning", "public URL", f"{public} is not https: platforms post webhooks to https only", fix)
        )
    elif not host_running:
        found.append(
            Finding("ok", "public URL", f"{public} (whether it reaches the host: not checked, no host running)")
        )
    else:
        found.append(await _reaches(public, seconds, transport))
    return found


async def _listen(http: HttpSettings, seconds: float) -> Finding:
    assert http.listen is not None
    address, port = http.listen
    what = f"http.listen {http.listen_text}"
    if port == 0:
        return Finding("ok", what, "any free port (chosen when the host starts)")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return await _in_use(what, address, port, seconds)
        if exc.errno == errno.EACCES:
            fix = "use a port above 1023 behind a reverse proxy, or grant the host CAP_NET_BIND_SERVICE"
            return Finding("error", what, f"cannot bind: {exc.strerror}", fix)
        fix = "use an address of this machine (127.0.0.1 behind a reverse proxy, 0.0.0.0 for every interface)"
        return Finding("error", what, f"cannot bind: {exc.strerror or exc}", fix)
    return Finding("ok", what, "free: the host can bind it")


async def _in_use(what: str, address: str, port: int, seconds: float) -> Finding:
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(address, address)
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}{HEALTH_PATH}"
    try:
        async with httpx.AsyncClient(timeout=seconds) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        answer = f"nothing answers {url} ({type(exc).__name__})"
    else:
        if response.status_code == 200 and response.text.strip() == "ok":
            return Finding("ok", what, f"in use by a running host ({url} answers ok)")
        answer = f"{url} answers {response.status_code}, not a host's ok"
    fix = f"stop the program on port {port} (`ss -ltnp 'sport = :{port}'` shows it) or choose another http.listen"
    return Finding("error", what, f"in use by another program: {answer}", fix)


async def _reaches(public: str, seconds: float, transport: httpx.AsyncBaseTransport) -> Finding:
    url = f"{public}{HEALTH_PATH}"
    fix = "check the reverse proxy forwards the public URL to http.listen, and the DNS name points at it"
    try:
        async with httpx.AsyncClient(timeout=seconds, transport=transport) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        return Finding("warning", "public URL", f"{url} does not answer: {type(exc).__name__}: {exc}", fix)
    if response.status_code == 200 and response.text.strip() == "ok":
        return Finding("ok", "public URL", f"{url} reaches the running host")
    return Finding("warning", "public URL", f"{url} answers {response.status_code}, not the host's ok", fix)
