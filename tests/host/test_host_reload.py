"""Hot reload: only what changed restarts; a broken profile stops alone and comes back when fixed."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.engines import EveryMessageWakeup
from ishiki_host.testing.host import host_yaml, models_yaml
from ishiki_host.testing.host_fixtures import MakeHost
from ishiki_host.testing.registry import registry_with

pytestmark = pytest.mark.anyio

PROFILES = {"ana": profile_yaml("fake:bot: ['group:*']"), "bob": profile_yaml("fake:bot: ['private:*']")}


def echo(server: FakeOpenAIServer) -> None:
    def answer(request: RecordedRequest) -> Reply:
        system = request.json["messages"][0]["content"]
        last = [m["content"] for m in request.json["messages"] if m["role"] == "user"][-1]
        return Reply(tool_calls=(ScriptedCall("send_message", {"messages": [f"{system.split('.')[0]} | {last}"]}),))

    server.default = answer


def edit(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


async def say(th: object, text: str, channel_id: str) -> object:
    delivery = await th.channel().say(text, channel_id=channel_id)  # type: ignore[attr-defined]
    with anyio.fail_after(10):
        await delivery.settled()
    return delivery


async def test_editing_one_profile_restarts_only_that_profile(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    echo(fake_openai)
    async with make_host(profiles=PROFILES) as th:
        await say(th, "hi", "group:1")
        await say(th, "hi", "private:1")
        ana, bob = th.host.routes.get("ana"), th.host.routes.get("bob")
        ana_runtime = next(iter(ana.runtimes.values()))  # type: ignore[union-attr]
        edit(th.root / "profiles" / "bob" / "persona.md", "You are Bob the Second.")
        report = await th.host.reload()
        await say(th, "again", "group:1")
        await say(th, "again", "private:1")
        assert (report.activated, report.stopped, report.gateway_rebuilt) == (["bob"], [], False)
        assert th.host.routes.get("ana") is ana
        assert next(iter(ana.runtimes.values())) is ana_runtime  # type: ignore[union-attr]
        assert th.host.routes.get("bob") is not bob
        texts = th.channel().texts()
    ana_text, bob_text = "You are ana, a test persona", "You are bob, a test persona"
    assert texts == [f"{ana_text} | hi", f"{bob_text} | hi", f"{ana_text} | again", "You are Bob the Second | again"]


async def test_a_profile_edited_into_invalid_yaml_stops_alone_and_returns_when_fixed(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo(fake_openai)
    async with make_host(profiles=PROFILES) as th:
        await say(th, "hi", "private:1")
        file = th.root / "profiles" / "bob" / "profile.yml"
        good = file.read_text(encoding="utf-8")
        with caplog.at_level(logging.ERROR, logger="ishiki_host.host"):
            edit(file, "model: [default\n")
            broken = await th.host.reload()
        assert broken.stopped == ["bob"]
        assert th.host.routes.get("bob") is None
        assert "profile bob is invalid" in caplog.text
        assert "profiles/bob/profile.yml:" in caplog.text
        unrouted = await th.channel().say("anyone?", channel_id="private:1")
        await say(th, "still here", "group:1")  # ana keeps serving
        edit(file, good)
        fixed = await th.host.reload()
        await say(th, "back?", "private:1")
        texts = th.channel().texts()
    assert (unrouted.routed, fixed.activated) == (False, ["bob"])
    assert texts[-2:] == ["You are ana, a test persona | still here", "You are bob, a test persona | back?"]


async def test_a_models_change_restarts_only_profiles_whose_model_changed(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    echo(fake_openai)
    two = "\ngroups:\n  second:\n    models: [fake:two]\n"
    models = models_yaml(fake_openai, models=("one", "two")) + two.split("\n", 1)[1].replace("groups:\n", "")
    profiles = {"ana": PROFILES["ana"], "bob": PROFILES["bob"].replace("model: default", "model: second")}
    async with make_host(profiles=profiles, models=models) as th:
        await say(th, "hi", "group:1")
        ana = th.host.routes.get("ana")
        gateway = th.host.gateways.gateway
        edit(
            th.root / "models.yaml", models.replace("      - id: two", "      - id: two\n        context_window: 4096")
        )
        report = await th.host.reload()
        await say(th, "after", "group:1")
        assert (report.gateway_rebuilt, report.activated) == (True, ["bob"])
        assert th.host.routes.get("ana") is ana
        assert th.host.gateways.gateway is not gateway
        assert th.host.routes.get("bob").parts.context_window == 4096  # type: ignore[union-attr]
        assert gateway.status()["providers"]["fake"]["calls"] == 1  # the new gateway served "after"
        assert th.channel().texts()[-1] == "You are ana, a test persona | after"


async def test_a_waiting_profile_starts_once_its_plugin_is_installed(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    echo(fake_openai)
    later = profile_yaml("fake:bot: ['*']").replace("engine: every", "engine: later")
    async with make_host(profiles={"ana": later}) as th:
        assert th.host.config.profile("ana").state == "waiting"  # type: ignore[union-attr]
        assert th.host.routes.get("ana") is None
        th.registry = registry_with({"ishiki.engine.wakeup.later": EveryMessageWakeup}, th.registry)
        report = await th.host.reload()
        await say(th, "hello", "private:1")
        assert report.activated == ["ana"]
        assert th.channel().texts() == ["You are ana, a test persona | hello"]


async def test_the_watcher_reloads_on_its_own(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, fake_clock: FakeClock
) -> None:
    echo(fake_openai)
    async with make_host(profiles=PROFILES, host=host_yaml(reload_interval=2), clock=fake_clock) as th:
        bob = th.host.routes.get("bob")
        edit(th.root / "profiles" / "bob" / "persona.md", "You are Bob, reloaded.")
        with anyio.fail_after(10):
            while th.host.routes.get("bob") is bob:
                await fake_clock.advance(2)
                await anyio.wait_all_tasks_blocked()
        await say(th, "hi", "private:1")
        assert th.channel().texts() == ["You are Bob, reloaded | hi"]


async def test_a_new_channel_account_starts_on_reload(make_host: MakeHost, fake_openai: FakeOpenAIServer) -> None:
    echo(fake_openai)
    profiles = {"ana": profile_yaml("fake:bot: ['*']\nfake:two: ['*']")}
    async with make_host(profiles=profiles) as th:
        assert th.host.channel("fake:two") is None
        edit(th.root / "ishiki.yaml", host_yaml("[{self_id: bot}, {self_id: two}]"))
        await th.host.reload()
        delivery = await th.channel("fake:two").say("hello two", channel_id="private:3")
        with anyio.fail_after(10):
            await delivery.settled()
        assert th.channel("fake:two").texts() == ["You are ana, a test persona | hello two"]
