"""A thin Graph API client over httpx: the few calls the cloud backend makes, errors classified once.

Every call carries the access token as ``Authorization: Bearer``, never in a URL, so no log line of httpx's
shows it. A refusal is Meta's envelope ``{"error": {"message", "type", "code", "error_subcode", "error_data":
{"details"}, "fbtrace_id"}}``; ``classify`` turns it (and the HTTP status) into the ``WhatsAppError`` subclass
that says what may be done about it. httpx exceptions never escape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from ishiki_channel_whatsapp.errors import (
    WhatsAppAuthError,
    WhatsAppBadRequest,
    WhatsAppError,
    WhatsAppRateLimited,
    WhatsAppUnavailable,
    WhatsAppWindowClosed,
)

__all__ = ["AUTH_CODES", "RATE_LIMIT_CODES", "TEMPORARY_CODES", "WINDOW_CLOSED", "GraphAPI", "classify"]

AUTH_CODES = frozenset({190})
"""The access token expired, was revoked, or is not a token."""
RATE_LIMIT_CODES = frozenset({4, 80007, 130429, 131056})
"""App calls, the business account's calls, the number's throughput, one recipient's pair rate."""
TEMPORARY_CODES = frozenset({1, 2, 131000, 131016, 133004})
"""Meta's words: unknown or service error, something went wrong, service overloaded, temporarily unavailable."""
WINDOW_CLOSED = 131047
"""More than 24 hours since the person last wrote: only templates may be sent."""

_DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=30.0, write=60.0, pool=30.0)
_UPLOAD_TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=300.0, pool=30.0)


def classify(what: str, status: int, payload: Mapping[str, Any]) -> WhatsAppError:
    """The error of a refused call ``what`` from its HTTP ``status`` and decoded body (see ``errors``)."""
    error = payload.get("error")
    error = error if isinstance(error, Mapping) else {}
    raw_code = error.get("code")
    code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else None
    data = error.get("error_data")
    details = data.get("details") if isinstance(data, Mapping) else None
    said = details or error.get("message")
    words = str(said or f"HTTP {status}")
    message = f"{what}: {words}" + (f" (code {code})" if code is not None else f" (HTTP {status})" if said else "")
    kind: type[WhatsAppError]
    if code in AUTH_CODES or status == 401:
        kind = WhatsAppAuthError
    elif code == WINDOW_CLOSED:
        kind = WhatsAppWindowClosed
    elif code in RATE_LIMIT_CODES or status == 429:
        kind = WhatsAppRateLimited
    elif code in TEMPORARY_CODES or status >= 500:
        kind = WhatsAppUnavailable
    else:
        kind = WhatsAppBadRequest
    return kind(message, what=what, status=status, code=code, details=words)


class GraphAPI:
    """The Graph API at ``base`` (``https://graph.facebook.com``), version ``version``, as the owner of
    ``token``.

    Without ``client`` it makes its own httpx client and ``aclose`` closes it; a client passed in stays the
    caller's to close.
    """

    def __init__(self, token: str, base: str, version: str, *, client: httpx.AsyncClient | None = None):
        self._token = token
        self.base = base.rstrip("/")
        self.root = f"{self.base}/{version}"
        self._owned = client is None
        self._client = client or httpx.AsyncClient(timeout=_DEFAULT_TIMEOUT, trust_env=False)
        self._auth = {"Authorization": f"Bearer {token}"}

    async def aclose(self) -> None:
        """Close the connection pool, if this client made it."""
        if self._owned:
            await self._client.aclose()

    async def get(self, path: str, params: Mapping[str, str] | None = None, *, what: str) -> dict[str, Any]:
        """``GET /{version}/{path}``; the decoded object, or the ``WhatsAppError`` of the refusal."""
        return await self._call(what, "GET", path, params=dict(params or {}))

    async def post(self, path: str, body: Mapping[str, Any], *, what: str) -> dict[str, Any]:
        """``POST /{version}/{path}`` with a JSON body."""
        return await self._call(what, "POST", path, json=dict(body))

    async def upload(
        self, path: str, fields: Mapping[str, str], file: tuple[str, bytes, str], *, what: str
    ) -> dict[str, Any]:
        """``POST /{version}/{path}`` as ``multipart/form-data``: ``fields`` and the ``file`` part."""
        return await self._call(what, "POST", path, data=dict(fields), files={"file": file}, timeout=_UPLOAD_TIMEOUT)

    async def download(self, url: str, limit: int, *, what: str = "media download") -> bytes:
        """The bytes at ``url`` (a media URL the Graph API gave), with the bearer token; ``file is too big``
        (``WhatsAppBadRequest``) past ``limit`` bytes. Plain HTTP is refused when the Graph API is HTTPS: the
        token never travels in the clear."""
        if url.startswith("http://") and self.base.startswith("https://"):
            raise WhatsAppBadRequest(f"{what}: the media URL is not HTTPS; not sending the token there", what=what)
        try:
            async with self._client.stream("GET", url, headers=self._auth, timeout=_UPLOAD_TIMEOUT) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise classify(what, response.status_code, _payload(response))
                return await _read_capped(response, limit, what)
        except httpx.HTTPError as exc:
            raise _network_error(what, exc) from None

    async def _call(self, what: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        url = f"{self.root}/{path.lstrip('/')}"
        try:
            response = await self._client.request(method, url, headers=self._auth, **kwargs)
        except httpx.HTTPError as exc:
            raise _network_error(what, exc) from None
        payload = _payload(response)
        if response.status_code == 200 and "error" not in payload:
            return payload
        raise classify(what, response.status_code, payload)


async def _read_capped(response: httpx.Response, limit: int, what: str) -> bytes:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise WhatsAppBadRequest(f"{what}: the file is over {limit} bytes", what=what, details="file is too big")
        chunks.append(chunk)
    return b"".join(chunks)


def _network_error(what: str, exc: httpx.HTTPError) -> WhatsAppUnavailable:
    # Only a failure to connect proves the request never reached Meta.
    sent = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    detail = str(exc) or "no detail"
    message = f"{what}: network error ({type(exc).__name__}: {detail})"
    return WhatsAppUnavailable(message, what=what, details=detail, sent=sent)


def _payload(response: httpx.Response) -> dict[str, Any]:
    try:
        payload = response.json()
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}
