"""Forward mode against the fake implementation: the channel connects with the token, learns who it is, takes
events in order, answers actions on the same link, and reconnects after a dropped or silent link."""

from __future__ import annotations

import pytest

from ishiki_channel_onebot.errors import OneBotAuthError
from ishiki_channel_onebot.testing import at, running, text

pytestmark = pytest.mark.anyio

ALICE = 20001


async def test_a_private_message_is_dispatched_and_the_reply_goes_back_on_the_link(
    onebot, onebot_host, onebot_connection
):
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        assert connection.sid == "onebot:10001"
        frame = await onebot.push_private(ALICE, "hello there", nickname="Alice")
        (event,) = await onebot_host.wait_for_events(1)
        result = await connection.send(event.channel_id, "Hi **Alice**!", reply_to=event.message_id)
    assert (event.channel_id, event.user.id, event.user.name, event.content) == (
        f"private:{ALICE}",
        str(ALICE),
        "Alice",
        "hello there",
    )
    assert event.message_id == str(frame["message_id"])
    (sent,) = onebot.sent
    assert (sent.message_type, sent.target, sent.text) == ("private", ALICE, "Hi Alice!")
    assert sent.of_type("reply")[0].get("id") == event.message_id
    assert result.ids == (str(sent.message_id),)
    assert onebot.calls[0].action == "get_login_info"


async def test_events_arrive_in_order_and_its_own_echo_is_dropped_by_message_id(onebot, onebot_host, onebot_connection):
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        result = await connection.send("group:300", "I said this")
        echo = {"message_id": int(result.ids[0])}
        for n in range(5):
            await onebot.push_group(300, 20000 + n, f"message {n}")
        await onebot.push_group(300, onebot.self_id, "I said this", **echo)
        await onebot.push_group(300, 29999, [at(onebot.self_id), text(" are you there?")], card="Carol")
        events = await onebot_host.wait_for_events(6)
        await connection.settled()
        status = connection.status()
    assert [e.content for e in events] == [*(f"message {n}" for n in range(5)), f"@{onebot.self_id} are you there?"]
    assert [e.mentions_self for e in events] == [False] * 5 + [True]
    assert events[-1].user.name == "Carol"
    assert events[0].extra["mentionRequired"] is True
    assert status["own"] == 1
    assert status["taken"] == 6


async def test_a_refused_token_ends_the_run_with_a_passing_auth_error(onebot, onebot_connection):
    connection = onebot_connection(access_token="not-the-token")
    with pytest.raises(OneBotAuthError, match="refused the access token \\(HTTP 401\\)") as refused:
        async with running(connection):
            pass
    assert refused.value.fatal is False
    assert "not-the-token" not in str(refused.value)
    assert onebot.refused == 1


async def test_a_dropped_link_is_reconnected_and_actions_meanwhile_fail_at_once(
    onebot, onebot_host, onebot_connection, fake_clock
):
    connection = onebot_connection(self_id=str(onebot.self_id))
    async with running(connection):
        await connection.linked()
        await fake_clock.advance(2.0)  # a link that was up for a while: the next attempt goes at once
        await onebot.drop_links()
        await onebot.until(lambda: onebot.connections == 2)
        await connection.linked()
        await onebot.push_private(ALICE, "after the drop")
        (event,) = await onebot_host.wait_for_events(1)
        status = connection.status()
    assert event.content == "after the drop"
    assert status["connects"] == 2
    assert status["link"] == "up"


async def test_sending_without_a_link_is_an_error_result_not_a_hang(onebot, onebot_connection, wake_sleeper):
    connection = onebot_connection(self_id=str(onebot.self_id), url="ws://127.0.0.1:9/")
    async with running(connection):
        result = await connection.send("private:1", "anyone?")
        await wake_sleeper()  # the reconnect back-off waits on the host's clock
    assert result.error is not None
    assert "no link" in result.error
    assert connection.status()["link"] == "down"


async def test_a_silent_link_is_taken_for_dead_after_its_heartbeats_stop(
    onebot, onebot_host, onebot_connection, fake_clock
):
    connection = onebot_connection(self_id=str(onebot.self_id), heartbeat_misses=2)
    async with running(connection):
        await connection.linked()
        await onebot.heartbeat(interval_ms=5000)
        await connection.heard_heartbeat()
        onebot.silence()
        await fake_clock.advance(10.0)
        await onebot.until(lambda: onebot.connections == 2)
        await connection.linked()
    assert connection.status()["connects"] == 2
