"""The disk fills up under a running host: it says so, takes no update it cannot record, and carries on.

A real host with the Telegram channel on the fake Bot API and the built-in engines; writes to files under the
test's directory fail with ENOSPC while ``full_disk.full`` (the fact log's write seam, the ``write`` syscall).
The disk fills just after the first answer went out, before its result is in the log: that turn cannot be
closed in the log, so the runtime stops and recovers from the log once the disk has room (before, it ran on
with a log that had lost the send, and answered that message a second time). Meanwhile the channel retries
each update it could not record and confirms none of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from ishiki_channel_telegram.testing import FakeBotAPI, private_chat, user

from ishiki_host.core.clock import FakeClock
from ishiki_host.testing import TestHost

pytestmark = pytest.mark.anyio

ADA = private_chat(user(10_001, "Ada"))


def entries(root: Path) -> list[dict[str, Any]]:
    """Every entry of every fact log under ``root``."""
    found = []
    for path in sorted((root / "data" / "runtimes").rglob("facts.jsonl")):
        found += [json.loads(line) for line in path.read_bytes().split(b"\n") if line]
    return found


def inbound(root: Path) -> list[str]:
    """The texts of every inbound message, in log order."""
    return [e["data"]["source"]["content"] for e in entries(root) if e["data"].get("source")]


def unanswered_calls(root: Path) -> list[str]:
    """Tool calls without a result."""
    results = {e["data"].get("tool_call_id") for e in entries(root)}
    return [c["id"] for e in entries(root) for c in e["data"].get("tool_calls") or () if c["id"] not in results]


async def answered(server: FakeBotAPI, text: str) -> None:
    await server.until(lambda: any(m.text == text for m in server.sent))


async def test_a_full_disk_stops_updates_without_losing_them_and_recovers(
    telegram_server: FakeBotAPI,
    telegram_bot: Callable[..., TestHost],
    rational_model: Any,
    full_disk: Any,
    log_watch: Any,
    fake_clock: FakeClock,
) -> None:
    th = telegram_bot(telegram_server)
    async with th:
        telegram_server.push_message(ADA, "hello q1x1")
        await answered(telegram_server, "ack q1x1")
        full_disk.full = True
        second = telegram_server.push_message(ADA, "are you there? q1x2")
        third = telegram_server.push_message(ADA, "hello? q1x3")
        # The first turn may still be writing its end too: that fails as well, in its own words (below).
        await log_watch.wait_for("dispatching update", 1)
        (refused,) = [m for m in log_watch.messages if "dispatching update" in m]
        assert "No space left on device" in refused
        assert "facts.jsonl" in refused
        for attempt in range(2, 5):  # each retry fails the same way, and nothing is confirmed meanwhile
            await fake_clock.advance(4)
            await log_watch.wait_for("dispatching update", attempt)
            assert "No space left on device" in [m for m in log_watch.messages if "dispatching update" in m][-1]
        # Kept whole in the channel's state file until durable in the host (the poller went past them).
        state = json.loads((th.root / "data/channels/telegram/0/telegram-offset.json").read_text(encoding="utf-8"))
        assert [u["message"]["message_id"] for u in state["held"]] == [second["message_id"], third["message_id"]]
        assert th.host.channels.status()  # still up: the host runs on
        assert inbound(th.root) == ["hello q1x1"]
        full_disk.full = False
        await fake_clock.advance(4)
        await answered(telegram_server, "ack q1x3")
        with anyio.fail_after(10):
            await telegram_server.until(lambda: not telegram_server.pending)
    assert full_disk.refused >= 4
    assert inbound(th.root) == ["hello q1x1", "are you there? q1x2", "hello? q1x3"]
    assert sorted(m.text for m in telegram_server.sent) == ["ack q1x1", "ack q1x2", "ack q1x3"]
    assert unanswered_calls(th.root) == []
    assert log_watch.count("its fact log could not be written") == 1  # the turn whose result could not be written
