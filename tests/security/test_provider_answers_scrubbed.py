"""A provider's answer is scrubbed of the credentials its request carried, streamed or not, before anything
(error classification, its log line, the fact log) reads it."""

from __future__ import annotations

import json
import logging
import re
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import pytest

from ishiki_host.config.models import ModelsConfig
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.errors import ModelAuthError, ModelBadRequest, ModelError
from ishiki_host.gateway import FailoverPolicy, Gateway
from ishiki_host.gateway.providers._http import scrub, secrets_of
from ishiki_host.gateway.providers._scrub import scrub_json
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Response

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789abcdefSECRET"


def test_the_credentials_of_a_request_are_found_in_its_headers() -> None:
    headers = {"authorization": f"Bearer {KEY}", "x-api-key": "anthropic-key-123456", "x-goog-api-key": "g-987654321",
               "content-type": "application/json", "x-token": "short", "user-agent": "ishiki-host/0.1"}  # fmt: skip
    assert secrets_of(headers) == (f"Bearer {KEY}", KEY, "anthropic-key-123456", "g-987654321")
    assert scrub(f"bad key {KEY}; was Bearer {KEY}", secrets_of(headers)) == "bad key <redacted>; was <redacted>"
    text = "nothing to hide"
    assert scrub(text, secrets_of(headers)) is text


async def ask(model: Any, request: ModelRequest, stream: bool) -> None:
    """One call, streamed or not, to its end."""
    if not stream:
        await model.generate(request)
        return
    async for _ in model.stream(request):
        pass


def refuse(request: RecordedRequest) -> Response:
    """A 401 that repeats the key it refused."""
    key = request.headers["authorization"].removeprefix("Bearer ")
    body = {"error": {"message": f"Incorrect API key provided: {key}", "code": "invalid_api_key"}}
    return Response.json(body, 401)


@pytest.mark.parametrize("stream", [False, True])
async def test_an_error_repeating_the_key_is_scrubbed(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, Any], stream: bool
) -> None:
    fake_openai.push(refuse, lambda request: Response.json({"error": {"message": f"quota of {KEY} used up"}}))
    config = ModelsConfig(providers={"fake": fake_openai.provider("fake", ["m"], api_key=KEY)})
    request = ModelRequest((Message.user("hi"),))
    async with Gateway(config, model_apis) as gateway:
        model = gateway.model("fake:m")
        with pytest.raises(ModelAuthError) as refused:
            await ask(model, request, stream)
        with pytest.raises(ModelBadRequest) as object_error:
            await ask(model, request, stream)
    assert KEY not in str(refused.value)
    assert "<redacted>" in str(refused.value)
    assert KEY not in str(object_error.value)


SLASHED = "sk-SEKRET/0123+4567/abcdef=="  # keys with '/' and '+' exist (base64-looking ones)


def json_escaped(text: str) -> str:
    """Every character as ``\\uXXXX`` (upper-case hex), as some JSON encoders write them."""
    return "".join(f"\\u{ord(c):04X}" for c in text)


UPSTREAM = '{"error": {"message": "bad key ' + json_escaped(SLASHED[:9]) + SLASHED[9:].replace("/", "\\/") + '"}}'
"""An upstream's error body as a proxy (OpenRouter's ``metadata.raw``) carries it inside a JSON string."""

# How a server may write the key it repeats inside a JSON string (the raw text of the body, between quotes).
ECHOES = {
    "as sent": SLASHED,
    "slash escaped": SLASHED.replace("/", "\\/"),
    "unicode escaped": json_escaped(SLASHED),
    "mixed escapes": "".join(f"\\u{ord(c):04x}" if i % 2 else c for i, c in enumerate(SLASHED)).replace("/", "\\/"),
    "nested upstream body": json.dumps(UPSTREAM)[1:-1],  # the upstream's own escapes, escaped again
    "url encoded": f"see https://api.example/v1?key={quote(SLASHED, safe='')}",
}


def error_body(echo: str) -> bytes:
    """An OpenAI-shaped error object whose message repeats the key as ``echo`` (raw JSON text)."""
    return ('{"error": {"message": "Incorrect API key provided: ' + echo + '", "code": "invalid_api_key"}}').encode()


def decoded_forms(text: str) -> list[str]:
    """``text`` and what a reader decoding it once or twice more would see."""
    forms = [text]
    for _ in range(2):
        last = forms[-1]
        forms.append(unquote(re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), last).replace("\\/", "/")))
    return forms


def answer(status: int, echo: str, stream: bool) -> Response:
    """The status with the error body; a 200 as a JSON body, or (streamed) as an error event in the stream."""
    if status == 200 and stream:
        event = b"data: " + error_body(echo) + b"\n\n"
        return Response(200, (("content-type", "text/event-stream"),), event)
    return Response(status, (("content-type", "application/json"),), error_body(echo))


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("status", [400, 401, 500, 200])
@pytest.mark.parametrize("echo", list(ECHOES))
async def test_every_encoded_echo_of_the_key_is_scrubbed_from_every_error(
    fake_openai: FakeOpenAIServer,
    model_apis: dict[str, Any],
    fake_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    status: int,
    echo: str,
    stream: bool,
) -> None:
    fake_openai.default = lambda request: answer(status, ECHOES[echo], stream)
    config = ModelsConfig(providers={"fake": fake_openai.provider("fake", ["m"], api_key=SLASHED)})
    request = ModelRequest((Message.user("hi"),))
    caplog.set_level(logging.DEBUG)
    async with Gateway(config, model_apis, clock=fake_clock) as gateway:
        with pytest.raises(ModelError) as failed:
            await ask(gateway.model("fake:m", failover=FailoverPolicy(attempts=1)), request, stream)
    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {SLASHED}"  # the key was sent
    seen = [str(failed.value), *(record.getMessage() for record in caplog.records)]
    leaks = [text for text in seen for form in decoded_forms(text) if "SEKRET" in form]
    assert leaks == []
    assert "<redacted>" in str(failed.value)


def test_scrub_covers_json_escapes_at_any_depth_and_url_encoding() -> None:
    key = 'k/e+y "\\ é😀-SEKRET'
    for written in (
        json.dumps(key),
        json.dumps(key, ensure_ascii=False),
        json.dumps(json.dumps(json.dumps(key))),
        quote(key, safe=""),
        quote_plus(key),
    ):
        assert "SEKRET" not in scrub(written, (key,)), written
    assert scrub_json({"a": [key, {key: 1}]}, (key,)) == {"a": ["<redacted>", {"<redacted>": 1}]}
