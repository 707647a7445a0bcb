"""Webhook mode on the host's HTTP server: setWebhook at start, the secret on every request, the same intake
as polling (200 once durable, 503 to be sent again, poison set aside), restarts, and bad input."""

from __future__ import annotations

import json
import logging
import re

import pytest
from ishiki_host.errors import ChannelUnavailable, EventRejected, HostConfigInvalid, IngressError
from ishiki_host.testing import serve_http

from ishiki_channel_telegram import TelegramAccount, TelegramBadRequest
from ishiki_channel_telegram.state import RECENT_SAVED, OffsetStore, PollState
from ishiki_channel_telegram.testing import PUBLIC_URL, RecordingHost, private_chat, running, user
from ishiki_channel_telegram.webhook import derive_secret

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice")
HOOK = f"{PUBLIC_URL}/hooks/telegram/0"


@pytest.fixture
def webhook_connection(telegram_connection, telegram_webhook_host):
    """``webhook_connection(**account keys)``: a webhook-mode connection on ``telegram_webhook_host``."""
    return lambda **keys: telegram_connection(host=telegram_webhook_host, mode="webhook", **keys)


def _push(server, *texts):
    return [server.push_message(private_chat(ALICE), text) for text in texts]


def _statuses(deliveries):
    return [delivery.status for delivery in deliveries]


def _state_file(host):
    return json.loads((host.state_dir / "telegram-offset.json").read_text())


async def test_start_sets_the_webhook_with_the_secret_then_an_update_is_answered_200_once_durable(
    telegram_server, telegram_webhook_host, webhook_connection
):
    host = telegram_webhook_host
    pending_while_recorded = []
    host.on_recorded = lambda event: pending_while_recorded.append(len(telegram_server.pending))
    connection = webhook_connection()
    async with running(connection):
        assert telegram_server.webhook_url == HOOK
        (message,) = _push(telegram_server, "hello by webhook")
        deliveries = await telegram_server.deliver()
        (event,) = host.events
        status = connection.status()
    assert _statuses(deliveries) == [200]
    assert event.content == "hello by webhook"
    assert event.extra["updateId"] == 500_000
    assert pending_while_recorded == [1]  # Telegram still held it while it was being recorded
    assert telegram_server.pending == []
    (set_webhook,) = [call for call in telegram_server.calls if call.method == "setWebhook"]
    assert set_webhook.params == {
        "url": HOOK,
        "secret_token": derive_secret(telegram_server.token),
        "allowed_updates": list(connection.account.allowed_updates),
        "max_connections": 40,
        "drop_pending_updates": False,
    }
    assert [c.method for c in telegram_server.calls] == ["getMe", "setWebhook", "getWebhookInfo"]  # never polled
    assert status["mode"] == "webhook"
    assert status["offset"] is None
    assert status["webhook"] == {"unauthorized": 0, "malformed": 0}
    assert _state_file(host) == {"botId": 7000000001, "offset": None, "recent": [500_000]}
    assert message["text"] == "hello by webhook"


async def test_updates_queued_while_the_host_was_away_are_delivered_once_it_answers(
    telegram_server, telegram_webhook_host, webhook_connection, caplog
):
    caplog.set_level(logging.INFO)
    async with running(webhook_connection()):
        _push(telegram_server, "one")
        assert _statuses(await telegram_server.deliver()) == [200]
    # Stopped: the webhook stays set, and Telegram's tries fail meanwhile (the mount is gone: 404).
    assert telegram_server.webhook_url == HOOK
    _push(telegram_server, "two", "three")
    assert _statuses(await telegram_server.deliver()) == [404, 404]
    async with running(webhook_connection()):
        assert _statuses(await telegram_server.deliver()) == [200, 200]
    assert [e.content for e in telegram_webhook_host.events] == ["one", "two", "three"]
    assert "last delivery to the webhook failed: Wrong response from the webhook: 404 Not Found" in caplog.text
    assert "takes its updates by webhook at https://bot.example.com/hooks/telegram/0 (2 queued)" in caplog.text


async def test_a_configured_secret_is_used_and_deliveries_in_parallel_are_each_taken_once(
    telegram_server, telegram_webhook_host, webhook_connection
):
    async with running(webhook_connection(webhook_secret="my-own_Secret-42", webhook_max_connections=5)):
        assert telegram_server.webhook_secret == "my-own_Secret-42"
        _push(telegram_server, *(f"message {n}" for n in range(12)))
        deliveries = await telegram_server.deliver(concurrency=5)
    assert _statuses(deliveries) == [200] * 12
    assert sorted(e.content for e in telegram_webhook_host.events) == sorted(f"message {n}" for n in range(12))
    assert telegram_server.webhook_max_connections == 5


@pytest.mark.parametrize("secret", ["", "wrong-secret", derive_secret("1:other-token")])
async def test_a_request_without_the_right_secret_is_401_and_nothing_is_recorded(
    telegram_server, telegram_webhook_host, webhook_connection, caplog, secret
):
    connection = webhook_connection()
    async with running(connection):
        (message,) = _push(telegram_server, "forged")
        forged = telegram_server.pending[0]
        answers = [await telegram_server.post_to_webhook(forged, secret_token=secret) for _ in range(3)]
        status = connection.status()
    assert [a.status_code for a in answers] == [401, 401, 401]
    assert telegram_webhook_host.dispatch_calls == 0
    assert telegram_webhook_host.events == []
    assert not (telegram_webhook_host.state_dir / "telegram-set-aside.jsonl").exists()
    assert status["webhook"]["unauthorized"] == 3
    refused = [r for r in caplog.records if "refused a webhook request" in r.getMessage()]
    assert len(refused) == 1  # a flood is one warning, then debug lines
    assert refused[0].levelno == logging.WARNING
    assert message["message_id"] == 1


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"update_id": 1, "message": ', "is not JSON"),
        (b"[1, 2]", "not an object"),
        (b"\xff\xfe{", "not JSON"),
        (b"[" * 100_000, "not JSON"),  # deeper than the parser recurses: an error, not a crash
    ],
    ids=["cut", "array", "bytes", "deep"],
)
async def test_a_malformed_body_is_400_logged_once_and_nothing_is_recorded(
    telegram_server, telegram_webhook_host, webhook_connection, caplog, body, problem
):
    connection = webhook_connection()
    async with running(connection):
        answers = [await telegram_server.post_to_webhook(body) for _ in range(2)]
        status = connection.status()
    assert [a.status_code for a in answers] == [400, 400]
    assert telegram_webhook_host.dispatch_calls == 0
    logged = [r.getMessage() for r in caplog.records if "webhook body" in r.getMessage()]
    assert len(logged) == 1
    assert problem in logged[0]
    assert status["webhook"]["malformed"] == 2


async def test_an_oversized_body_is_413_from_the_host_and_nothing_is_recorded(
    telegram_server, telegram_webhook_host, webhook_connection
):
    async with running(webhook_connection()):
        huge = {"update_id": 1, "message": {"text": "x" * 2_000_000}}
        answer = await telegram_server.post_to_webhook(huge)
    assert answer.status_code == 413
    assert telegram_webhook_host.dispatch_calls == 0


async def test_a_failed_dispatch_is_503_and_taken_when_telegram_sends_it_again(
    telegram_server, telegram_webhook_host, webhook_connection, caplog
):
    host = telegram_webhook_host
    connection = webhook_connection()
    async with running(connection):
        host.fail_next(OSError(28, "No space left on device"))
        _push(telegram_server, "one")
        first = await telegram_server.deliver()
        failing = connection.status()["failing"]
        assert telegram_server.pending != []  # not confirmed: Telegram keeps it
        second = await telegram_server.deliver()
    assert _statuses(first) == [503]
    assert failing == {"updateId": 500_000, "tries": 1}
    assert _statuses(second) == [200]
    assert [e.content for e in host.events] == ["one"]
    assert "try 1 of 3; Telegram sends it again" in caplog.text
    assert connection.status()["failing"] is None


async def test_a_host_that_cannot_take_input_for_now_is_503_without_counting_a_try(
    telegram_server, telegram_webhook_host, webhook_connection
):
    host = telegram_webhook_host
    connection = webhook_connection(update_tries=1)
    async with running(connection):
        host.fail_next(*(ChannelUnavailable("the host is stopping") for _ in range(3)))
        _push(telegram_server, "patient")
        statuses = [_statuses(await telegram_server.deliver()) for _ in range(4)]
    assert statuses == [[503], [503], [503], [200]]
    assert [e.content for e in host.events] == ["patient"]
    assert connection.status()["setAside"] == 0


async def test_a_poison_update_is_set_aside_after_its_tries_and_confirmed(
    telegram_server, telegram_webhook_host, webhook_connection, caplog
):
    host = telegram_webhook_host

    def poison(event):
        if event.content == "poison":
            raise RuntimeError("the host cannot take this one")

    host.on_dispatch = poison
    connection = webhook_connection()
    async with running(connection):
        _push(telegram_server, "poison", "fine")
        rounds = [_statuses(await telegram_server.deliver()) for _ in range(3)]
        status = connection.status()
    assert rounds == [[503, 200], [503], [200]]  # the third try failed too: set aside, and 200 so Telegram stops
    assert [e.content for e in host.events] == ["fine"]
    assert (status["setAside"], status["lastSetAside"]["updateId"], status["failing"]) == (1, 500_000, None)
    (kept,) = [json.loads(line) for line in (host.state_dir / "telegram-set-aside.jsonl").read_text().splitlines()]
    assert kept["update"]["message"]["text"] == "poison"
    assert "set aside update 500000: 3 tries failed" in caplog.text
    assert telegram_server.pending == []


async def test_two_poison_updates_that_telegram_alternates_are_both_set_aside(
    telegram_server, telegram_webhook_host, webhook_connection
):
    telegram_webhook_host.on_dispatch = lambda event: (_ for _ in ()).throw(RuntimeError("no"))
    connection = webhook_connection(update_tries=2)
    async with running(connection):
        _push(telegram_server, "bad one", "bad two")
        rounds = [_statuses(await telegram_server.deliver()) for _ in range(2)]
    assert rounds == [[503, 503], [200, 200]]
    assert connection.status()["setAside"] == 2


async def test_an_update_the_host_rejects_is_set_aside_at_once(
    telegram_server, telegram_webhook_host, webhook_connection
):
    telegram_webhook_host.fail_next(EventRejected("never"))
    connection = webhook_connection()
    async with running(connection):
        _push(telegram_server, "rejected")
        assert _statuses(await telegram_server.deliver()) == [200]
    assert connection.status()["setAside"] == 1


async def test_a_redelivery_after_a_restart_is_recognised_without_a_second_dispatch(
    telegram_server, telegram_webhook_host, webhook_connection
):
    host = telegram_webhook_host
    async with running(webhook_connection()):
        _push(telegram_server, "one", "two")
        delivered = list(telegram_server.pending)
        assert _statuses(await telegram_server.deliver()) == [200, 200]
    # Telegram never got the 200s (a crash, a proxy that cut them): it sends both again to the next run.
    telegram_server.redeliver(*delivered)
    async with running(webhook_connection()):
        assert _statuses(await telegram_server.deliver()) == [200, 200]
    assert host.dispatch_calls == 2
    assert _state_file(host)["recent"] == [500_000, 500_001]


async def test_a_set_aside_update_sent_again_after_a_restart_is_not_tried_again(
    telegram_server, telegram_webhook_host, webhook_connection
):
    host = telegram_webhook_host
    host.fail_next(EventRejected("never"))
    async with running(webhook_connection()):
        _push(telegram_server, "rejected")
        update = telegram_server.pending[0]
        await telegram_server.deliver()
    telegram_server.redeliver(update)
    connection = webhook_connection()
    async with running(connection):
        assert _statuses(await telegram_server.deliver()) == [200]
        status = connection.status()
    assert host.dispatch_calls == 1
    assert status["setAside"] == 1


async def test_switching_back_to_polling_deletes_the_webhook_and_takes_what_it_queued(
    telegram_server, telegram_webhook_host, webhook_connection, telegram_connection
):
    host = telegram_webhook_host
    async with running(webhook_connection()):
        _push(telegram_server, "by webhook")
        await telegram_server.deliver()
    _push(telegram_server, "queued while stopped")
    async with running(telegram_connection(host=host)):  # mode: polling (the default) again
        await host.wait_for_events(2)
        await telegram_server.until(lambda: telegram_server.polling)
    assert telegram_server.webhook_url is None
    assert telegram_server.count("deleteWebhook") == 1
    assert [e.content for e in host.events] == ["by webhook", "queued while stopped"]
    polls = [call.params.get("offset") for call in telegram_server.calls if call.method == "getUpdates"]
    assert polls[0] is None  # no offset kept from webhook mode: Telegram's own memory is right


async def test_webhook_mode_without_http_public_url_is_one_clear_config_error(
    telegram_server, telegram_connection, tmp_path
):
    async with serve_http() as ingress:  # listens, but has no public URL
        host = RecordingHost(tmp_path / "state", http=ingress)
        with pytest.raises(HostConfigInvalid) as caught:
            async with running(telegram_connection(host=host, mode="webhook")):
                pass
        assert ingress.status()["mounts"] == []  # the mount was given back
    assert caught.value.path == "http.public_url"
    assert "needs http.public_url in ishiki.yaml" in str(caught.value)
    assert "/hooks/telegram/0" in str(caught.value)
    assert telegram_server.count("setWebhook") == 0


async def test_webhook_mode_on_a_host_without_http_is_the_ingress_error(telegram_server, telegram_connection, tmp_path):
    host = RecordingHost(tmp_path / "state")  # no HTTP server: http.listen is not set
    with pytest.raises(IngressError, match=r"cannot serve /hooks/telegram/0: .*set http\.listen in ishiki\.yaml"):
        async with running(telegram_connection(host=host, mode="webhook")):
            pass
    assert IngressError("x").fatal
    assert telegram_server.count("setWebhook") == 0


async def test_a_webhook_telegram_refuses_is_a_fatal_error_naming_the_url(
    telegram_server, telegram_connection, tmp_path
):
    async with serve_http(public_url="http://bot.example.com") as ingress:  # Telegram calls HTTPS only
        host = RecordingHost(tmp_path / "state", http=ingress)
        with pytest.raises(TelegramBadRequest) as caught:
            async with running(telegram_connection(host=host, mode="webhook")):
                pass
    message = str(caught.value)
    assert "could not set the webhook to http://bot.example.com/hooks/telegram/0" in message
    assert "An HTTPS URL must be provided for webhook" in message
    assert "check http.public_url in ishiki.yaml" in message
    assert caught.value.fatal


def test_the_default_secret_is_derived_from_the_token_and_a_bad_one_is_refused_without_quoting_it():
    secret = derive_secret("123456:AAsecret")
    assert secret == derive_secret("123456:AAsecret")  # the same at every start
    assert secret != derive_secret("123456:AAother")  # and another with another token
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", secret)
    assert "AAsecret" not in secret
    with pytest.raises(HostConfigInvalid) as caught:
        TelegramAccount.from_config({"token": "123456:AAsecret", "mode": "webhook", "webhook_secret": "not ok!"})
    assert caught.value.path.endswith("webhook_secret")
    assert "A-Z, a-z, 0-9, _ and -" in str(caught.value)
    assert "not ok!" not in str(caught.value)
    assert "not ok!" not in repr(TelegramAccount.from_config({"token": "1:a", "webhook_secret": "fine"}))


async def test_the_recent_ids_are_saved_and_read_back_and_a_mangled_list_is_dropped(tmp_path, caplog):
    state = PollState(None, (7, 2), 1, tuple(range(300)))
    assert PollState.from_json(state.to_json(1)).recent == tuple(range(300 - RECENT_SAVED, 300))
    assert "recent" not in PollState(5).to_json(1)  # a polling bot's file is as it was
    store = OffsetStore(tmp_path, 1, logger=logging.getLogger("test"))
    (tmp_path / "telegram-offset.json").write_text(json.dumps({"botId": 1, "offset": None, "recent": ["x"]}))
    assert await store.load() == PollState(None)
    assert "'recent' is not a list of update ids; only its offset is used" in caplog.text
