"""Every failure a provider can show maps to exactly one ModelError kind, with one log line."""

from __future__ import annotations

import email.utils
import json
import logging

import httpx
import pytest

from ishiki_host.errors import (
    ContextLengthExceeded,
    ModelAuthError,
    ModelBadRequest,
    ModelRateLimited,
    ModelUnavailable,
)
from ishiki_host.gateway.classify import (
    classify_error_object,
    classify_exception,
    classify_http,
    classify_transport,
    is_context_length_message,
    parse_retry_after,
    stream_cut,
    timed_out,
)

M = "p:m"


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "bad_request"),
        (401, "auth"),
        (403, "auth"),
        (404, "bad_request"),
        (408, "unavailable"),
        (409, "unavailable"),
        (413, "context_length"),
        (422, "bad_request"),
        (429, "rate_limited"),
        (500, "unavailable"),
        (502, "unavailable"),
        (503, "unavailable"),
        (504, "unavailable"),
        (529, "unavailable"),
    ],
)
def test_status_codes(status: int, kind: str) -> None:
    error = classify_http(status, '{"error": {"message": "nope"}}', {}, M)
    assert error.kind == kind
    assert error.status == status
    assert error.model == M
    assert "nope" in str(error)


CONTEXT_MESSAGES = [
    # OpenAI, vLLM (v0), DeepSeek, Groq
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. "
    "Please reduce the length of the messages.",
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, "
    "1000 in the completion). Please reduce the length of the messages or completion.",
    # OpenAI, newer models
    "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300000 tokens.",
    # OpenRouter
    "This endpoint's maximum context length is 8192 tokens. However, you requested about 10000 tokens.",
    # Anthropic
    "prompt is too long: 208765 tokens > 200000 maximum",
    "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or "
    "`max_tokens` and try again",
    # vLLM v1
    "The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that "
    "`max_model_len` is no smaller than the number of text tokens.",
    # llama.cpp
    "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it",
    "the request exceeds the available context size, try increasing it",
    "input is too large to process. increase the physical batch size",
    # Ollama
    "the input length exceeds the context length",
    # LM Studio
    "Input length 6491 exceeds context length 1500",
    # Mistral
    "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
    # Gemini (OpenAI-compatible endpoint)
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    # TGI
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens "
    "and 512 `max_new_tokens`",
    # Bedrock
    "Input is too long for requested model.",
]


@pytest.mark.parametrize("message", CONTEXT_MESSAGES)
def test_context_length_phrasings(message: str) -> None:
    assert is_context_length_message(message)
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
    assert isinstance(classify_http(400, body, {}, M), ContextLengthExceeded)


@pytest.mark.parametrize(
    "message",
    ["Invalid value for 'temperature'", "model not found", "messages: roles must alternate", "too many requests"],
)
def test_other_messages_are_not_context_length(message: str) -> None:
    assert not is_context_length_message(message)
    assert isinstance(classify_http(400, json.dumps({"error": {"message": message}}), {}, M), ModelBadRequest)


def test_context_length_in_a_500_body_is_context_length() -> None:
    body = json.dumps({"error": "the input length exceeds the context length"})
    assert classify_http(500, body, {}, M).kind == "context_length"


def test_llama_cpp_error_type_is_context_length() -> None:
    body = {"error": {"code": 400, "message": "request too big", "type": "exceed_context_size_error"}}
    assert classify_http(400, json.dumps(body), {}, M).kind == "context_length"


def test_retry_after_seconds_date_and_ms() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = email.utils.formatdate(1_700_000_030, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=1_700_000_000) == 30
    assert parse_retry_after({"Retry-After": date}, now=1_700_000_100) == 0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_rate_limited_carries_retry_after() -> None:
    error = classify_http(429, "slow down", {"retry-after": "3"}, M)
    assert isinstance(error, ModelRateLimited)
    assert error.retry_after == 3
    assert isinstance(classify_http(429, "", {}, M), ModelRateLimited)


def test_non_json_bodies_are_quoted() -> None:
    error = classify_http(502, "<html>Bad Gateway</html>", {}, M)
    assert error.kind == "unavailable"
    assert "Bad Gateway" in str(error)
    assert "Gateway Timeout" in str(classify_http(504, "", {}, M))


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"error": {"message": "boom", "type": "server_error"}}, "unavailable"),
        ({"error": {"message": "slow", "code": "rate_limit_exceeded"}}, "rate_limited"),
        ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "unavailable"),
        ({"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}, "auth"),
        ({"error": {"message": "Provider returned error", "code": 502}}, "unavailable"),
        ({"error": {"message": "Rate limited upstream", "code": 429}}, "rate_limited"),
        ({"error": {"message": "prompt is too long: 300000 tokens > 200000 maximum"}}, "context_length"),
        ({"error": {"message": "something odd"}}, "bad_request"),
        ({"error": "a plain string error"}, "bad_request"),
    ],
)
def test_error_objects_in_200_answers(body: dict[str, object], kind: str) -> None:
    assert classify_error_object(body, M).kind == kind


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ConnectError("refused"), "unavailable"),
        (httpx.ConnectTimeout("slow connect"), "unavailable"),
        (httpx.ReadTimeout("slow read"), "unavailable"),
        (httpx.PoolTimeout("no connection"), "unavailable"),
        (httpx.RemoteProtocolError("peer closed connection"), "unavailable"),
        (httpx.ReadError("reset"), "unavailable"),
        (httpx.UnsupportedProtocol("ftp://"), "bad_request"),
        (httpx.DecodingError("bad gzip"), "bad_request"),
    ],
)
def test_transport_errors(exc: httpx.HTTPError, kind: str) -> None:
    assert classify_transport(exc, M).kind == kind


def test_adapter_bugs_become_bad_request_and_model_errors_pass() -> None:
    assert classify_exception(KeyError("choices"), M).kind == "bad_request"
    original = ModelAuthError("x", model=M)
    assert classify_exception(original, M) is original
    assert classify_exception(httpx.ConnectError("x"), M).kind == "unavailable"


def test_timeouts_and_cut_streams_are_unavailable() -> None:
    assert isinstance(timed_out(M, 2), ModelUnavailable)
    assert isinstance(stream_cut(M), ModelUnavailable)


def test_each_classification_logs_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "ishiki_host.gateway")
    classify_http(429, '{"error": {"message": "slow down"}}', {"retry-after": "2"}, M)
    assert len(caplog.records) == 1
    line = caplog.records[0].getMessage()
    assert "p:m" in line
    assert "rate_limited" in line
    assert "slow down" in line
    assert "retry after 2 s" in line
