"""``ishiki run --workers 2`` with ``scheduler.across_workers: lease``: the model calls of both workers take their
slots from the supervisor's scheduler, so the fake model server never has more than ``max_concurrency`` calls in
flight, and a worker that has every chat may use the whole limit (a split would give it half)."""

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
from ishiki_host.workers.owners import HashOwners

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py
IshikiStatus = Callable[[Path], dict[str, Any]]  # its ``ishiki_status``

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

BOT = "7000000043"
TOKEN = f"{BOT}:leaseTestTokenPart_AbCdEfGhIjKlMn"
LIMIT = 2


def chats_on(worker: int, count: int) -> list[int]:
    """``count`` private chats whose runtimes worker ``worker`` of 2 owns."""
    owners = HashOwners(2)
    chats = (chat for chat in range(20_000, 30_000) if owners.owner(f"ana/telegram:{BOT}/private:{chat}") == worker)
    return [next(chats) for _ in range(count)]


@pytest.mark.parametrize("skewed", [False, True], ids=["both workers", "every chat on worker 0"])
async def test_both_workers_together_keep_to_max_concurrency(
    start_ishiki: StartIshiki, ishiki_status: IshikiStatus, fake_openai: FakeOpenAIServer, tmp_path: Path, skewed: bool
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["ok"]}),))
    fake_openai.latency = 0.2
    chats = chats_on(0, 8) if skewed else chats_on(0, 4) + chats_on(1, 4)
    async with FakeBotAPI(token=TOKEN) as bot:
        host = (
            "reload_interval_seconds: 0\nshutdown_grace_seconds: 2\nscheduler: {across_workers: lease}\n"
            f"channels:\n  telegram:\n    accounts:\n      - token: {TOKEN}\n        api_base: {bot.url}\n"
        )
        profile = f"model: default\nchannels:\n  telegram:{BOT}: ['*']\nsession: {{summarizer: off}}\n"
        models = models_yaml(fake_openai, extra=f"    max_concurrency: {LIMIT}\n")
        root = write_config(tmp_path / "bot", profiles={"ana": profile}, models=models, host=host)
        running = start_ishiki("run", str(root), "--workers", "2")
        await anyio.to_thread.run_sync(running.wait_stderr, "2 workers started; 0: ready", 60)
        await bot.until(lambda: bot.polling, deadline=60)
        for chat in chats:
            bot.push_message(private_chat(user(chat, f"P{chat}")), "hello")
        await bot.until(lambda: len(bot.sent) >= len(chats), deadline=120)
        report = await anyio.to_thread.run_sync(ishiki_status, root)
        running.signal(signal.SIGTERM)
        code, _, err = await anyio.to_thread.run_sync(running.finish)
    assert sorted(s.chat_id for s in bot.sent) == sorted(chats)
    assert len(fake_openai.requests) >= len(chats)
    assert fake_openai.most_in_flight <= LIMIT  # across both workers
    lane = report["gateway"]["scheduler"]["fake"]  # the supervisor's scheduler granted every call: one view
    assert (lane["max_concurrency"], lane["in_flight"]) == (LIMIT, 0)
    assert lane["granted"] == len(fake_openai.requests)
    assert [w["leases"] for w in report["workers"]] == [{"held": 0, "waiting": 0}] * 2
    assert code == 0, err
    assert "Traceback" not in err, err
