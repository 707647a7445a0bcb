"""The fake Bot API itself, checked against the Bot API's documented behaviour (tests rely on it)."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from ishiki_host import HttpResponse
from ishiki_host.testing import serve_http

from ishiki_channel_telegram.testing import Fault, group_chat, private_chat, user

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice")


async def _call(server, method, token=None, **params):
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.url}/bot{token or server.token}/{method}", json=params)
    return response.status_code, response.json()


async def test_long_poll_answers_as_soon_as_an_update_is_pushed(telegram_server):
    results = []

    async def poll():
        results.append(await _call(telegram_server, "getUpdates", timeout=600))

    async with anyio.create_task_group() as tg:
        tg.start_soon(poll)
        await telegram_server.until(lambda: telegram_server.polling)
        telegram_server.push_message(private_chat(ALICE), "wake up")
    ((status, body),) = results
    assert status == 200
    assert body["result"][0]["message"]["text"] == "wake up"


async def test_offset_confirms_and_limit_caps(telegram_server):
    ids = [telegram_server.push_message(private_chat(ALICE), str(n)) and n for n in range(5)]
    _, first = await _call(telegram_server, "getUpdates", limit=2)
    assert [u["message"]["text"] for u in first["result"]] == ["0", "1"]
    _, rest = await _call(telegram_server, "getUpdates", offset=first["result"][-1]["update_id"] + 1)
    assert [u["message"]["text"] for u in rest["result"]] == ["2", "3", "4"]
    assert len(telegram_server.pending) == 3
    assert len(ids) == 5


async def test_a_newer_poll_ends_the_older_with_409(telegram_server):
    results = []

    async def poll():
        results.append(await _call(telegram_server, "getUpdates", timeout=600))

    async with anyio.create_task_group() as tg:
        tg.start_soon(poll)
        await telegram_server.until(lambda: telegram_server.polling)
        newer = await _call(telegram_server, "getUpdates", timeout=0)
    assert newer == (200, {"ok": True, "result": []})
    assert results[0][0] == 409
    assert "terminated by other getUpdates request" in results[0][1]["description"]


async def test_tokens_webhooks_and_unknown_methods(telegram_server):
    assert (await _call(telegram_server, "getMe", token="7000000001:wrong"))[0] == 401
    assert (await _call(telegram_server, "getMe", token="garbage"))[0] == 404
    assert (await _call(telegram_server, "noSuchMethod"))[1]["description"] == "Not Found: method not found"
    telegram_server.webhook_url = "https://example.com"
    status, body = await _call(telegram_server, "getUpdates")
    assert status == 409
    assert "webhook is active" in body["description"]
    assert (await _call(telegram_server, "deleteWebhook"))[0] == 200
    assert (await _call(telegram_server, "getUpdates"))[0] == 200


async def test_send_message_limits(telegram_server):
    telegram_server.push_message(private_chat(ALICE), "hi")
    ok = await _call(telegram_server, "sendMessage", chat_id=42, text="😀" * 2048)
    too_long = await _call(telegram_server, "sendMessage", chat_id=42, text="😀" * 2048 + "x")
    markup = await _call(
        telegram_server, "sendMessage", chat_id=42, text="<b>" + "x" * 4096 + "</b>", parse_mode="HTML"
    )
    assert ok[0] == 200
    assert too_long == (400, {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"})
    assert markup[0] == 200  # the limit counts the text after parsing
    for bad, words in [
        ("<b>open", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<b><i>x</b></i>", 'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"'),
        ("<blink>x</blink>", 'Unsupported start tag "blink" at byte offset 0'),
        ("a < b", "Unexpected end of name token at byte offset 2"),
    ]:
        status, body = await _call(telegram_server, "sendMessage", chat_id=42, text=bad, parse_mode="HTML")
        assert status == 400
        assert body["description"] == f"Bad Request: can't parse entities: {words}"
    assert (await _call(telegram_server, "sendMessage", chat_id=7, text="x"))[1]["description"].endswith(
        "chat not found"
    )
    status, body = await _call(
        telegram_server, "sendMessage", chat_id=42, text="x", reply_parameters={"message_id": 99}
    )
    assert status == 400
    assert body["description"] == "Bad Request: message to be replied not found"


async def test_uploads_and_files(telegram_server):
    group = group_chat(-100, "G")
    telegram_server.push_message(group, "hi", sender=ALICE)
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{telegram_server.url}/bot{telegram_server.token}/sendDocument",
            data={"chat_id": "-100", "caption": "here"},
            files={"document": ("a.txt", b"hello file", "text/plain")},
        )
        document = response.json()["result"]["document"]
        info = (
            await client.post(
                f"{telegram_server.url}/bot{telegram_server.token}/getFile", json={"file_id": document["file_id"]}
            )
        ).json()
        download = await client.get(
            f"{telegram_server.url}/file/bot{telegram_server.token}/{info['result']['file_path']}"
        )
    assert download.content == b"hello file"
    assert telegram_server.sent[-1].file_name == "a.txt"
    assert telegram_server.sent[-1].text == "here"


async def test_faults_in_order_then_normal(telegram_server):
    telegram_server.fail("getMe", Fault.rate_limited(3), Fault(500, "Internal Server Error"))
    assert (await _call(telegram_server, "getMe"))[1]["parameters"] == {"retry_after": 3}
    assert (await _call(telegram_server, "getMe"))[0] == 500
    assert (await _call(telegram_server, "getMe"))[0] == 200
    telegram_server.fail("getMe", Fault.cut())
    with pytest.raises(httpx.RemoteProtocolError):
        await _call(telegram_server, "getMe")


async def test_redeliver_puts_confirmed_updates_back_with_their_own_ids(telegram_server):
    for text in ("one", "two", "three"):
        telegram_server.push_message(private_chat(ALICE), text)
    _, first = await _call(telegram_server, "getUpdates", limit=2)
    one, two = first["result"]
    await _call(telegram_server, "getUpdates", offset=two["update_id"] + 1, timeout=0)  # confirms both
    assert [u["message"]["text"] for u in telegram_server.pending] == ["three"]
    telegram_server.redeliver(two, one)
    _, again = await _call(telegram_server, "getUpdates", timeout=0)
    assert again["result"][:2] == [one, two]  # the same updates, in order, before the one still queued
    assert again["result"][2]["message"]["text"] == "three"
    assert telegram_server.confirmed == one["update_id"]


async def test_set_webhook_refuses_what_telegram_refuses(telegram_server):
    refusals = {
        "http://bot.example.com/hook": "An HTTPS URL must be provided for webhook",
        "https://bot.example.com:8080/hook": "Webhook can be set up only on ports 80, 88, 443 or 8443",
    }
    for url, words in refusals.items():
        status, body = await _call(telegram_server, "setWebhook", url=url)
        assert (status, words in body["description"]) == (400, True)
    bad_secret = await _call(telegram_server, "setWebhook", url="https://bot.example.com/", secret_token="a b")
    assert bad_secret[1]["description"] == "Bad Request: secret token contains unallowed characters"
    too_many = await _call(telegram_server, "setWebhook", url="https://bot.example.com/", max_connections=101)
    assert too_many[0] == 400
    assert telegram_server.webhook_url is None


async def test_a_webhook_refuses_get_updates_until_deleted_and_get_webhook_info_reports_it(telegram_server):
    telegram_server.push_message(private_chat(ALICE), "queued")
    set_ = await _call(telegram_server, "setWebhook", url="https://bot.example.com:8443/h", secret_token="s3cret")
    assert set_ == (200, {"ok": True, "result": True})
    assert (await _call(telegram_server, "getUpdates"))[0] == 409
    _, info = await _call(telegram_server, "getWebhookInfo")
    assert info["result"] == {
        "url": "https://bot.example.com:8443/h",
        "has_custom_certificate": False,
        "pending_update_count": 1,
        "max_connections": 40,
    }
    assert (await _call(telegram_server, "deleteWebhook", drop_pending_updates=False))[0] == 200
    _, polled = await _call(telegram_server, "getUpdates")
    assert [u["message"]["text"] for u in polled["result"]] == ["queued"]  # kept for getUpdates
    await _call(telegram_server, "setWebhook", url="https://bot.example.com/h", drop_pending_updates=True)
    assert telegram_server.pending == []


async def test_delivery_goes_through_the_proxy_with_the_secret_and_a_non_2xx_keeps_the_update(telegram_server):
    seen, answers = [], [503, 200]

    async def hook(request):
        seen.append((request.path, request.headers.get("x-telegram-bot-api-secret-token"), request.body))
        return HttpResponse(answers.pop(0))

    async with serve_http() as ingress, ingress.mount("/hooks/telegram/0") as mount:
        mount.route("/", hook)
        await _call(telegram_server, "setWebhook", url="https://bot.example.com/hooks/telegram/0", secret_token="s")
        telegram_server.push_message(private_chat(ALICE), "hello")
        unreachable = await telegram_server.deliver()  # no proxy yet: the name does not resolve
        telegram_server.proxy("https://bot.example.com", ingress.base_url)
        refused = await telegram_server.deliver()
        _, info = await _call(telegram_server, "getWebhookInfo")
        taken = await telegram_server.deliver()
    assert (unreachable[0].status, unreachable[0].error) == (None, "Failed to resolve host: Name or service not known")
    assert (refused[0].status, refused[0].ok) == (503, False)
    assert info["result"]["last_error_message"] == "Wrong response from the webhook: 503 Service Unavailable"
    assert isinstance(info["result"]["last_error_date"], int)
    assert (taken[0].status, taken[0].ok) == (200, True)
    assert telegram_server.pending == []
    assert [(path, secret) for path, secret, _ in seen] == [("/", "s"), ("/", "s")]
    assert json.loads(seen[0][2])["message"]["text"] == "hello"
    assert await telegram_server.deliver() == []  # confirmed: nothing left to send


async def test_delivery_drops_kinds_the_webhook_does_not_allow(telegram_server):
    await _call(telegram_server, "setWebhook", url="https://bot.example.com/h", allowed_updates=["edited_message"])
    telegram_server.push_message(private_chat(ALICE), "not wanted")
    assert await telegram_server.deliver() == []
    assert telegram_server.pending == []
