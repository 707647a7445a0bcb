"""The test kit itself: the fake Graph API answers as Meta does, and the driver signs as Meta does."""

from __future__ import annotations

import httpx
import pytest

from ishiki_channel_whatsapp import verify
from ishiki_channel_whatsapp.testing import DEFAULT_APP_SECRET, SIGNED, Fault, WebhookDriver

pytestmark = pytest.mark.anyio


@pytest.fixture
async def graph_client(whatsapp_graph):
    headers = {"Authorization": f"Bearer {whatsapp_graph.token}"}
    async with httpx.AsyncClient(base_url=f"{whatsapp_graph.url}/v23.0", headers=headers) as client:
        yield client


def messages_path(graph):
    return f"/{graph.phone_number_id}/messages"


async def test_every_call_needs_the_bearer_token(whatsapp_graph):
    async with httpx.AsyncClient(base_url=whatsapp_graph.url) as client:
        answer = await client.get(f"/v23.0/{whatsapp_graph.phone_number_id}")
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == 190


async def test_a_text_over_4096_characters_is_refused_as_meta_does(whatsapp_graph, graph_client):
    body = {"messaging_product": "whatsapp", "to": "4915112345678", "type": "text", "text": {"body": "x" * 4097}}
    answer = await graph_client.post(messages_path(whatsapp_graph), json=body)
    assert answer.status_code == 400
    assert "at most 4096 characters" in answer.json()["error"]["message"]
    assert whatsapp_graph.sent == []


async def test_a_closed_window_refuses_text_but_takes_a_template(whatsapp_graph, graph_client):
    whatsapp_graph.closed_windows.add("4915112345678")
    text = {"messaging_product": "whatsapp", "to": "4915112345678", "type": "text", "text": {"body": "hi"}}
    template = {**text, "type": "template", "template": {"name": "hello", "language": {"code": "en_US"}}}
    refused = await graph_client.post(messages_path(whatsapp_graph), json=text)
    taken = await graph_client.post(messages_path(whatsapp_graph), json=template)
    assert refused.json()["error"]["code"] == 131047
    assert taken.json()["messages"][0]["id"].startswith("wamid.")


async def test_media_round_trip_and_the_download_needs_the_token(whatsapp_graph, graph_client):
    files = {"file": ("tea.png", b"\x89PNG", "image/png")}
    uploaded = await graph_client.post(
        f"/{whatsapp_graph.phone_number_id}/media",
        data={"messaging_product": "whatsapp", "type": "image/png"},
        files=files,
    )
    media_id = uploaded.json()["id"]
    info = (await graph_client.get(f"/{media_id}")).json()
    assert (info["mime_type"], info["file_size"]) == ("image/png", 4)
    async with httpx.AsyncClient() as bare:
        assert (await bare.get(info["url"])).status_code == 401
    assert (await graph_client.get(info["url"])).content == b"\x89PNG"


async def test_faults_are_answered_in_order_then_calls_succeed(whatsapp_graph, graph_client):
    whatsapp_graph.fail("phone", Fault.rate_limited(), None, Fault.server_error(502))
    path = f"/{whatsapp_graph.phone_number_id}"
    statuses = [(await graph_client.get(path)).status_code for _ in range(4)]
    assert statuses == [400, 200, 502, 200]
    whatsapp_graph.fail("phone", Fault.cut_connection())
    with pytest.raises(httpx.RemoteProtocolError):
        await graph_client.get(path)
    assert whatsapp_graph.calls[-1].status is None


async def test_an_unknown_object_gets_meta_s_words(graph_client):
    answer = await graph_client.get("/555")
    assert answer.json()["error"]["code"] == 100
    assert "does not exist" in answer.json()["error"]["message"]


async def test_the_driver_signs_the_exact_bytes_it_posts():
    seen = []

    def record(request):
        seen.append(request)
        return httpx.Response(200)

    async with httpx.AsyncClient(transport=httpx.MockTransport(record)) as client:
        driver = WebhookDriver("http://127.0.0.1:9/hook", client=client)
        await driver.text("4915112345678", "hi")
        await driver.post(b"{}", signature=None)
        await driver.post(b"{}", signature="sha256=00")
    signed, unsigned, wrong = seen
    assert verify(signed.content, signed.headers["x-hub-signature-256"], DEFAULT_APP_SECRET)
    assert "x-hub-signature-256" not in unsigned.headers
    assert wrong.headers["x-hub-signature-256"] == "sha256=00"
    assert SIGNED == "signed"
