"""The Telegram Bot API drops connections or goes offline under a running host: nothing is lost.

A real host (built-in engines) with the Telegram channel on the fake Bot API, on the fake clock (the channel's
back-off waits on it), and the crash harness's rational model. Messages written during an outage are fetched
once the Bot API is back, recorded once and answered once; a cut ``sendMessage`` is reported to the model as
not sent, and its next step sends it again.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ishiki_channel_telegram.testing import FakeBotAPI, Fault, private_chat, user

from ishiki_host.core.clock import FakeClock
from ishiki_host.testing import TestHost

pytestmark = pytest.mark.anyio

ADA = private_chat(user(10_001, "Ada"))
BEN = private_chat(user(10_002, "Ben"))


def recorded(root: Path) -> Counter[str]:
    """How many times each inbound text is in the fact logs."""
    texts: Counter[str] = Counter()
    for path in (root / "data" / "runtimes").rglob("facts.jsonl"):
        for line in filter(None, path.read_bytes().split(b"\n")):
            source = json.loads(line)["data"].get("source")
            if source:
                texts[source["content"]] += 1
    return texts


def failed(server: FakeBotAPI, method: str) -> int:
    return sum(1 for call in server.calls if call.method == method and not call.ok)


async def test_an_outage_of_the_bot_api_loses_nothing(
    telegram_server: FakeBotAPI,
    telegram_bot: Callable[..., TestHost],
    rational_model: Any,
    fake_clock: FakeClock,
    log_watch: Any,
) -> None:
    server = telegram_server
    th = telegram_bot(server)
    async with th:
        server.push_message(ADA, "hello q1x1")
        await server.until(lambda: [m.text for m in server.sent] == ["ack q1x1"])
        await server.until(lambda: server.polling)
        server.offline = True  # cuts the long poll, then drops every request
        await log_watch.wait_for("cannot be reached")
        server.push_message(ADA, "still there? q1x2")
        server.push_message(BEN, "hi q2x1")
        for attempt in range(2, 7):  # five more polls fail, each after its back-off on the fake clock
            await fake_clock.advance(4)  # the channel logged the failure, then went to sleep in the same step
            await log_watch.wait_for("getUpdates: network error", attempt)
        assert len(server.pending) == 2
        server.offline = False
        await fake_clock.advance(4)
        await server.until(lambda: sorted(m.text for m in server.sent) == ["ack q1x1", "ack q1x2", "ack q2x1"])
        await server.until(lambda: not server.pending)
    assert recorded(th.root) == {"hello q1x1": 1, "still there? q1x2": 1, "hi q2x1": 1}
    assert log_watch.count("cannot be reached") == 1  # one warning per outage, not one per failed poll
    assert log_watch.count("polling resumed") == 1


async def test_cut_connections_are_retried_and_a_cut_send_is_sent_again(
    telegram_server: FakeBotAPI,
    telegram_bot: Callable[..., TestHost],
    rational_model: Any,
    fake_clock: FakeClock,
    log_watch: Any,
) -> None:
    server = telegram_server
    th = telegram_bot(server)
    async with th:
        await server.until(lambda: server.polling)
        server.fail("getUpdates", Fault.cut(), Fault(502, "Bad Gateway"))  # the polls confirming the update
        server.fail("sendMessage", Fault.cut())
        server.push_message(ADA, "hello q1x1")
        await server.until(lambda: [m.text for m in server.sent] == ["ack q1x1"])
        for attempt in (1, 2):
            await log_watch.wait_for("getUpdates: ", attempt)  # logged just before the back-off sleep
            await fake_clock.advance(4)
        await server.until(lambda: not server.pending)
    assert failed(server, "sendMessage") == 1
    assert recorded(th.root) == {"hello q1x1": 1}
    assert [m.text for m in server.sent] == ["ack q1x1"]
