"""Reverse WebSocket and HTTP modes: the implementation connects (or posts) to the host's ingress with the access
token; without it, it is refused and counted; events and actions then flow as in forward mode."""

from __future__ import annotations

import httpx
import pytest
from ishiki_host.errors import ChannelUnavailable

from ishiki_channel_onebot.testing import private_message, running

pytestmark = pytest.mark.anyio

ALICE = 20001


def ws(url: str) -> str:
    return "ws" + url.removeprefix("http")


async def test_reverse_the_implementation_connects_with_the_token_and_both_directions_work(
    onebot, onebot_host, onebot_connection
):
    connection = onebot_connection(mode="reverse")
    async with running(connection):
        await onebot.connect_reverse(ws(connection.status()["url"]))
        await connection.linked()
        await onebot.push_private(ALICE, "hi over reverse")
        (event,) = await onebot_host.wait_for_events(1)
        result = await connection.send(event.channel_id, "hello back")
    assert event.content == "hi over reverse"
    assert event.self_id == str(onebot.self_id)
    assert result.ok
    assert [m.text for m in onebot.sent] == ["hello back"]


async def test_reverse_a_wrong_token_is_refused_with_401_and_counted(onebot, onebot_host, onebot_connection, caplog):
    connection = onebot_connection(mode="reverse")
    async with running(connection):
        url = ws(connection.status()["url"])
        await onebot.connect_reverse(url, token="wrong")
        await onebot.until(lambda: onebot.refused >= 2)
        status = connection.status()
    assert status["refused"] >= 2
    assert status["link"] != "up"
    assert "without the access token" in status["lastRefusal"]
    refusals = [r for r in caplog.records if "refused a connection" in r.getMessage() and r.levelname == "WARNING"]
    assert len(refusals) == 1  # once per burst; the others at debug level
    assert "wrong" not in refusals[0].getMessage()


async def test_reverse_a_connection_for_another_bot_is_refused(onebot, onebot_connection):
    connection = onebot_connection(mode="reverse")
    async with running(connection):
        await onebot.connect_reverse(ws(connection.status()["url"]), self_id=99999)
        await onebot.until(lambda: onebot.refused >= 1)
    assert "for bot 99999" in connection.status()["lastRefusal"]


async def test_http_an_event_is_answered_204_once_durable_and_503_when_the_host_cannot_take_it(
    onebot, onebot_host, onebot_connection
):
    connection = onebot_connection(mode="http")
    async with running(connection):
        onebot.post_events_to(connection.status()["url"])
        onebot_host.fail_next(ChannelUnavailable("stopping"))
        frame = await onebot.push_private(ALICE, "over http")
        assert onebot.posts == [503]
        await onebot.push(frame)  # posted again, as the implementation retries
        assert onebot.posts == [503, 204]
        await onebot.push(frame)  # and once more: a repeat, not dispatched twice
        result = await connection.send(f"private:{ALICE}", "answer over the HTTP API")
    assert onebot.posts == [503, 204, 204]
    assert [e.content for e in onebot_host.events] == ["over http"]
    assert connection.status()["repeats"] == 1
    assert result.ok
    assert onebot.calls[-1].via == "http"


async def test_http_a_post_without_the_token_or_not_json_is_refused(onebot, onebot_host, onebot_connection):
    connection = onebot_connection(mode="http")
    async with running(connection), httpx.AsyncClient() as client:
        url = connection.status()["url"]
        body = private_message(onebot.self_id, ALICE, "let me in")
        unsigned = await client.post(url, json=body)
        garbage = await client.post(url, content=b"{nope", headers={"Authorization": f"Bearer {onebot.access_token}"})
        signed = await client.post(url, json=body, params={"access_token": onebot.access_token})
    assert (unsigned.status_code, garbage.status_code, signed.status_code) == (401, 400, 204)
    assert [e.content for e in onebot_host.events] == ["let me in"]
    assert connection.status()["malformed"] == 1
