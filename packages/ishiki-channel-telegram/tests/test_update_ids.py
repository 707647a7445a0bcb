"""Update ids as the Bot API has them: the offset is the last id received + 1, ids may go backwards (Telegram
renumbers at random after a week without updates), and a repeat is recognised by its id."""

from __future__ import annotations

import json
import logging

import anyio
import pytest

from ishiki_channel_telegram.testing import RecordingHost, private_chat, running, user

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice")


def _polls(server):
    return [call.params.get("offset") for call in server.calls if call.method == "getUpdates"]


def _resets(caplog):
    return [r.getMessage() for r in caplog.records if "went backwards" in r.getMessage()]


async def test_ids_that_go_backwards_after_a_long_pause_are_followed(
    telegram_server, telegram_host, telegram_connection, caplog
):
    async with running(telegram_connection()):
        telegram_server.push_message(private_chat(ALICE), "before the pause")
        await telegram_host.wait_for_events(1)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_001)
        telegram_server.renumber(1_000)  # a week later: the next id is chosen at random, far below
        telegram_server.push_message(private_chat(ALICE), "a week later")
        telegram_server.push_message(private_chat(ALICE), "and again")
        events = await telegram_host.wait_for_events(3)
        await telegram_server.until(lambda: telegram_server.polling_offset == 1_002)  # last id received + 1
    assert [e.content for e in events] == ["before the pause", "a week later", "and again"]
    assert [e.extra["updateId"] for e in events] == [500_000, 1_000, 1_001]
    assert telegram_server.pending == []
    (reset,) = _resets(caplog)  # logged once, as a warning
    assert "update 1000, after 500000" in reset
    assert "Telegram renumbers updates after a long pause" in reset


async def test_a_restart_after_the_pause_follows_the_new_numbering_from_the_saved_offset(
    telegram_server, telegram_host, telegram_connection, caplog
):
    telegram_server.push_message(private_chat(ALICE), "before the pause")
    async with running(telegram_connection()):
        await telegram_host.wait_for_events(1)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_001)
    telegram_server.renumber(77)
    telegram_server.push_message(private_chat(ALICE), "while the bot was down")
    connection = telegram_connection()
    async with running(connection):
        events = await telegram_host.wait_for_events(2)
        await telegram_server.until(lambda: telegram_server.polling_offset == 78)
        await connection.settled()
    assert events[-1].content == "while the bot was down"
    assert _polls(telegram_server)[1] == 500_001  # it asked from the saved offset, and was given id 77
    assert len(_resets(caplog)) == 1
    saved = json.loads((telegram_host.state_dir / "telegram-offset.json").read_text())
    assert saved["offset"] == 78


async def test_a_repeat_is_recognised_by_its_id_whatever_the_offset(
    telegram_server, tmp_path, telegram_connection, fake_clock, caplog
):
    caplog.set_level(logging.DEBUG, logger="ishiki.channel.test")
    host = RecordingHost(tmp_path / "state", clock=fake_clock)
    first = telegram_server.push_message(private_chat(ALICE), "once")
    (update,) = telegram_server.pending
    telegram_server.updates.append(dict(update))  # Telegram sends it twice in one batch
    telegram_server.push_message(private_chat(ALICE), "twice")
    async with running(telegram_connection(host=host)):
        await host.wait_for_events(2)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_002)
    assert [e.content for e in host.events] == ["once", "twice"]
    assert host.dispatch_calls == 2
    assert any(f"update {update['update_id']} came again" in r.getMessage() for r in caplog.records)
    assert _resets(caplog) == []
    assert first["message_id"] == 1


async def test_the_fake_keeps_sending_a_renumbered_update_to_a_stale_offset(telegram_server):
    """The rule the tests above rely on: an offset from the old numbering confirms none of the new updates."""
    import httpx

    telegram_server.push_message(private_chat(ALICE), "old")
    telegram_server.renumber(10)
    telegram_server.push_message(private_chat(ALICE), "new")
    url = f"{telegram_server.url}/bot{telegram_server.token}/getUpdates"
    async with httpx.AsyncClient() as client:
        stale = [(await client.post(url, json={"offset": 500_001})).json()["result"] for _ in range(2)]
        fresh = (await client.post(url, json={"offset": 11})).json()["result"]
    assert [[u["update_id"] for u in batch] for batch in stale] == [[10], [10]]
    assert fresh == []
    with anyio.fail_after(1):
        await telegram_server.until(lambda: telegram_server.pending == [])
