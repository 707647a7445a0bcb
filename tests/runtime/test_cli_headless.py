"""A headless bot (``ishiki run`` under systemd, or ``docker run`` without ``-it``: stdin empty from the start)
whose profile claims the console, as the ``ishiki init`` template does, and a Telegram bot: the console closes,
the bot serves on until a signal."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from ishiki_channel_telegram.testing import FakeBotAPI, private_chat, user

from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TOKEN = "7000000042:headlessTestTokenPart_AbCdEfGhIjKl"
PROFILE = (
    "model: default\nchannels:\n  console:local: ['*']\n  telegram:7000000042: ['*']\nsession: {summarizer: off}\n"
)


async def test_a_headless_bot_closes_its_console_and_serves_its_telegram_chats(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["still here"]}),))
    async with FakeBotAPI(token=TOKEN) as bot:
        host = f"reload_interval_seconds: 0\nchannels:\n  telegram:\n    accounts:\n      - token: {TOKEN}\n"
        host += f"        api_base: {bot.url}\n"
        root = write_config(tmp_path / "bot", profiles={"ana": PROFILE}, models=models_yaml(fake_openai), host=host)
        running = start_ishiki("run", str(root))
        assert running.process.stdin is not None
        running.process.stdin.close()  # what systemd gives: no input at all
        running.process.stdin = None  # so that finish() does not write to it
        closed = "end of console input: channel console closes; telegram#0 run on"
        await anyio.to_thread.run_sync(running.wait_stderr, closed)
        await bot.until(lambda: bot.polling, deadline=30)
        bot.push_message(private_chat(user(10_001, "Ada")), "are you up?")
        await bot.until(lambda: len(bot.sent) == 1, deadline=30)
        assert bot.sent[0].text == "still here"
        running.signal(signal.SIGINT)  # the only way such a host stops
        code, out, err = await anyio.to_thread.run_sync(running.finish)
    assert (code, out) == (0, ""), err
    assert err.count(closed) == 1
    assert "stopping: end of console input" not in err
    assert "stopping: SIGINT" in err
