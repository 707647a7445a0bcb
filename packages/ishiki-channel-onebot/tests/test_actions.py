"""Actions: answers found by echo among events and other answers, failures with their retcode, an action that
never answers ended by its deadline (the turn's send gets an error result), a malformed frame that leaves the
link up."""

from __future__ import annotations

import anyio
import pytest

from ishiki_channel_onebot.errors import OneBotActionFailed, OneBotTimeout
from ishiki_channel_onebot.testing import running

pytestmark = pytest.mark.anyio


async def test_answers_are_matched_by_echo_while_events_and_other_answers_pass(onebot, onebot_host, onebot_connection):
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        onebot.slow("get_status", 0.2)
        async with anyio.create_task_group() as tg:
            answers: dict[str, object] = {}

            async def call(action: str) -> None:
                answers[action] = await connection.actions.call(action)

            tg.start_soon(call, "get_status")
            await onebot.until(lambda: onebot.count("get_status") == 1)
            tg.start_soon(call, "get_version_info")
            await onebot.push_private(20001, "in between")
    assert answers == {
        "get_status": {"online": True, "good": True},
        "get_version_info": {"app_name": "ishiki-fake-onebot", "protocol_version": "v11"},
    }
    assert [e.content for e in onebot_host.events] == ["in between"]


async def test_a_failed_action_says_its_retcode_and_a_send_becomes_an_error_result(onebot, onebot_connection):
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        onebot.fail("get_msg", 1404, "message not found")
        with pytest.raises(OneBotActionFailed) as failed:
            await connection.actions.call("get_msg", {"message_id": 1})
        onebot.fail("send_group_msg", 120, "muted")
        result = await connection.send("group:300", "first\n\n" + "x" * 10)
    assert (failed.value.retcode, failed.value.wording) == (1404, "message not found")
    assert result.ids == ()
    assert "retcode 120: muted" in (result.error or "")


async def test_an_action_that_never_answers_ends_at_its_deadline(onebot, onebot_connection, fake_clock):
    connection = onebot_connection(action_timeout=5)
    async with running(connection):
        await connection.linked()
        onebot.hang("send_private_msg")
        async with anyio.create_task_group() as tg:
            outcome = {}

            async def send() -> None:
                outcome["result"] = await connection.send("private:20001", "hello?")

            tg.start_soon(send)
            await onebot.until(lambda: onebot.count("send_private_msg") == 1)
            with anyio.fail_after(5):
                await fake_clock.wait_for_sleepers(1)  # the deadline's watchdog
            await fake_clock.advance(5.0)
        onebot.hang("get_status")
        async with anyio.create_task_group() as tg:

            async def status() -> None:
                with pytest.raises(OneBotTimeout, match="get_status had no answer within 2 s"):
                    await connection.actions.call("get_status", deadline=2.0)

            tg.start_soon(status)
            with anyio.fail_after(5):
                await fake_clock.wait_for_sleepers(1)
            await fake_clock.advance(2.0)
    assert "had no answer within 5 s" in (outcome["result"].error or "")


async def test_a_malformed_frame_is_logged_once_and_the_link_survives(
    onebot, onebot_host, onebot_connection, caplog, fake_clock
):
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        await onebot.push_raw("{not json")
        await onebot.push_raw("[1, 2]")
        await onebot.push_private(20001, "still here")
        await onebot_host.wait_for_events(1)
        assert connection.status()["connects"] == 1  # the same link all along
        await fake_clock.advance(2.0)
        await onebot.drop_links()
        await onebot.until(lambda: onebot.connections == 2)
        status = connection.status()
    warnings = [r for r in caplog.records if "a frame is" in r.getMessage() and r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert status["malformed"] == 2
    assert [e.content for e in onebot_host.events] == ["still here"]


async def test_the_api_recalls_a_message_and_reads_one_back(onebot, onebot_connection):
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        sent = await connection.send("group:300", "oops")
        api = connection.api
        assert api is not None
        found = await api.get_msg(sent.ids[0])
        await api.delete_msg(sent.ids[0])
        with pytest.raises(OneBotActionFailed):
            await api.delete_msg("424242")
        me = await api.get_login_info()
    assert found["message"] == [{"type": "text", "data": {"text": "oops"}}]
    assert onebot.deleted == [int(sent.ids[0])]
    assert me == {"user_id": onebot.self_id, "nickname": "Ishiki"}
