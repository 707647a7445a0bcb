"""A provider's answer is scrubbed of the credentials its request carried, streamed or not, before anything
(error classification, its log line, the fact log) reads it."""

from __future__ import annotations

from typing import Any

import pytest

from ishiki_host.config.models import ModelsConfig
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.errors import ModelAuthError, ModelBadRequest
from ishiki_host.gateway import Gateway
from ishiki_host.gateway.providers._http import scrub, secrets_of
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
