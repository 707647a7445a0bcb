"""A message made durable while its runtime stops is decided on: now, or at the next start.

Found by the secrets test (a message that came in as the host was told to stop was never answered, even after
a restart): the runtime stopped while the channel's delivery was still inside the wakeup engine's decision,
the decision came too late (``AgentStopped``) and was dropped, and the runtime still wrote its clean-stop
marker, which tells the next start that everything before it was decided on. Now a stop waits (within the
grace) for deliveries in progress, and leaves the marker out when one is still going or turns it drops were
queued, so the next start decides on those messages.

A wakeup engine that holds its decision until the test lets it go makes the moment exact.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.errors import AgentStopped
from ishiki_host.plugins.base import WakeupEngine
from ishiki_host.runtime.tail import STOP_EVENT
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

DECIDING = anyio.Event()
LET_GO = anyio.Event()


class _Held:
    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    def attach(self, ctx: Any) -> Any:
        return ctx.bus.subscribe("message.appended", self._appended)

    async def _appended(self, event: Any) -> None:
        DECIDING.set()
        await LET_GO.wait()
        with contextlib.suppress(AgentStopped):  # too late: the runtime stopped (the standard engine does so too)
            await self.ctx.agent.continue_(None, reason="message")

    async def reconsider(self, entries: Any) -> None:
        for _ in entries:
            await self.ctx.agent.continue_(None, reason="reconsidered")


class HeldWakeup(WakeupEngine):
    """Decides on each message only once the test sets ``LET_GO``."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        return _Held(ctx)


def log_of(root: Path) -> list[dict[str, Any]]:
    home = runtime_dir(root / "data", RuntimeKey.for_channel("ana", "fake:bot", "private:1"))
    return [json.loads(line) for line in (home / "facts.jsonl").read_bytes().split(b"\n") if line]


async def test_a_message_whose_decision_the_stop_cut_is_answered_at_the_next_start(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    global DECIDING, LET_GO
    DECIDING, LET_GO = anyio.Event(), anyio.Event()
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["sorry, I was away"]}),))
    held = profile_yaml().replace("engine: every", "engine: held")
    root = tmp_path / "bot"
    th = make_host(profiles={"ana": held}, plugins={"ishiki.engine.wakeup.held": HeldWakeup}, root=root)
    async with th, anyio.create_task_group() as tg:
        bot = th.channel()
        tg.start_soon(bot.say, "are you there?")
        with anyio.fail_after(10):
            await DECIDING.wait()  # durable, and being decided on
        (runtime,) = th.host.routes.get("ana").runtimes.values()  # type: ignore[union-attr]
        with anyio.fail_after(10):
            await runtime.stop(grace=0)  # the grace is over before the decision is
        LET_GO.set()
    assert [e["data"].get("name") for e in log_of(root)][-1] != STOP_EVENT
    assert bot.sent == []
    with anyio.fail_after(10):
        async with make_host(profiles={"ana": profile_yaml()}, root=root) as again:
            resumed = again.channel()
            await resumed.wait_sent(1)  # resumed at start, without new input
    assert resumed.texts() == ["sorry, I was away"]
