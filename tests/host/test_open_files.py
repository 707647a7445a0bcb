"""Live chats under the open-files limit: a runtime holds one file, and the least recently used idle runtimes
make room for new ones instead of a chat failing with "too many open files"."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.host.budget import RuntimeBudget, room_under
from ishiki_host.host.openfiles import FILES_PER_RUNTIME, files_exhausted, raise_open_files_limit
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

SEND_OK = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["ok"]}),))


def open_paths() -> dict[int, str]:
    """What each descriptor of this process points at."""
    paths = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            paths[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return paths


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
async def test_a_live_runtime_holds_its_fact_log_open_and_no_other_file(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default = SEND_OK
    async with make_host(profiles={"ana": profile_yaml()}, clock=FakeClock()) as th:
        bot = th.channel()
        await (await bot.say("warm up", channel_id="private:warm")).settled()
        before = open_paths()
        for index in range(20):
            await (await bot.say("hello", channel_id=f"private:{index}")).settled()
        route = th.host.routes.get("ana")
        assert route is not None
        assert len(route.runtimes) == 21
        new = {fd: path for fd, path in open_paths().items() if before.get(fd) != path}
        files = [path for path in new.values() if path.startswith("/")]
        assert len(files) == 20 * FILES_PER_RUNTIME
        assert all(path.endswith("/facts.jsonl") for path in files)


async def test_the_least_recently_used_idle_runtimes_make_room_and_lose_nothing(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default = SEND_OK
    clock = FakeClock()
    async with make_host(profiles={"ana": profile_yaml()}, clock=clock) as th:
        budget = th.host.budget
        assert budget is not None
        budget.room = 5
        route = th.host.routes.get("ana")
        assert route is not None
        bot = th.channel()
        for index in range(12):
            await (await bot.say(f"hello {index}", channel_id=f"private:{index}")).settled()
            await clock.advance(1.0)  # the order of use is the order of the chats
        assert budget.held <= 5
        assert budget.evicted == 7
        assert sorted(str(key).rsplit(":", 1)[1] for key in route.runtimes) == ["10", "11", "7", "8", "9"]
        assert bot.texts() == ["ok"] * 12

        await (await bot.say("again", channel_id="private:0")).settled()  # respawned from its fact log
        request = fake_openai.requests[-1].json
        assert isinstance(request, dict)
        users = [str(m.get("content")) for m in request["messages"] if m.get("role") == "user"]
        assert any("hello 0" in text for text in users)
        assert any("again" in text for text in users)
        assert budget.held <= 5


async def test_busy_runtimes_are_not_stopped_for_room(make_host: MakeHost, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.hang()  # the first chat's turn waits for the model until the host stops: its runtime is busy
    fake_openai.default = SEND_OK
    async with make_host(profiles={"ana": profile_yaml()}, clock=FakeClock(), shutdown_grace=0.5) as th:
        budget = th.host.budget
        assert budget is not None
        budget.room = 1
        bot = th.channel()
        route = th.host.routes.get("ana")
        assert route is not None
        await bot.say("wait for me", channel_id="private:a")
        busy = route.runtimes[route.key_for("fake:bot", "private:a")]
        assert busy.idle_for() is None
        await (await bot.say("hello", channel_id="private:b")).settled()
        assert busy.state == "ready"  # over the room, not stopped
        assert budget.held == 2
        assert bot.texts("private:b") == ["ok"]
        await route.runtimes[route.key_for("fake:bot", "private:b")].settled(background=True)
        await (await bot.say("hello", channel_id="private:c")).settled()
        assert busy.state == "ready"
        assert budget.evicted == 1  # b, idle by then, made room for c
        assert bot.texts("private:c") == ["ok"]


def test_the_room_leaves_a_reserve_under_the_limit() -> None:
    assert room_under(1024, 40) == 1024 - 40 - 256
    assert room_under(64, 12) == 64 - 12 - 32
    assert room_under(16, 30) == 1  # one runtime at least: its start says what is wrong
    assert RuntimeBudget(None).room is None


def test_running_out_of_files_is_recognised_through_the_causes() -> None:
    wrapped = RuntimeError("runtime x could not start")
    wrapped.__cause__ = ValueError("cannot open fact log x")
    wrapped.__cause__.__cause__ = OSError(errno.EMFILE, "Too many open files")
    assert files_exhausted(wrapped)
    assert not files_exhausted(RuntimeError("something else"))
    assert not files_exhausted(OSError(errno.ENOSPC, "No space left on device"))


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    script = "from ishiki_host.host.openfiles import raise_open_files_limit as r; l = r(); print(l.before, l.soft, l)"
    done = subprocess.run([sys.executable, "-c", script], preexec_fn=lambda: _limit(100, 200), capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    before, soft, said = done.stdout.split(" ", 2)
    assert (before, soft) == ("100", "200")
    assert "raised from 100 to 200" in said
    assert raise_open_files_limit().soft == resource.getrlimit(resource.RLIMIT_NOFILE)[0]


CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import anyio
    from ishiki_host.core.clock import FakeClock
    from ishiki_host.testing import profile_yaml, write_config
    from ishiki_host.testing.host import TestHost, host_yaml

    async def main(root, base_url, chats):
        models = (f"providers:\\n  fake:\\n    api: openai-completions\\n    base_url: {base_url}\\n"
                  "    models: [{id: fake-model}]\\ngroups:\\n  default:\\n    models: [fake:fake-model]\\n")
        write_config(root, profiles={"ana": profile_yaml()}, models=models, host=host_yaml())
        failed = []
        async with TestHost(root, clock=FakeClock()) as th:
            bot = th.channel()
            for first in range(0, chats, 10):
                async def one(index):
                    try:
                        await (await bot.say(f"hello {index}", channel_id=f"private:{index}")).settled()
                    except Exception as exc:
                        failed.append(f"{index}: {exc}")
                async with anyio.create_task_group() as tg:
                    for index in range(first, min(first + 10, chats)):
                        tg.start_soon(one, index)
            answered = len({m.channel_id for m in bot.sent})
            print(json.dumps({"failed": failed, "answered": answered, "evicted": th.host.budget.evicted,
                              "room": th.host.budget.room}))

    anyio.run(main, Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
    """
)


@pytest.mark.slow
def test_200_chats_under_a_limit_of_64_files_are_all_answered(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.default = SEND_OK
    command = [sys.executable, "-c", CHILD, str(tmp_path / "bot"), fake_openai.base_url, "200"]
    done = subprocess.run(command, preexec_fn=lambda: _limit(64, 64), capture_output=True, text=True, timeout=600,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["failed"] == []
    assert result["answered"] == 200
    assert result["evicted"] >= 200 - result["room"]
    assert len(list((tmp_path / "bot" / "data" / "runtimes" / "ana").glob("*/*/facts.jsonl"))) == 200


def _limit(soft: int, hard: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
