"""Load leaves nothing behind: after many conversations at once, and their runtimes evicted, the host has the
asyncio tasks, open files and runtime objects it had before, and no more sockets than its connection pool
(``bench/host_load.py`` measures the same load at 5,000 conversations, for speed and memory).

Found with it: an evicted runtime was not counted in ``ProfileRoute.closing`` until its stop task began, so a
caller waiting for ``closing`` to reach 0 could see 0 while every evicted runtime was still to stop.
"""

from __future__ import annotations

import asyncio
import gc
import os

import anyio
import anyio.lowlevel
import pytest

from ishiki_host.core.turns import Turn
from ishiki_host.eventloop import backend_options, uvloop_installed
from ishiki_host.runtime.runtime import AgentRuntime
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host import models_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Both loops the host runs on (uvloop's transports keep the context they were made in: a connection opened
    during a runtime's model call kept that runtime alive until a weak reference replaced it)."""
    if request.param == "uvloop" and not uvloop_installed():
        pytest.skip("uvloop is not installed")
    return ("asyncio", backend_options(request.param))


CONVERSATIONS = 300


def descriptors(kind: str) -> int:
    """Open descriptors of this process whose target starts with ``kind`` (a directory, or ``socket:``)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith(kind)
        except OSError:
            continue  # the descriptor listdir itself used
    return count


def live(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


def live_runtimes() -> int:
    return live(AgentRuntime)


async def test_many_conversations_at_once_leave_no_tasks_files_or_runtimes(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["ok"]}),))
    fake_openai.latency = 0.01
    models = models_yaml(fake_openai).replace("    models:", "    max_concurrency: 16\n    models:", 1)
    async with make_host(profiles={"ana": profile_yaml()}, models=models) as th:
        bot, route = th.channel(), th.host.routes.get("ana")
        assert route is not None
        with anyio.fail_after(10):
            await th.host._resumed.wait()
        turns = live(Turn)  # other tests' turns may linger in this process
        tasks, files, sockets, runtimes = (
            len(asyncio.all_tasks()),
            descriptors(str(th.root)),
            descriptors("socket:"),
            live_runtimes(),
        )
        async with anyio.create_task_group() as tg:
            for number in range(CONVERSATIONS):
                tg.start_soon(lambda n=number: bot.say("hello", channel_id=f"private:{n}"))
        with anyio.fail_after(60):
            await bot.wait_sent(CONVERSATIONS)
            alive = list(route.runtimes.values())
            for runtime in alive:
                await runtime.settled()
                await runtime.settled(background=True)  # the extensions' work after the turn
        assert len(alive) == CONVERSATIONS
        assert live(Turn) == turns  # an idle runtime keeps nothing of its last turn (its requests, its results)
        assert len(asyncio.all_tasks()) > tasks + CONVERSATIONS  # each runtime runs tasks of its own
        route.idle_seconds = 0.0
        assert route.evict_idle() == CONVERSATIONS
        assert route.closing == CONVERSATIONS  # counted at once, not when each stop task begins
        with anyio.fail_after(60):
            for runtime in alive:
                await runtime.stop()
            while route.closing:
                await anyio.lowlevel.checkpoint()
        del alive, runtime
        bot.sent.clear()
        assert len(asyncio.all_tasks()) == tasks
        assert descriptors(str(th.root)) == files  # every fact log and resource file closed
        assert descriptors("socket:") <= sockets + 2 * 16  # kept-alive model connections (both ends, in process)
        assert live_runtimes() == runtimes == 0
