"""The Host in process: routing by claims, channel and cross mode, echoes, eviction, channel restarts, usage."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest

from ishiki_host import Extension, Tool, hookimpl
from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.channels.inbound import inbound_message
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.errors import ChannelUnavailable
from ishiki_host.host.connections import backoff_delay
from ishiki_host.host.routes import reap_interval
from ishiki_host.testing import FakeConnection, FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.channels import FakeChannel
from ishiki_host.testing.host import host_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


def persona_of(request: RecordedRequest) -> str:
    return request.json["messages"][0]["content"].split()[2].rstrip(",.")


def last_user(request: RecordedRequest) -> str:
    return [m["content"] for m in request.json["messages"] if m["role"] == "user"][-1]


def echo(server: FakeOpenAIServer) -> None:
    """Every answer: send "<persona>: <last user text>"."""

    def answer(request: RecordedRequest) -> Reply:
        text = f"{persona_of(request)}: {last_user(request)}"
        return Reply(tool_calls=(ScriptedCall("send_message", {"messages": [text]}),))

    server.default = answer


async def say(channel: FakeConnection, text: str, **fields: Any) -> Any:
    delivery = await channel.say(text, **fields)
    with anyio.fail_after(10):
        await delivery.settled()
    return delivery


async def test_claims_pick_the_profile_and_unclaimed_channels_are_dropped(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    echo(fake_openai)
    profiles = {"ana": profile_yaml("fake:bot: ['group:*']"), "bob": profile_yaml("fake:bot: ['private:*']")}
    async with make_host(profiles=profiles) as th:
        bot = th.channel()
        group = await say(bot, "hi group", channel_id="group:1")
        private = await say(bot, "hi private", channel_id="private:2")
    assert (group.runtime_key, private.runtime_key) == ("ana/fake:bot/group:1", "bob/fake:bot/private:2")
    assert [(m.channel_id, m.text) for m in bot.sent] == [
        ("group:1", "ana: hi group"),
        ("private:2", "bob: hi private"),
    ]


async def test_an_event_of_an_unclaimed_account_is_recorded_nowhere(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    host = host_yaml("[{self_id: bot}, {self_id: lonely}]")
    profiles = {"ana": profile_yaml("fake:bot: ['*']\nfake:lonely: ['group:1']")}
    async with make_host(profiles=profiles, host=host) as th:
        delivery = await th.channel("fake:lonely").say("anyone?", channel_id="group:2")
        runtimes = th.host.routes.get("ana").runtimes  # type: ignore[union-attr]
    assert (delivery.routed, delivery.entry_id, runtimes) == (False, None, {})
    assert not (th.root / "data" / "runtimes").exists()


async def test_channel_mode_keeps_channels_apart_and_cross_mode_joins_them(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default = lambda request: Reply("noted")  # plain text: sent where the message came from
    host = host_yaml("[{self_id: bot}, {self_id: cat}]")
    profiles = {"ana": profile_yaml("fake:bot: ['*']"), "cat": profile_yaml("fake:cat: ['*']", mode="cross")}
    async with make_host(profiles=profiles, host=host) as th:
        bot, cat = th.channel("fake:bot"), th.channel("fake:cat")
        await say(bot, "one", channel_id="private:1")
        await say(bot, "two", channel_id="private:2")
        await say(cat, "three", channel_id="private:1")
        joined = await say(cat, "four", channel_id="group:2")
    users = [[m["content"] for m in r.json["messages"] if m["role"] == "user"] for r in fake_openai.requests]
    assert users == [["one"], ["two"], ["three"], ["three", "four"]]
    assert joined.runtime_key == "cat/main"
    assert (th.root / "data" / "runtimes" / "cat" / "main" / "facts.jsonl").exists()
    assert [(m.channel_id, m.text) for m in cat.sent] == [("private:1", "noted"), ("group:2", "noted")]
    assert [(m.channel_id, m.text) for m in bot.sent] == [("private:1", "noted"), ("private:2", "noted")]


async def test_the_platform_echo_of_a_sent_message_is_dropped(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    echo(fake_openai)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        bot = th.channel()
        first = await say(bot, "hello")
        sent_id = bot.sent[0].ids[0]
        echoed = await bot.say("ana: hello", message_id=sent_id, user_id="bot")
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        entries = [e.id for e in runtime.context.log.iter_forward() if e.data.get("role") == "user"]
    assert (echoed.routed, entries) == (False, [first.entry_id])


class Journal(Extension):
    """Records the life of its instances in ``Journal.events``."""

    events: ClassVar[list[str]] = []

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        key, events = str(ctx.key), Journal.events

        class Instance:
            @hookimpl
            def ishiki_attach(self) -> Any:
                events.append(f"attach {key}")
                return lambda: events.append(f"dispose {key}")

            @hookimpl
            def ishiki_stop(self) -> None:
                events.append(f"stop {key}")

        return Instance()


JOURNAL = {"ishiki.ext.journal": Journal}


async def test_idle_runtimes_are_evicted_and_respawn_from_their_log(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, fake_clock: FakeClock
) -> None:
    echo(fake_openai)
    Journal.events = []
    host = host_yaml(extra="runtime_idle_seconds: 60\n")
    profiles = {"ana": profile_yaml(extra="extends: {journal: {}}\n")}
    async with make_host(profiles=profiles, host=host, plugins=JOURNAL, clock=fake_clock) as th:
        bot = th.channel()
        route = th.host.routes.get("ana")
        assert route is not None
        await say(bot, "remember 42", channel_id="private:1")
        await say(bot, "other chat", channel_id="private:2")
        assert len(route.runtimes) == 2
        await fake_clock.advance(59)
        assert route.evicted == 0
        for _ in range(3):  # the reaper looks every reap_interval; evictions then run as tasks
            await fake_clock.advance(reap_interval(60))
        await anyio.wait_all_tasks_blocked()
        assert (route.evicted, route.runtimes) == (2, {})
        await say(bot, "what did I say?", channel_id="private:1")
    assert "remember 42" in [m["content"] for m in fake_openai.last_request.json["messages"]]
    one, two = "ana/fake:bot/private:1", "ana/fake:bot/private:2"
    assert Journal.events.count(f"attach {one}") == 2
    assert [e for e in Journal.events if e.endswith(two)] == [f"attach {two}", f"stop {two}", f"dispose {two}"]


async def test_a_runtime_idle_for_a_reap_interval_gives_back_its_cached_entries_and_its_file(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, fake_clock: FakeClock
) -> None:
    echo(fake_openai)
    host = host_yaml(extra="runtime_idle_seconds: 60\n")
    async with make_host(profiles={"ana": profile_yaml()}, host=host, clock=fake_clock) as th:
        bot = th.channel()
        route = th.host.routes.get("ana")
        assert route is not None
        await say(bot, "remember 42", channel_id="private:1")
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        await runtime.settled()
        assert runtime.context.log.cached > 0
        await fake_clock.advance(reap_interval(60))  # one look of the reaper: idle that long, so cooled
        await anyio.wait_all_tasks_blocked()
        assert runtime.context.log.cached == 0
        assert runtime.context.log.parked  # its file closed too: an idle chat holds no file open
        assert list(route.runtimes.values()) == [runtime]  # cooled, not evicted
        parsed = runtime.context.log.stats.lines_parsed
        await say(bot, "what did I say?", channel_id="private:1")
        assert not runtime.context.log.parked
        assert "remember 42" in [m["content"] for m in fake_openai.last_request.json["messages"]]
        assert runtime.context.log.stats.lines_parsed > parsed  # the window came from the file...
        parsed = runtime.context.log.stats.lines_parsed
        await say(bot, "and now?", channel_id="private:1")
        assert runtime.context.log.stats.lines_parsed == parsed  # ... and went back into the cache
    assert "remember 42" in [m["content"] for m in fake_openai.last_request.json["messages"]]


async def test_many_channels_keep_the_number_of_runtimes_bounded(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, fake_clock: FakeClock
) -> None:
    echo(fake_openai)
    async with make_host(
        profiles={"ana": profile_yaml()}, host=host_yaml(extra="runtime_idle_seconds: 30\n"), clock=fake_clock
    ) as th:
        route, bot = th.host.routes.get("ana"), th.channel()
        assert route is not None
        most = 0
        for index in range(60):
            await say(bot, "hi", channel_id=f"private:{index}")
            most = max(most, len(route.runtimes))
            await fake_clock.advance(10)
    assert route.spawned == 60
    assert most <= 5
    assert len(bot.sent) == 60


class Crashy(FakeChannel):
    """A fake channel whose connections crash when ``crash`` is set."""

    crash: ClassVar[anyio.Event]
    runs: ClassVar[int] = 0

    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        class Connection(FakeConnection):
            async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                Crashy.runs += 1
                task_status.started()
                await Crashy.crash.wait()
                Crashy.crash = anyio.Event()
                raise RuntimeError("the platform connection broke")

        return Connection(ctx, platform="crashy", self_id="c")


async def test_a_crashed_channel_restarts_with_back_off_while_others_serve(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, fake_clock: FakeClock
) -> None:
    echo(fake_openai)
    Crashy.crash, Crashy.runs = anyio.Event(), 0
    host = host_yaml(extra="  crashy:\n    accounts: [{}]\n")
    profiles = {"ana": profile_yaml("fake:bot: ['*']\ncrashy:c: ['*']")}
    plugins = {"ishiki.channel.crashy": Crashy}
    async with make_host(profiles=profiles, host=host, plugins=plugins, clock=fake_clock, seed=7) as th:
        assert th.host.channel("crashy:c") is not None
        Crashy.crash.set()
        await fake_clock.wait_for_sleepers(2)  # the route's idle reaper and the supervisor's back-off
        supervisor = next(s for s in th.host.channels.supervisors() if s.spec.platform == "crashy")
        assert (supervisor.state, th.host.channel("crashy:c")) == ("waiting", None)
        delay = backoff_delay(0, random.Random(7))
        assert fake_clock.next_deadline() == pytest.approx(fake_clock.now() + delay)
        await say(th.channel(), "still here?")  # the other channel keeps serving
        assert th.channel().texts() == ["ana: still here?"]
        await fake_clock.advance(delay)
        await anyio.wait_all_tasks_blocked()  # the supervisor restarted the connection, which is up again
        assert th.host.channel("crashy:c") is not None
        assert (Crashy.runs, supervisor.restarts) == (2, 1)


class Summarizer(Extension):
    """Offers a tool that makes a background model call (like a summarizer would)."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        class Instance:
            @hookimpl
            def ishiki_tools(self, runtime: Any) -> list[Tool]:
                async def summarize(args: Mapping[str, Any], tool_ctx: Any) -> str:
                    request = ModelRequest((Message.user("summarize"),), priority="background")
                    return (await runtime.models("default").generate(request)).text

                return [Tool("summarize", "Summarize.", summarize)]

        return Instance()


async def test_usage_of_a_call_outside_the_model_step_is_logged(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.push(
        Reply(tool_calls=(ScriptedCall("summarize", {}),)),
        Reply("a summary", usage=(100, 7)),
        Reply(tool_calls=(ScriptedCall("finish", {}),)),
    )
    profiles = {"ana": profile_yaml(extra="extends: {summarizer: {}}\n")}
    host = host_yaml()  # no interactive grace (its default): background calls go at once
    async with make_host(profiles=profiles, host=host, plugins={"ishiki.ext.summarizer": Summarizer}) as th:
        delivery = await say(th.channel(), "sum it up")
        runtime = delivery.runtime
        await anyio.wait_all_tasks_blocked()  # the runtime's usage writer has appended what it was given
        usage = [dict(e.data) for e in runtime.context.log.iter_forward() if e.type == "usage"]
    assert usage == [
        {
            "purpose": "background",
            "ref": "default",
            "model": "fake:fake-model",
            "input_tokens": 100,
            "output_tokens": 7,
            "estimated": False,
        }
    ]


async def test_a_runtime_can_be_woken_at_background_priority(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["reminder!"]}),))
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        bot = th.channel()
        assert th.host.services.runtimes is not None
        runtime = await th.host.services.runtimes.runtime_for("ana", "fake:bot", "private:5")
        outcome = await (await runtime.wake("Remind them of the meeting.", priority="background"))
        starts = [e.data["priority"] for e in runtime.log.iter_forward() if e.name == "turn.start"]
    assert (outcome.reason, starts) == ("sent", ["background"])
    assert [(m.channel_id, m.text) for m in bot.sent] == [("private:5", "reminder!")]


async def test_a_stopping_host_refuses_input(make_host: MakeHost) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        bot = th.channel()
    with pytest.raises(ChannelUnavailable, match="the host is stopping") as refused:
        await bot.say("too late")
    assert not refused.value.fatal  # passing: a channel retries it later, never sets the input aside for it


async def test_a_runtime_left_unfinished_resumes_at_host_start_without_new_input(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    echo(fake_openai)
    root = tmp_path / "resumed"
    home = runtime_dir(root / "data", RuntimeKey.for_channel("ana", "fake:bot", "private:1"))
    event = FakeConnection(platform="fake", self_id="bot").event("hello? (sent just before a crash)")
    async with await FactLog.open(home / "facts.jsonl") as log:
        await log.append("message", inbound_message(event, "trusted"))
    async with make_host(profiles={"ana": profile_yaml()}, root=root) as th:
        bot = th.channel()
        with anyio.fail_after(10):
            await bot.wait_sent(1)
    assert bot.texts() == ["ana: hello? (sent just before a crash)"]
