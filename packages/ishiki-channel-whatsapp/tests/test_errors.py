"""Graph API refusals classified once, at the client boundary: what each means for retrying and for the channel."""

from __future__ import annotations

import httpx
import pytest

from ishiki_channel_whatsapp import (
    GraphAPI,
    WhatsAppAuthError,
    WhatsAppBadRequest,
    WhatsAppRateLimited,
    WhatsAppUnavailable,
    WhatsAppWindowClosed,
)
from ishiki_channel_whatsapp.cloud.graph import classify
from ishiki_channel_whatsapp.testing import DEFAULT_ACCESS_TOKEN, Fault

pytestmark = pytest.mark.anyio


def envelope(code, message="words", details=None):
    error = {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "x"}
    if details:
        error["error_data"] = {"messaging_product": "whatsapp", "details": details}
    return {"error": error}


@pytest.mark.parametrize(
    ("status", "code", "kind", "fatal"),
    [
        (401, 190, WhatsAppAuthError, True),
        (400, 190, WhatsAppAuthError, True),
        (401, None, WhatsAppAuthError, True),
        (400, 131047, WhatsAppWindowClosed, True),
        (400, 130429, WhatsAppRateLimited, False),
        (400, 131056, WhatsAppRateLimited, False),
        (400, 80007, WhatsAppRateLimited, False),
        (429, None, WhatsAppRateLimited, False),
        (500, None, WhatsAppUnavailable, False),
        (503, 2, WhatsAppUnavailable, False),
        (400, 131000, WhatsAppUnavailable, False),
        (400, 100, WhatsAppBadRequest, True),
        (400, 131026, WhatsAppBadRequest, True),
        (404, None, WhatsAppBadRequest, True),
    ],
)
def test_a_refusal_is_classified_by_its_code_then_its_status(status, code, kind, fatal):
    error = classify("send message", status, envelope(code) if code is not None else {})
    assert type(error) is kind
    assert (error.status, error.code, error.fatal) == (status, code, fatal)


def test_the_error_says_meta_s_details_and_its_code():
    error = classify("send message", 400, envelope(131047, "Re-engagement message", "Message failed to send"))
    assert str(error) == "send message: Message failed to send (code 131047)"
    assert error.details == "Message failed to send"
    assert str(classify("phone number", 502, {})) == "phone number: HTTP 502"


async def test_an_unreachable_graph_api_is_unavailable_and_certainly_not_sent():
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = GraphAPI("token", f"http://127.0.0.1:{port}", "v23.0")
    try:
        with pytest.raises(WhatsAppUnavailable) as caught:
            await api.get("123", what="phone number")
    finally:
        await api.aclose()
    assert caught.value.sent is False
    assert caught.value.fatal is False


async def test_a_cut_connection_is_unavailable_and_may_have_been_sent(whatsapp_graph):
    whatsapp_graph.fail("messages", Fault.cut_connection())
    api = GraphAPI(DEFAULT_ACCESS_TOKEN, whatsapp_graph.url, "v23.0")
    try:
        with pytest.raises(WhatsAppUnavailable) as caught:
            await api.post(f"{whatsapp_graph.phone_number_id}/messages", {"messaging_product": "whatsapp"}, what="x")
    finally:
        await api.aclose()
    assert caught.value.sent is True


async def test_the_token_travels_in_the_authorization_header_never_in_a_url(whatsapp_graph):
    api = GraphAPI(DEFAULT_ACCESS_TOKEN, whatsapp_graph.url, "v23.0")
    try:
        await api.get(whatsapp_graph.phone_number_id, {"fields": "display_phone_number"}, what="phone number")
    finally:
        await api.aclose()
    assert whatsapp_graph.calls[-1].status == 200
    assert all(DEFAULT_ACCESS_TOKEN not in call.path for call in whatsapp_graph.calls)


async def test_a_wrong_token_is_an_auth_error(whatsapp_graph):
    api = GraphAPI("EAAwrong", whatsapp_graph.url, "v23.0")
    try:
        with pytest.raises(WhatsAppAuthError, match="code 190"):
            await api.get(whatsapp_graph.phone_number_id, what="phone number")
    finally:
        await api.aclose()


async def test_the_token_is_never_sent_to_a_plain_http_media_url_from_an_https_graph():
    transport = httpx.MockTransport(lambda request: pytest.fail("no request may leave"))
    async with httpx.AsyncClient(transport=transport) as client:
        api = GraphAPI("token", "https://graph.facebook.com", "v23.0", client=client)
        with pytest.raises(WhatsAppBadRequest, match="not HTTPS"):
            await api.download("http://lookaside.example/media", 1000)
