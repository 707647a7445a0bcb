"""Error classification: the one place where provider failures become ``ModelError`` kinds.

Every provider adapter sends what went wrong here (an HTTP status with its body and headers, a transport
exception, an error object inside a 200 answer, an unparseable body) and raises what comes back. Each
classification logs one line naming the model, the kind and the provider's own words.

==================  ====================================================================================
kind                what maps to it
==================  ====================================================================================
``unavailable``     connect errors, timeouts, a stream cut short, 5xx (incl. Anthropic's 529), 408, 409
``rate_limited``    429; ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms`` becomes ``retry_after``
``context_length``  413, or a context-length message in any error body (phrasings of OpenAI, Anthropic,
                    vLLM, llama.cpp, Ollama, LM Studio, DeepSeek, OpenRouter, Mistral, Gemini, TGI)
``auth``            401, 403
``bad_request``     any other 4xx, malformed bodies, empty choices, a 200 that carries an error object
==================  ====================================================================================
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx

from ishiki_host.errors import (
    ContextLengthExceeded,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelUnavailable,
)

__all__ = [
    "classify_error_object",
    "classify_exception",
    "classify_http",
    "classify_transport",
    "is_context_length_message",
    "malformed",
    "parse_retry_after",
    "stream_cut",
    "timed_out",
]

log = logging.getLogger("ishiki_host.gateway")

# Real phrasings, lower-cased matching. Examples (one per pattern):
#   OpenAI / vLLM / DeepSeek / Groq: "This model's maximum context length is 8192 tokens. However, you requested ..."
#   OpenAI (code):                   "context_length_exceeded"
#   OpenAI (newer models):           "Input tokens exceed the configured limit of 272000 tokens."
#   OpenRouter:                      "This endpoint's maximum context length is 8192 tokens. ..."
#   Anthropic:                       "prompt is too long: 208765 tokens > 200000 maximum"
#   Anthropic:                       "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000"
#   vLLM (v1):                       "The decoder prompt (length 5000) is longer than the maximum model length of 4096."
#   llama.cpp:                       "request (4476 tokens) exceeds the available context size (4096 tokens)"
#   llama.cpp (type):                "exceed_context_size_error"
#   llama.cpp (older):               "input is too large to process. increase the physical batch size"
#   Ollama:                          "the input length exceeds the context length"
#   LM Studio:                       "Input length 6491 exceeds context length 1500"
#   Mistral:    "Prompt contains 40000 tokens ... too large for model with 32768 maximum context length"
#   Gemini:     "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
#   TGI:                             "`inputs` tokens + `max_new_tokens` must be <= 4096"
#   Bedrock:                         "Input is too long for requested model."
_CONTEXT_PATTERNS = re.compile(
    "|".join(
        (
            r"maximum context length",
            r"context[_ ]length[_ ]exceeded",
            r"context[_ ]window[_ ]exceeded",
            r"input tokens exceed the configured limit",
            r"prompt is too long",
            r"exceed context limit",
            r"longer than the maximum model length",
            r"exceeds? the available context size",
            r"exceed_context_size",
            r"input is too large to process",
            r"exceeds? (?:the )?(?:maximum )?context (?:length|size|window)",
            r"input token count .* exceeds the maximum",
            r"max_new_tokens` must be <=",
            r"input is too long",
        )
    ),
    re.IGNORECASE | re.DOTALL,
)

_TYPE_KINDS: dict[str, type[ModelError]] = {
    "rate_limit_error": ModelRateLimited,
    "rate_limit_exceeded": ModelRateLimited,
    "overloaded_error": ModelUnavailable,
    "api_error": ModelUnavailable,
    "server_error": ModelUnavailable,
    "service_unavailable": ModelUnavailable,
    "timeout_error": ModelUnavailable,
    "authentication_error": ModelAuthError,
    "permission_error": ModelAuthError,
    "invalid_api_key": ModelAuthError,
    "request_too_large": ContextLengthExceeded,
    "context_length_exceeded": ContextLengthExceeded,
    "exceed_context_size_error": ContextLengthExceeded,
}


def is_context_length_message(text: str) -> bool:
    """Whether a provider's error text says the request does not fit the context window."""
    return bool(_CONTEXT_PATTERNS.search(text))


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP date; ``None`` if absent."""
    lowered = {key.lower(): value for key, value in headers.items()}
    if (millis := lowered.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_text(body: Any) -> str:
    """The human message inside an error body of any of the usual shapes."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message") or inner.get("detail") or inner.get("msg")
            if message:
                return str(message)
            return json.dumps(inner, ensure_ascii=False)[:500]
        if inner:
            return str(inner)
        if body.get("detail") or body.get("message"):
            return str(body.get("detail") or body.get("message"))
    if isinstance(body, str):
        return body.strip()[:500]
    return json.dumps(body, ensure_ascii=False)[:500] if body is not None else ""


def _parse_body(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _emit(error: ModelError, detail: str) -> ModelError:
    log.warning("model %s: %s: %s", error.model or "?", error.kind, detail)
    return error


def classify_http(
    status: int, body_text: str, headers: Mapping[str, str], model: str, *, now: float | None = None
) -> ModelError:
    """The error for a non-2xx HTTP answer (``body_text`` is the raw body; JSON error shapes are understood)."""
    body = _parse_body(body_text)
    message = _error_text(body) or httpx.codes.get_reason_phrase(status) or "error"
    detail = f"HTTP {status}: {message}"
    error: ModelError
    if status in (401, 403):
        error = ModelAuthError(detail, model=model, status=status)
    elif status == 429:
        retry_after = parse_retry_after(headers, now)
        error = ModelRateLimited(detail, model=model, status=status, retry_after=retry_after)
        if retry_after is not None:
            detail = f"{detail} (retry after {retry_after:g} s)"
    elif status == 413 or is_context_length_message(body_text):
        error = ContextLengthExceeded(detail, model=model, status=status)
    elif status >= 500 or status in (408, 409):
        error = ModelUnavailable(detail, model=model, status=status)
    else:
        error = ModelBadRequest(detail, model=model, status=status)
    return _emit(error, detail)


def classify_error_object(body: Mapping[str, Any], model: str, *, status: int = 200) -> ModelError:
    """The error for an answer that carries an error object (``{"error": {...}}``) where a result was expected."""
    inner = body.get("error", body)
    message = _error_text(body)
    if isinstance(inner, Mapping):
        code = inner.get("code")
        if isinstance(code, int) and 400 <= code <= 599:
            # OpenRouter and llama.cpp put the upstream HTTP status in `code`.
            return classify_http(code, json.dumps(body), {}, model)
        for key in (inner.get("type"), code):
            if isinstance(key, str) and key in _TYPE_KINDS:
                kind = _TYPE_KINDS[key]
                return _emit(kind(f"{key}: {message}", model=model, status=status), f"error object: {key}: {message}")
    if is_context_length_message(message):
        error: ModelError = ContextLengthExceeded(message, model=model, status=status)
    else:
        error = ModelBadRequest(f"provider answered with an error: {message}", model=model, status=status)
    return _emit(error, f"error object in a {status} answer: {message}")


def classify_transport(exc: httpx.HTTPError, model: str) -> ModelError:
    """The error for an httpx exception raised before or while reading an answer."""
    name = type(exc).__name__
    detail = f"{name}: {exc}" if str(exc) else name
    error: ModelError
    if isinstance(exc, httpx.TimeoutException):
        error = ModelUnavailable(f"timed out ({name})", model=model)
    elif isinstance(exc, httpx.TransportError) and not isinstance(exc, httpx.UnsupportedProtocol):
        error = ModelUnavailable(f"cannot reach the provider: {detail}", model=model)
    else:
        error = ModelBadRequest(f"request failed: {detail}", model=model)
    return _emit(error, detail)


def timed_out(model: str, seconds: float, what: str = "call") -> ModelError:
    """The error for a call that outlived its whole-call deadline."""
    return _emit(
        ModelUnavailable(f"no answer within {seconds:g} s", model=model), f"{what} timed out after {seconds:g} s"
    )


def stream_cut(model: str, detail: str = "the stream ended before the model finished") -> ModelError:
    """The error for an event stream that stopped without its end marker (connection cut or server died)."""
    return _emit(ModelUnavailable(detail, model=model), detail)


def malformed(model: str, detail: str, *, status: int | None = 200) -> ModelError:
    """The error for an answer that cannot be understood (bad JSON, a missing field, empty choices)."""
    return _emit(
        ModelBadRequest(f"malformed answer: {detail}", model=model, status=status), f"malformed answer: {detail}"
    )


def classify_exception(exc: BaseException, model: str) -> ModelError:
    """Wrap anything a provider client raised that is not already a ``ModelError`` (a bug in an adapter)."""
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, httpx.HTTPError):
        return classify_transport(exc, model)
    log.error("model %s: provider adapter raised %s", model, type(exc).__name__, exc_info=exc)
    return ModelBadRequest(f"provider adapter failed: {type(exc).__name__}: {exc}", model=model)
