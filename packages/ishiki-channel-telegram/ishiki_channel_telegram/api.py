"""A thin Bot API client over httpx: one method per call the channel makes, errors mapped once.

Every answer is Telegram's envelope ``{"ok", "result" | "error_code", "description", "parameters"}``; ``call``
returns ``result`` or raises the ``TelegramError`` subclass for the status (see ``errors``). httpx exceptions
never escape. The token sits in every URL, so it is scrubbed from every message this module builds, and a
filter on the ``httpx`` logger scrubs it from httpx's own request log lines. Each method's URL is parsed once
(httpx parses a string URL again on every request).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ishiki_channel_telegram.errors import (
    TelegramAuthError,
    TelegramBadRequest,
    TelegramConflict,
    TelegramError,
    TelegramForbidden,
    TelegramRateLimited,
    TelegramUnavailable,
)

__all__ = ["BotAPI", "redact_tokens"]

_TOKEN_IN_URL = re.compile(r"/bot[^/\s\"'<>]+")
_DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=30.0, write=60.0, pool=30.0)
_UPLOAD_TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=300.0, pool=30.0)
_LONG_POLL_MARGIN = 15.0


def redact_tokens(text: str) -> str:
    """``text`` with every ``/bot<token>`` URL segment replaced by ``/bot<redacted>``."""
    return _TOKEN_IN_URL.sub("/bot<redacted>", text)


class _RedactTokens(logging.Filter):
    """Scrubs bot tokens from httpx's ``HTTP Request: POST https://.../bot<token>/...`` log lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "/bot" in message:
            record.msg, record.args = redact_tokens(message), ()
        return True


_FILTER = _RedactTokens()


def _install_log_filter() -> None:
    logger = logging.getLogger("httpx")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


class BotAPI:
    """The Bot API of one bot (``token``) at ``api_base``.

    Without ``client`` it makes its own httpx client and ``aclose`` closes it; a client passed in stays the
    caller's to close.
    """

    def __init__(
        self, token: str, api_base: str = "https://api.telegram.org", *, client: httpx.AsyncClient | None = None
    ):
        _install_log_filter()
        self._token = token
        self._base = f"{api_base.rstrip('/')}/bot{token}/"
        self._files = f"{api_base.rstrip('/')}/file/bot{token}/"
        self._urls: dict[str, httpx.URL] = {}
        self._owned = client is None
        self._client = client or httpx.AsyncClient(timeout=_DEFAULT_TIMEOUT, trust_env=False)

    async def aclose(self) -> None:
        """Close the connection pool, if this client made it."""
        if self._owned:
            await self._client.aclose()

    def redact(self, text: str) -> str:
        """``text`` without the token, wherever it appears."""
        return redact_tokens(text.replace(self._token, "<redacted>"))

    async def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, tuple[str, bytes, str]] | None = None,
        timeouts: httpx.Timeout | None = None,
    ) -> Any:
        """Call ``method`` with ``params`` (JSON, or multipart when ``files`` are sent); returns ``result``."""
        kwargs: dict[str, Any] = {"timeout": timeouts or (_UPLOAD_TIMEOUT if files else _DEFAULT_TIMEOUT)}
        if files:
            kwargs["files"] = dict(files)
            kwargs["data"] = {key: _form_value(value) for key, value in (params or {}).items() if value is not None}
        else:
            kwargs["json"] = {key: value for key, value in (params or {}).items() if value is not None}
        try:
            response = await self._client.post(self._url(method), **kwargs)
        except httpx.HTTPError as exc:
            raise self._network_error(method, exc) from None
        return self._result(method, response)

    def _url(self, method: str) -> httpx.URL:
        url = self._urls.get(method)
        if url is None:
            url = self._urls[method] = httpx.URL(self._base + method)
        return url

    async def get_me(self) -> dict[str, Any]:
        """The bot's own user object (id, username...)."""
        return dict(await self.call("getMe"))

    async def get_updates(
        self,
        *,
        offset: int | None,
        poll_timeout: int,
        limit: int,
        allowed_updates: Sequence[str],
    ) -> list[dict[str, Any]]:
        """Long-poll for updates with ``update_id >= offset`` (which confirms every earlier one)."""
        params = {"offset": offset, "timeout": poll_timeout, "limit": limit, "allowed_updates": list(allowed_updates)}
        wait = httpx.Timeout(connect=10.0, read=poll_timeout + _LONG_POLL_MARGIN, write=30.0, pool=30.0)
        result = await self.call("getUpdates", params, timeouts=wait)
        if not isinstance(result, list):
            raise TelegramBadRequest("getUpdates answered something that is not a list", method="getUpdates")
        return result

    async def set_webhook(
        self, url: str, *, secret_token: str, allowed_updates: Sequence[str], max_connections: int
    ) -> None:
        """Have Telegram post updates to ``url`` with ``secret_token`` in each request's header; the updates
        queued so far are kept (``drop_pending_updates`` is never set: they are delivered next)."""
        params = {
            "url": url,
            "secret_token": secret_token,
            "allowed_updates": list(allowed_updates),
            "max_connections": max_connections,
            "drop_pending_updates": False,
        }
        await self.call("setWebhook", params)

    async def delete_webhook(self) -> None:
        """Remove the webhook, keeping the queued updates (``getUpdates`` returns them)."""
        await self.call("deleteWebhook", {"drop_pending_updates": False})

    async def get_webhook_info(self) -> dict[str, Any]:
        """The webhook as Telegram has it: ``url`` (empty: none), ``pending_update_count``, ``last_error_*``..."""
        result = await self.call("getWebhookInfo")
        if not isinstance(result, dict):
            raise TelegramBadRequest("getWebhookInfo answered something that is not an object", method="getWebhookInfo")
        return result

    async def download(self, file_path: str, limit: int) -> bytes:
        """The bytes of a file ``getFile`` described; ``file is too big`` past ``limit`` bytes."""
        try:
            async with self._client.stream("GET", self._files + file_path) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise self._status_error("download", response.status_code, _payload(response))
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > limit:
                        message = f"download: the file is over {limit} bytes"
                        raise TelegramBadRequest(message, method="download", description="file is too big")
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise self._network_error("download", exc) from None
        return b"".join(chunks)

    def _result(self, method: str, response: httpx.Response) -> Any:
        payload = _payload(response)
        if response.status_code == 200 and payload.get("ok") is True and "result" in payload:
            return payload["result"]
        raise self._status_error(method, response.status_code, payload)

    def _status_error(self, method: str, status: int, payload: Mapping[str, Any]) -> TelegramError:
        error_code = payload.get("error_code")
        code = error_code if isinstance(error_code, int) else status
        description = self.redact(str(payload.get("description") or f"HTTP {status}"))
        message = f"{method}: {description}"
        parameters = payload.get("parameters")
        parameters = parameters if isinstance(parameters, Mapping) else {}
        if code == 429:
            retry_after = parameters.get("retry_after")
            wait = float(retry_after) if isinstance(retry_after, int | float) and retry_after >= 0 else 1.0
            return TelegramRateLimited(message, retry_after=wait, method=method, description=description)
        error: type[TelegramError] = {
            401: TelegramAuthError,
            404: TelegramAuthError,
            403: TelegramForbidden,
            409: TelegramConflict,
        }.get(code, TelegramUnavailable if code >= 500 else TelegramBadRequest)
        if error is TelegramAuthError and method == "download":
            error = TelegramBadRequest  # a missing file, not a refused token
        return error(message, method=method, status=code, description=description)

    def _network_error(self, method: str, exc: httpx.HTTPError) -> TelegramUnavailable:
        # Only a failure to connect proves the request never reached Telegram.
        sent = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        detail = self.redact(str(exc)) or "no detail"
        message = f"{method}: network error ({type(exc).__name__}: {detail})"
        return TelegramUnavailable(message, method=method, description=detail, sent=sent)


def _payload(response: httpx.Response) -> dict[str, Any]:
    try:
        payload = response.json()
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def _form_value(value: Any) -> str:
    # Multipart fields are strings; structured parameters (reply_parameters...) travel as JSON.
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
