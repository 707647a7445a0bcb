"""Webhook mode in a real host: ``http`` of ishiki.yaml, ``mode: webhook`` on the account, the fake Bot API
delivering to the host's HTTP server through its proxy, the fake OpenAI server as the model."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from ishiki_host.testing import Reply, ScriptedCall, TestHost

from ishiki_channel_telegram.testing import PUBLIC_URL, private_chat, user

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice")
SID = "telegram:7000000001"
HTTP = f"{{listen: '127.0.0.1:0', public_url: '{PUBLIC_URL}'}}"


def send(*messages: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall("send_message", {"messages": list(messages)}),))


def inbound(root: Path, channel: str) -> list[str]:
    """What the helper's runtime in ``channel`` recorded of the people's messages."""
    home = root / "data" / "runtimes" / "helper" / SID.replace(":", "%3A") / channel.replace(":", "%3A")
    entries = [json.loads(line) for line in (home / "facts.jsonl").read_text("utf-8").splitlines()]
    return [e["data"]["source"]["content"] for e in entries if e["type"] == "message" and e["data"].get("source")]


async def settled(th: Any) -> None:
    with anyio.fail_after(10):
        for route in th.host.routes:
            for runtime in route.runtimes.values():
                await runtime.settled()


async def test_a_message_by_webhook_is_answered_in_its_chat(bot_host, telegram_server, fake_openai):
    fake_openai.default = lambda request: send("Hello Alice, by webhook.")
    async with bot_host(mode="webhook", http=HTTP) as th:
        assert th.host.http.base_url is not None
        telegram_server.proxy(PUBLIC_URL, th.host.http.base_url)  # the reverse proxy in front of the host
        telegram_server.push_message(private_chat(ALICE), "hello bot")
        deliveries = await telegram_server.deliver()
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
        status = th.host.status()
    assert [d.status for d in deliveries] == [200]
    assert (telegram_server.sent[0].chat_id, telegram_server.sent[0].text) == (42, "Hello Alice, by webhook.")
    assert inbound(th.root, "private:42") == ["hello bot"]
    assert telegram_server.webhook_url == f"{PUBLIC_URL}/hooks/telegram/0"
    assert telegram_server.count("getUpdates") == 0
    assert "/hooks/telegram/0" in status["http"]["mounts"]  # beside the host's own /metrics and /readyz
    assert status["channels"]["telegram#0"]["connection"]["mode"] == "webhook"


async def test_a_redelivery_after_a_restart_is_answered_once(
    bot_config, telegram_server, fake_openai, fake_clock, caplog
):

    caplog.set_level(logging.INFO)
    fake_openai.default = lambda request: send("Sunny.")
    root = bot_config(mode="webhook", http=HTTP)
    env = {"TELEGRAM_BOT_TOKEN": telegram_server.token}
    async with TestHost(root, clock=fake_clock, env=env) as th:
        telegram_server.proxy(PUBLIC_URL, th.host.http.base_url)
        telegram_server.push_message(private_chat(ALICE), "weather?")
        update = telegram_server.pending[0]
        await telegram_server.deliver()
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
    # The 200 never reached Telegram, and the channel's own memory of the update is gone with its state file:
    # the host itself recognises the repeat.
    (root / "data" / "channels" / "telegram" / "0" / "telegram-offset.json").unlink()
    telegram_server.redeliver(update)
    async with TestHost(root, clock=fake_clock, env=env) as th:
        telegram_server.proxy(PUBLIC_URL, th.host.http.base_url)
        deliveries = await telegram_server.deliver()
        await settled(th)
    assert [d.status for d in deliveries] == [200]
    assert [m.text for m in telegram_server.sent] == ["Sunny."]
    assert inbound(root, "private:42") == ["weather?"]
    assert "was taken before; ignored" in caplog.text


@pytest.mark.parametrize(
    ("http", "words"),
    [
        ("{listen: '127.0.0.1:0'}", "needs http.public_url in ishiki.yaml"),
        (None, "cannot serve /hooks/telegram/0: the host serves no HTTP: set http.listen in ishiki.yaml"),
    ],
)
async def test_webhook_mode_without_its_http_settings_fails_once_saying_what_to_set(
    bot_host, telegram_server, caplog, http, words
):
    async with bot_host(mode="webhook", http=http) as th:
        status = th.host.status()["channels"]["telegram#0"]
    assert status["state"] == "failed"
    assert words in status["error"]
    failed = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failed) == 1, failed
    assert words in failed[0]
    assert "(not restarted)" in failed[0]
    assert telegram_server.count("setWebhook") == 0
