"""A poison update (one the host fails on every time) is set aside after its tries, and later updates flow."""

from __future__ import annotations

import json
import logging

import pytest
from ishiki_host.errors import ChannelUnavailable, EventRejected, HostConfigInvalid

from ishiki_channel_telegram import TelegramAccount
from ishiki_channel_telegram.testing import DEFAULT_TOKEN, private_chat, running, user

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice")
POISON = "the message the host chokes on"


def _poison(event):
    if event.content == POISON:
        raise RuntimeError("the host cannot take this one")


def _offset_file(host):
    return json.loads((host.state_dir / "telegram-offset.json").read_text())


def _set_aside_file(host):
    lines = (host.state_dir / "telegram-set-aside.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _set_aside_logs(caplog):
    return [r for r in caplog.records if "set aside" in r.getMessage()]


async def test_a_poison_update_is_set_aside_after_its_tries_and_later_updates_flow(
    telegram_server, telegram_host, telegram_connection, wake_sleeper, caplog
):
    telegram_host.on_dispatch = _poison
    poison = telegram_server.push_message(private_chat(ALICE), POISON)
    telegram_server.push_message(private_chat(ALICE), "one")
    telegram_server.push_message(private_chat(ALICE), "two")
    connection = telegram_connection()
    async with running(connection):
        for _ in range(2):  # the first and second tries failed: back-off, then try again
            await wake_sleeper()
        events = await telegram_host.wait_for_events(2)
        await telegram_server.until(lambda: telegram_server.pending == [])
        status = connection.status()
    assert [e.content for e in events] == ["one", "two"]
    assert telegram_host.dispatch_calls == 3 + 2
    (logged,) = _set_aside_logs(caplog)
    assert logged.levelno == logging.ERROR
    assert "set aside update 500000: 3 tries failed" in logged.getMessage()
    assert "RuntimeError: the host cannot take this one" in logged.getMessage()
    assert status["setAside"] == 1
    assert status["lastSetAside"]["updateId"] == 500_000
    assert status["failing"] is None
    assert _offset_file(telegram_host) == {"botId": telegram_server.bot["id"], "offset": 500_003, "setAside": 1}
    (kept,) = _set_aside_file(telegram_host)
    assert kept["updateId"] == 500_000
    assert kept["update"]["message"] == poison
    assert "3 tries failed" in kept["why"]


async def test_the_tries_of_a_poison_update_are_counted_across_restarts(
    telegram_server, telegram_host, telegram_connection, wake_sleeper, sleeping
):
    telegram_host.on_dispatch = _poison
    telegram_server.push_message(private_chat(ALICE), POISON)
    telegram_server.push_message(private_chat(ALICE), "after it")
    async with running(telegram_connection()):
        await sleeping()  # the first try failed
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_002)  # polling goes on
    saved = _offset_file(telegram_host)
    assert saved["failing"] == {"updateId": 500_000, "tries": 1}
    assert [update["message"]["text"] for update in saved["held"]] == [POISON, "after it"]  # Telegram forgot them

    connection = telegram_connection()  # a restart: the count goes on from the file
    async with running(connection):
        await wake_sleeper()  # the second try failed; the third is the last
        (event,) = await telegram_host.wait_for_events(1)
        await telegram_server.until(lambda: telegram_server.pending == [])
    assert event.content == "after it"
    assert telegram_host.dispatch_calls == 3 + 1
    assert connection.status()["setAside"] == 1

    telegram_server.push_message(private_chat(ALICE), "later")
    async with running(connection):  # and once set aside it is gone: not tried again, still counted
        await telegram_host.wait_for_events(2)
    assert telegram_host.dispatch_calls == 3 + 2
    assert connection.status()["setAside"] == 1


async def test_an_update_the_host_rejects_is_set_aside_at_once(
    telegram_server, telegram_host, telegram_connection, fake_clock, caplog
):
    def reject(event):
        if event.content == POISON:
            raise EventRejected("no runtime will ever take it")

    telegram_host.on_dispatch = reject
    telegram_server.push_message(private_chat(ALICE), POISON)
    telegram_server.push_message(private_chat(ALICE), "one")
    async with running(telegram_connection()):
        (event,) = await telegram_host.wait_for_events(1)
    assert event.content == "one"
    assert telegram_host.dispatch_calls == 2
    assert fake_clock.sleepers == 0  # no back-off: retrying cannot help
    (logged,) = _set_aside_logs(caplog)
    assert "the host rejected it (no runtime will ever take it)" in logged.getMessage()


async def test_a_failure_the_host_calls_passing_is_retried_without_counting(
    telegram_server, telegram_host, telegram_connection, wake_sleeper, caplog
):
    telegram_host.fail_next(*[ChannelUnavailable("the host is stopping; the event was not taken")] * 4)
    telegram_server.push_message(private_chat(ALICE), "patience")
    async with running(telegram_connection(update_tries=2)):
        for _ in range(4):
            await wake_sleeper()
        (event,) = await telegram_host.wait_for_events(1)
    assert event.content == "patience"
    assert _set_aside_logs(caplog) == []
    retries = [r.getMessage() for r in caplog.records if "dispatching update 500000 failed" in r.getMessage()]
    assert len(retries) == 4
    assert all("the host cannot take input for now" in message for message in retries)


async def test_a_malformed_update_is_set_aside_and_counted(telegram_server, telegram_host, telegram_connection):
    malformed = telegram_server.push_update({"message": {"chat": "not a chat", "message_id": 5}})
    telegram_server.push_message(private_chat(ALICE), "fine")
    connection = telegram_connection()
    async with running(connection):
        await telegram_host.wait_for_events(1)
        await telegram_server.until(lambda: telegram_server.pending == [])
        assert connection.status()["setAside"] == 1
    (kept,) = _set_aside_file(telegram_host)
    assert kept["updateId"] == malformed
    assert kept["why"].startswith("malformed update: ")


@pytest.mark.parametrize("tries", [0, 101, "3", True])
def test_update_tries_out_of_range_is_a_config_error_naming_the_key(tries):
    with pytest.raises(HostConfigInvalid, match=r"channels\.telegram\.accounts\[\]\.update_tries"):
        TelegramAccount.from_config({"token": DEFAULT_TOKEN, "update_tries": tries})
