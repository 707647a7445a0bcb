"""``ishiki doctor`` for a Telegram account, over the fake Bot API: the bot and its latency, a refused token
with the key to fix, a server that cannot be reached or hangs, and the webhook as Telegram has it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_channel_telegram import TelegramChannel
from ishiki_channel_telegram.testing import Fault

pytestmark = pytest.mark.anyio


async def _diagnose(server, seconds=10.0, **keys):
    account = {"token": server.token, "api_base": server.url, "name": "main", **keys}
    return list(await TelegramChannel().diagnose(account, seconds=seconds, state_dir=Path("/nonexistent")))


async def test_a_working_bot_is_named_with_its_latency(telegram_server):
    (finding,) = await _diagnose(telegram_server)
    assert (finding.level, finding.what, finding.fix) == ("ok", "telegram account 'main'", None)
    assert finding.detail.startswith("bot @IshikiTestBot answers getMe in ")
    assert telegram_server.count("getMe") == 1


async def test_a_refused_token_names_the_key_to_fix(telegram_server):
    (finding,) = await _diagnose(telegram_server, token="7000000001:AAwrongSecretWrongSecretWrongSecret_99")
    assert (finding.level, finding.detail) == ("error", "the token is refused (Unauthorized)")
    assert "channels.telegram.accounts[].token" in finding.fix
    assert "TELEGRAM_BOT_TOKEN" in finding.fix
    assert "AAwrongSecret" not in finding.detail + finding.fix


async def test_an_unreachable_or_hanging_server_is_named(telegram_server):
    telegram_server.fail("getMe", Fault.cut())
    (cut,) = await _diagnose(telegram_server)
    assert cut.level == "error"
    assert f"the Bot API at {telegram_server.url} cannot be reached" in cut.detail
    assert "api_base" in cut.fix
    telegram_server.fail("getMe", Fault.hanging())
    (hung,) = await _diagnose(telegram_server, seconds=0.2)
    assert hung.level == "error"
    assert "did not answer within 0.2 s" in hung.detail


async def test_webhook_mode_reports_the_webhook(telegram_server):
    _, unset = await _diagnose(telegram_server, mode="webhook")
    assert unset.level == "warning"
    assert unset.detail == "no webhook is set (0 updates waiting)"
    telegram_server.webhook_url = "https://bot.example.com/hooks/telegram/0"
    _, found = await _diagnose(telegram_server, mode="webhook")
    assert found.level == "ok"
    assert found.detail == "Telegram posts to https://bot.example.com/hooks/telegram/0; 0 updates waiting"
    assert telegram_server.count("setWebhook") == telegram_server.count("deleteWebhook") == 0  # nothing changed


async def test_polling_mode_does_not_ask_for_the_webhook(telegram_server):
    findings = await _diagnose(telegram_server)
    assert len(findings) == 1
    assert telegram_server.count("getWebhookInfo") == 0
