"""Polling: nothing lost, nothing handled twice, restarts resume, and every failure mode of the Bot API."""

from __future__ import annotations

import json
import logging

import anyio
import pytest

from ishiki_channel_telegram import TelegramAuthError, TelegramUnavailable
from ishiki_channel_telegram.testing import Fault, RecordingHost, private_chat, running, user

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice")


def _push(server, *texts):
    return [server.push_message(private_chat(ALICE), text) for text in texts]


def _offset_file(host):
    return json.loads((host.state_dir / "telegram-offset.json").read_text())


def _poll_offsets(server):
    return [call.params.get("offset") for call in server.calls if call.method == "getUpdates"]


async def test_offset_moves_only_after_dispatch_returned(telegram_server, telegram_host, telegram_connection):
    seen = []

    def check(event):
        update_id = event.extra["updateId"]
        saved = _offset_file(telegram_host) if (telegram_host.state_dir / "telegram-offset.json").exists() else {}
        held = [update["update_id"] for update in saved.get("held", [])]
        asked = max(filter(None, [*_poll_offsets(telegram_server), telegram_server.polling_offset]), default=0)
        seen.append((update_id, saved.get("offset"), asked, held))

    telegram_host.on_recorded = check
    _push(telegram_server, "one", "two", "three")
    connection = telegram_connection()
    async with running(connection):
        await telegram_host.wait_for_events(3)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_003)
        await connection.settled()  # the poll asks past updates still being dispatched: wait for them
    # While each update was being recorded, the saved offset had not moved past it, and a poll asking past it
    # (Telegram then forgets it) had come only once the state file held it whole.
    assert all(saved is None or saved <= update_id for update_id, saved, _, _ in seen)
    assert all(asked <= update_id or update_id in held for update_id, _, asked, held in seen)
    assert _offset_file(telegram_host) == {"botId": telegram_server.bot["id"], "offset": 500_003}
    assert telegram_server.pending == []


async def test_a_failed_dispatch_is_retried_not_lost(telegram_server, telegram_host, telegram_connection, fake_clock):
    telegram_host.fail_next(OSError(28, "No space left on device"))
    _push(telegram_server, "one", "two")
    async with running(telegram_connection()):
        await fake_clock.wait_for_sleepers(1)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_002)  # polling goes on
        assert telegram_host.events == []
        saved = _offset_file(telegram_host)  # Telegram forgot both: the file holds them, nothing is confirmed
        assert (saved["offset"], [u["message"]["text"] for u in saved["held"]]) == (None, ["one", "two"])
        await fake_clock.advance(fake_clock.next_deadline() - fake_clock.now())
        events = await telegram_host.wait_for_events(2)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_002)
    assert [e.content for e in events] == ["one", "two"]
    assert telegram_host.dispatch_calls == 3


async def test_restart_after_a_crash_before_durable_resumes_without_duplicates(
    telegram_server, telegram_host, telegram_connection
):
    _push(telegram_server, "one", "two", "three")  # fetched in one batch: Telegram still holds all three
    connection = telegram_connection()
    async with running(connection) as crashed:

        def crash_on_two(event):
            if event.content == "two":
                crashed.cancel()

        telegram_host.on_dispatch = crash_on_two
        await telegram_host.until(lambda: telegram_host.dispatch_calls == 2)
    assert [e.content for e in telegram_host.events] == ["one"]
    saved = _offset_file(telegram_host)
    assert saved["offset"] == 500_001
    # Polling may have asked past them already (Telegram then forgot them): the file holds them whole.
    assert [update["message"]["text"] for update in saved["held"]] == ["two", "three"]

    telegram_host.on_dispatch = None
    async with running(connection):  # the host restarts the same connection
        await telegram_host.wait_for_events(3)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_003)
        await connection.settled()
    assert [e.content for e in telegram_host.events] == ["one", "two", "three"]
    assert telegram_host.dispatch_calls == 4  # "two" again, "three"; never "one" twice
    assert _offset_file(telegram_host) == {"botId": telegram_server.bot["id"], "offset": 500_003}


async def test_crash_between_durable_and_confirmed_redelivers_the_same_update(
    telegram_server, tmp_path, telegram_connection, fake_clock
):
    host = RecordingHost(tmp_path / "state", clock=fake_clock, dedupe=True)
    _push(telegram_server, "one", "two")
    async with running(telegram_connection(host=host)) as crashed:
        host.on_recorded = lambda event: crashed.cancel() if event.content == "two" else None
        await host.until(lambda: len(host.events) == 2)
    assert _offset_file(host)["offset"] == 500_001

    host.on_recorded = None
    async with running(telegram_connection(host=host)):
        await host.until(lambda: len(host.duplicates) == 1)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_002)
    # Telegram sent "two" again; it carries the same identity, so the host recognised it.
    (repeat,) = host.duplicates
    assert repeat == host.events[1]
    assert repeat.extra["updateId"] == 500_001
    assert [e.content for e in host.events] == ["one", "two"]


async def test_saved_offset_of_another_bot_or_a_corrupt_file_is_not_used(
    telegram_server, telegram_host, telegram_connection, caplog
):
    state = telegram_host.state_dir
    state.mkdir(parents=True)
    (state / "telegram-offset.json").write_text(json.dumps({"botId": 1, "offset": 999_999}))
    _push(telegram_server, "one")
    async with running(telegram_connection()):
        await telegram_host.wait_for_events(1)
        await telegram_server.until(lambda: telegram_server.confirmed == 500_001)  # Telegram knows
    assert _poll_offsets(telegram_server)[0] is None
    assert "belongs to bot 1" in caplog.text

    (state / "telegram-offset.json").write_text("{torn")
    async with running(telegram_connection()):
        _push(telegram_server, "two")
        await telegram_host.wait_for_events(2)
    assert (state / "telegram-offset.json.bad").read_text() == "{torn"
    assert [e.content for e in telegram_host.events] == ["one", "two"]

    (state / "telegram-offset.json").write_text("[" * 100_000)  # json.loads raised RecursionError: a crash loop
    async with running(telegram_connection()):
        _push(telegram_server, "three")
        await telegram_server.until(lambda: "three" in [e.content for e in telegram_host.events])
    assert "nested deeper than 64 levels" in caplog.text  # set aside; Telegram's offset is used, nothing is lost


async def test_an_unwritable_state_dir_is_logged_and_loses_nothing(
    tmp_path, telegram_server, telegram_connection, caplog
):
    (tmp_path / "a-file").write_text("not a directory")
    host = RecordingHost(tmp_path / "a-file" / "state")
    _push(telegram_server, "one", "two")
    async with running(telegram_connection(host=host)):
        await host.wait_for_events(2)
        await telegram_server.until(lambda: telegram_server.confirmed == 500_002)
    assert [e.content for e in host.events] == ["one", "two"]
    assert "could not save the telegram offset" in caplog.text


async def test_wrong_token_is_one_clear_error_at_start(telegram_server, telegram_host, telegram_connection, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = f"{telegram_server.bot['id']}:AAwrongSecretValue123"
    connection = telegram_connection(token=wrong, name="support bot")
    with pytest.raises(TelegramAuthError) as caught:
        async with running(connection):
            pytest.fail("a refused token must not report readiness")
    message = str(caught.value)
    assert message.startswith("telegram account 'support bot': the Bot API at http://127.0.0.1:")
    assert "refused the token (Unauthorized)" in message
    assert "AAwrongSecretValue123" not in message
    assert "AAwrongSecretValue123" not in caplog.text
    assert telegram_server.count("getMe") == 1


async def test_malformed_token_fails_without_a_request(telegram_server, telegram_connection):
    with pytest.raises(TelegramAuthError, match=r"account \(unnamed.*not of the form <bot id>:<secret>"):
        async with running(telegram_connection(token="not-a-token")):
            pass
    assert telegram_server.calls == []


async def test_a_token_revoked_while_running_stops_the_connection(telegram_server, telegram_host, telegram_connection):
    async def serve_until_revoked():
        async with running(telegram_connection()):
            _push(telegram_server, "one")
            await telegram_host.wait_for_events(1)
            telegram_server.token = f"{telegram_server.bot['id']}:rotated"
            await anyio.sleep_forever()

    with pytest.raises(TelegramAuthError, match="now refuses the token"):
        await serve_until_revoked()


async def test_conflict_is_reported_once_and_polling_resumes(
    telegram_server, telegram_host, telegram_connection, wake_sleeper, sleeping, caplog
):
    async with running(telegram_connection()):
        await telegram_server.until(lambda: telegram_server.polling)
        telegram_server.webhook_url = "https://example.com/hook"  # another program sets one while this bot polls
        telegram_server.push_message(private_chat(ALICE), "before the webhook")  # ends the long poll in progress
        await telegram_host.wait_for_events(1)
        for _ in range(3):
            await wake_sleeper()
        await sleeping()  # the fourth 409 came back
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1
        assert "a webhook is set for this bot" in errors[0]
        assert "another process polls" in errors[0]
        assert "use deleteWebhook" in errors[0]
        telegram_server.webhook_url = None
        _push(telegram_server, "after the webhook")
        await wake_sleeper()
        events = await telegram_host.wait_for_events(2)
    assert [e.content for e in events] == ["before the webhook", "after the webhook"]
    assert "polling resumed" in caplog.text
    assert telegram_server.count("deleteWebhook") == 0  # only a start deletes a webhook: this one was not ours


async def test_a_webhook_left_set_is_deleted_at_start_and_its_queued_updates_arrive(
    telegram_server, telegram_host, telegram_connection, caplog
):
    telegram_server.webhook_url = "https://bot.example.com/hooks/telegram/0"  # the account was in webhook mode
    _push(telegram_server, "queued for the webhook")
    async with running(telegram_connection()):
        (event,) = await telegram_host.wait_for_events(1)
        await telegram_server.until(lambda: telegram_server.pending == [])
    assert event.content == "queued for the webhook"
    assert telegram_server.webhook_url is None
    methods = [call.method for call in telegram_server.calls]
    assert methods[:4] == ["getMe", "getWebhookInfo", "deleteWebhook", "getUpdates"]
    deleted = next(call for call in telegram_server.calls if call.method == "deleteWebhook")
    assert deleted.params == {"drop_pending_updates": False}  # the queued updates are kept
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no 409 ever came
    assert "deleting the webhook set to https://bot.example.com/hooks/telegram/0" in caplog.text


async def test_429_on_polling_waits_retry_after(
    telegram_server, telegram_host, telegram_connection, fake_clock, sleeping
):
    telegram_server.fail("getUpdates", Fault.rate_limited(17))
    async with running(telegram_connection()):
        await sleeping()
        assert fake_clock.next_deadline() - fake_clock.now() == 17
        _push(telegram_server, "patience")
        await fake_clock.advance(16.9)
        assert telegram_server.count("getUpdates") == 1
        await fake_clock.advance(0.1)
        (event,) = await telegram_host.wait_for_events(1)
    assert event.content == "patience"


async def test_network_loss_for_minutes_backs_off_then_resumes(
    telegram_server, telegram_host, telegram_connection, wake_sleeper, sleeping, caplog
):
    async with running(telegram_connection()):
        await telegram_server.until(lambda: telegram_server.polling)
        telegram_server.offline = True  # cuts the poll in progress, then drops every request
        delays = [await wake_sleeper() for _ in range(12)]
        await sleeping()  # the request after the last wait failed too
        ceilings = [min(60.0, 2.0**n) for n in range(12)]
        assert all(ceiling / 2 <= delay < ceiling for delay, ceiling in zip(delays, ceilings, strict=True))
        assert sum(delays) > 240  # minutes without a network
        _push(telegram_server, "written during the outage")
        telegram_server.offline = False
        await wake_sleeper()
        (event,) = await telegram_host.wait_for_events(1)
    assert event.content == "written during the outage"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("cannot be reached" in w for w in warnings) == 1
    assert sum("polling resumed" in w for w in warnings) == 1


async def test_jitter_is_replayable_from_the_seed(telegram_server, telegram_connection, wake_sleeper):
    async def outage_delays():
        async with running(telegram_connection()):
            telegram_server.offline = True
            delays = [await wake_sleeper() for _ in range(4)]
        telegram_server.offline = False
        return delays

    assert await outage_delays() == await outage_delays()


async def test_5xx_and_cut_connections_are_retried(telegram_server, telegram_host, telegram_connection, wake_sleeper):
    telegram_server.fail("getUpdates", Fault(502, "Bad Gateway"), Fault.cut())
    _push(telegram_server, "through the storm")
    async with running(telegram_connection()):
        for _ in range(2):
            await wake_sleeper()
        (event,) = await telegram_host.wait_for_events(1)
    assert event.content == "through the storm"


async def test_start_waits_for_the_network_within_startup_timeout(
    telegram_server, telegram_host, telegram_connection, fake_clock
):
    telegram_server.offline = True
    connection = telegram_connection(startup_timeout=30)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_advance_while_sleeping, fake_clock)
        with pytest.raises(TelegramUnavailable, match=r"could not be reached for 30 s"):
            async with running(connection):
                pytest.fail("must not start while the Bot API is unreachable")
        tg.cancel_scope.cancel()
    assert telegram_server.count("getMe") >= 3


async def test_start_succeeds_once_the_network_returns(
    telegram_server, telegram_host, telegram_connection, wake_sleeper, sleeping
):
    telegram_server.offline = True

    async def recover():
        for _ in range(2):
            await wake_sleeper()
        await sleeping()
        telegram_server.offline = False
        await wake_sleeper()

    async with anyio.create_task_group() as tg:
        tg.start_soon(recover)
        async with running(telegram_connection()):
            _push(telegram_server, "hello")
            await telegram_host.wait_for_events(1)
    assert telegram_server.count("getMe") == 4


async def test_tokens_never_reach_the_logs(telegram_server, telegram_host, telegram_connection, wake_sleeper, caplog):
    caplog.set_level(logging.DEBUG)
    secret = telegram_server.token.split(":")[1]
    telegram_server.fail("getUpdates", Fault.cut(), Fault(500, "Internal Server Error"))
    async with running(telegram_connection()) as scope:
        for _ in range(2):
            await wake_sleeper()
        _push(telegram_server, "hi")
        await telegram_host.wait_for_events(1)
        scope.cancel()
    assert any("HTTP Request" in r.getMessage() for r in caplog.records)  # httpx did log its requests
    assert secret not in caplog.text


async def _advance_while_sleeping(clock):
    while True:
        await clock.wait_for_sleepers(1)
        await clock.advance(clock.next_deadline() - clock.now())
