"""HTTP plumbing shared by the adapters: one POST for JSON, one for event streams, both classifying failures.

What a provider answers is scrubbed of the credentials the request carried (``Authorization``, ``x-api-key`` and
any header whose name says key, token, secret or auth) before anything reads it: some servers repeat the key
they refused in their error message, which would otherwise reach the logs, the fact log and ``ishiki models``.
The raw text is scrubbed of every encoded form of each secret (JSON escapes at any nesting, URL encoding; see
``_scrub``), and a JSON answer's decoded values once more.

A stream whose last event came (``[DONE]``, ``message_stop``) is read to its end by ``finish_stream`` before the
call returns: a response closed with its body unread makes httpcore close the connection, so every streamed
call connected anew (measured under a wave of new Telegram chats: one connect per streamed turn). A URL is
parsed once (``httpx.URL``) and reused: httpx parses a string URL again on every request (a third of building
one).
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncGenerator, Mapping
from dataclasses import replace
from typing import Any

import anyio
import httpx

from ishiki_host.errors import ModelError
from ishiki_host.gateway.classify import (
    classify_error_object,
    classify_http,
    classify_transport,
    malformed,
)
from ishiki_host.gateway.providers._scrub import scrub, scrub_json, secrets_of
from ishiki_host.gateway.sse import SSEEvent, aiter_sse

__all__ = [
    "FINISH_SECONDS",
    "finish_stream",
    "join_url",
    "parse_event_json",
    "post_json",
    "post_sse",
    "scrub",
    "secrets_of",
]

FINISH_SECONDS = 0.25
"""How long ``finish_stream`` waits for the end of a body after its last event (real servers end it at once)."""


def join_url(base: str, path: str) -> str:
    """``base`` and ``path`` joined with exactly one slash."""
    return f"{base.rstrip('/')}/{path.lstrip('/')}"


@functools.lru_cache(maxsize=256)
def _url(url: str) -> httpx.URL:
    return httpx.URL(url)


def _json_of(response_text: str, model: str, status: int) -> Any:
    try:
        return json.loads(response_text)
    except ValueError:
        raise malformed(model, f"body is not JSON: {response_text[:200]!r}", status=status) from None


def _content(body: Mapping[str, Any] | bytes) -> dict[str, Any]:
    """httpx's keyword for ``body``: JSON bytes already encoded (their ``content-type`` is the caller's
    headers'), or an object httpx encodes."""
    return {"content": body} if isinstance(body, bytes) else {"json": body}


async def post_json(
    http: httpx.AsyncClient, url: str, body: Mapping[str, Any] | bytes, headers: Mapping[str, str], model: str
) -> dict[str, Any]:
    """POST ``body`` (an object, or its JSON bytes) and return the JSON object answered; every failure raises a
    classified ``ModelError``."""
    try:
        response = await http.post(_url(url), headers=dict(headers), **_content(body))
    except httpx.HTTPError as exc:
        raise classify_transport(exc, model) from exc
    secrets = secrets_of(headers)
    text = scrub(response.text, secrets)
    if not response.is_success:
        raise classify_http(response.status_code, text, response.headers, model)
    data = scrub_json(_json_of(text, model, response.status_code), secrets)
    if not isinstance(data, dict):
        raise malformed(model, f"expected a JSON object, got {type(data).__name__}")
    if data.get("error"):
        raise classify_error_object(data, model)
    return data


async def post_sse(
    http: httpx.AsyncClient, url: str, body: Mapping[str, Any] | bytes, headers: Mapping[str, str], model: str
) -> AsyncGenerator[SSEEvent, None]:
    """POST ``body`` (an object, or its JSON bytes) and yield the events of the answer's event stream; failures
    raise classified errors."""
    secrets = secrets_of(headers)
    try:
        async with http.stream("POST", _url(url), headers=dict(headers), **_content(body)) as response:
            if not response.is_success:
                await response.aread()
                raise classify_http(response.status_code, scrub(response.text, secrets), response.headers, model)
            if "json" in response.headers.get("content-type", ""):
                # A server that ignores "stream" or reports an error as JSON.
                await response.aread()
                data = scrub_json(_json_of(scrub(response.text, secrets), model, response.status_code), secrets)
                if isinstance(data, dict) and data.get("error"):
                    raise classify_error_object(data, model)
                raise malformed(model, "expected an event stream, got a JSON body")
            async for event in aiter_sse(response.aiter_bytes()):
                cleaned = scrub(event.data, secrets)
                yield event if cleaned is event.data else replace(event, data=cleaned)
    except httpx.HTTPError as exc:
        raise classify_transport(exc, model) from exc


async def finish_stream(events: AsyncGenerator[SSEEvent, None]) -> None:
    """Read the rest of ``events`` after the stream's last event, so its connection stays open for the next call.

    What comes after is ignored, as is a failure reading it (the answer is complete). A body still open after
    ``FINISH_SECONDS`` is closed unread, and its connection with it.
    """
    try:
        with anyio.move_on_after(FINISH_SECONDS):
            async for _ in events:
                pass
    except ModelError:
        pass
    finally:
        await events.aclose()


def parse_event_json(event: SSEEvent, model: str) -> dict[str, Any]:
    """The JSON object in an event's data; an error object raises its classified error."""
    data = _json_of(event.data, model, 200)
    if not isinstance(data, dict):
        raise malformed(model, f"stream event is not a JSON object: {event.data[:200]!r}")
    if data.get("error") or data.get("type") == "error":
        raise classify_error_object(data, model)
    return data
