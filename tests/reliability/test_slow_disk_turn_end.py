"""A turn whose end takes longer to make durable than the shutdown grace still ends, for everyone.

Found by ``bench/host_load.py``: with 5,000 conversations at once, the worker threads that run the fact logs'
fsyncs were so busy that closing a turn in its log took longer than the shutdown grace. The runner bounded
that whole closing by the grace (meant for a host that stops), so the end event was never emitted: the
runtime went on showing "typing" every four seconds, never became idle (so was never evicted), and
``settled()`` never returned (the console waits on it before reading its next line). Here an fsync that
takes longer than a tiny grace stands in for that load (``fsync`` is the OS edge).
"""

from __future__ import annotations

import os
import time

import anyio
import pytest

from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


async def test_a_turn_closed_slower_than_the_grace_is_still_announced(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["hi"]}),))
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(0.2)  # in the worker thread the fact log syncs from: a loaded disk, a busy pool
        real_fsync(fd)

    th = make_host(profiles={"ana": profile_yaml()}, shutdown_grace=0.05)
    async with th:
        bot = th.channel()
        monkeypatch.setattr(os, "fsync", slow_fsync)
        delivery = await bot.say("hello")
        with anyio.fail_after(10):
            await delivery.settled()
        (runtime,) = th.host.routes.get("ana").runtimes.values()  # type: ignore[union-attr]
        with anyio.fail_after(10):
            await runtime.settled(background=True)  # the extensions' work after the turn (memory, sessions)
        assert runtime.idle_for() is not None  # idle: the turn's end was handled
        monkeypatch.undo()
    assert bot.texts() == ["hi"]
