"""HTTP plumbing shared by the adapters: one POST for JSON, one for event streams, both classifying failures."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from ishiki_host.gateway.classify import (
    classify_error_object,
    classify_http,
    classify_transport,
    malformed,
)
from ishiki_host.gateway.sse import SSEEvent, aiter_sse

__all__ = ["join_url", "parse_event_json", "post_json", "post_sse"]


def join_url(base: str, path: str) -> str:
    """``base`` and ``path`` joined with exactly one slash."""
    return f"{base.rstrip('/')}/{path.lstrip('/')}"


def _json_of(response_text: str, model: str, status: int) -> Any:
    try:
        return json.loads(response_text)
    except ValueError:
        raise malformed(model, f"body is not JSON: {response_text[:200]!r}", status=status) from None


async def post_json(
    http: httpx.AsyncClient, url: str, body: Mapping[str, Any], headers: Mapping[str, str], model: str
) -> dict[str, Any]:
    """POST ``body`` and return the JSON object answered; every failure raises a classified ``ModelError``."""
    try:
        response = await http.post(url, json=body, headers=dict(headers))
    except httpx.HTTPError as exc:
        raise classify_transport(exc, model) from exc
    if not response.is_success:
        raise classify_http(response.status_code, response.text, response.headers, model)
    data = _json_of(response.text, model, response.status_code)
    if not isinstance(data, dict):
        raise malformed(model, f"expected a JSON object, got {type(data).__name__}")
    if data.get("error"):
        raise classify_error_object(data, model)
    return data


async def post_sse(
    http: httpx.AsyncClient, url: str, body: Mapping[str, Any], headers: Mapping[str, str], model: str
) -> AsyncIterator[SSEEvent]:
    """POST ``body`` and yield the events of the answer's event stream; failures raise classified errors."""
    try:
        async with http.stream("POST", url, json=body, headers=dict(headers)) as response:
            if not response.is_success:
                await response.aread()
                raise classify_http(response.status_code, response.text, response.headers, model)
            if "json" in response.headers.get("content-type", ""):
                # A server that ignores "stream" or reports an error as JSON.
                await response.aread()
                data = _json_of(response.text, model, response.status_code)
                if isinstance(data, dict) and data.get("error"):
                    raise classify_error_object(data, model)
                raise malformed(model, "expected an event stream, got a JSON body")
            async for event in aiter_sse(response.aiter_bytes()):
                yield event
    except httpx.HTTPError as exc:
        raise classify_transport(exc, model) from exc


def parse_event_json(event: SSEEvent, model: str) -> dict[str, Any]:
    """The JSON object in an event's data; an error object raises its classified error."""
    data = _json_of(event.data, model, 200)
    if not isinstance(data, dict):
        raise malformed(model, f"stream event is not a JSON object: {event.data[:200]!r}")
    if data.get("error") or data.get("type") == "error":
        raise classify_error_object(data, model)
    return data
