"""The Bot API client's boundary: every HTTP outcome becomes one TelegramError subclass, without the token."""

from __future__ import annotations

import contextlib

import httpx
import pytest

from ishiki_channel_telegram import (
    BotAPI,
    TelegramAuthError,
    TelegramBadRequest,
    TelegramConflict,
    TelegramForbidden,
    TelegramRateLimited,
    TelegramUnavailable,
)

pytestmark = pytest.mark.anyio

TOKEN = "123456:AAsecretSecretSecret"


@contextlib.asynccontextmanager
async def _api(handler):
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        yield BotAPI(TOKEN, "https://api.example", client=client)


def _envelope(status: int, description: str, **parameters) -> httpx.Response:
    body = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return httpx.Response(status, json=body)


@pytest.mark.parametrize(
    ("response", "error", "status"),
    [
        (_envelope(401, "Unauthorized"), TelegramAuthError, 401),
        (_envelope(404, "Not Found"), TelegramAuthError, 404),
        (_envelope(403, "Forbidden: bot was kicked from the group chat"), TelegramForbidden, 403),
        (_envelope(409, "Conflict: terminated by other getUpdates request"), TelegramConflict, 409),
        (_envelope(400, "Bad Request: chat not found"), TelegramBadRequest, 400),
        (_envelope(500, "Internal Server Error"), TelegramUnavailable, 500),
        (httpx.Response(502, text="<html>Bad Gateway</html>"), TelegramUnavailable, 502),
        (httpx.Response(200, text="not json"), TelegramBadRequest, 200),
        (httpx.Response(200, json={"ok": True}), TelegramBadRequest, 200),
    ],
)
async def test_status_mapping(response, error, status):
    async with _api(lambda request: response) as api:
        with pytest.raises(error) as caught:
            await api.call("sendMessage", {"chat_id": 1, "text": "x"})
    assert type(caught.value) is error
    assert caught.value.status == status
    assert caught.value.method == "sendMessage"


async def test_rate_limit_reads_retry_after():
    async with _api(lambda request: _envelope(429, "Too Many Requests: retry after 12", retry_after=12)) as api:
        with pytest.raises(TelegramRateLimited) as caught:
            await api.call("getUpdates")
    assert caught.value.retry_after == 12.0
    async with _api(lambda request: _envelope(429, "Too Many Requests")) as silent:
        with pytest.raises(TelegramRateLimited) as caught:
            await silent.call("getUpdates")
    assert caught.value.retry_after == 1.0


async def test_entities_refusal_is_recognised():
    async with _api(lambda request: _envelope(400, "Bad Request: can't parse entities: Unsupported tag")) as api:
        with pytest.raises(TelegramBadRequest) as caught:
            await api.call("sendMessage")
    assert caught.value.cannot_parse_entities


@pytest.mark.parametrize(
    ("exception", "sent"),
    [(httpx.ConnectError, False), (httpx.ConnectTimeout, False), (httpx.ReadError, True), (httpx.ReadTimeout, True)],
)
async def test_network_errors_say_whether_the_request_may_have_arrived(exception, sent):
    def fail(request):
        raise exception(f"trouble reaching {request.url}", request=request)

    async with _api(fail) as api:
        with pytest.raises(TelegramUnavailable) as caught:
            await api.call("sendMessage")
    assert caught.value.sent is sent
    assert "AAsecret" not in str(caught.value)
    assert "/bot<redacted>/sendMessage" in str(caught.value)


async def test_descriptions_are_scrubbed_of_the_token():
    async with _api(lambda request: _envelope(400, f"Bad Request: echo {request.url}")) as api:
        with pytest.raises(TelegramBadRequest) as caught:
            await api.call("sendMessage")
    assert "AAsecret" not in str(caught.value)
    assert "AAsecret" not in caught.value.description


async def test_download_limits_and_missing_files():
    def serve(request):
        if request.url.path.endswith("/big"):
            return httpx.Response(200, content=b"x" * 2048)
        return _envelope(404, "Not Found")

    async with _api(serve) as api:
        assert await api.download("big", 4096) == b"x" * 2048
        with pytest.raises(TelegramBadRequest, match="over 1000 bytes") as caught:
            await api.download("big", 1000)
        with pytest.raises(TelegramBadRequest) as missing:
            await api.download("gone", 1000)
    assert caught.value.description == "file is too big"
    assert missing.value.status == 404


async def test_a_given_client_is_left_open():
    async with httpx.AsyncClient() as client:
        given = BotAPI(TOKEN, client=client)
        await given.aclose()
        assert not client.is_closed
