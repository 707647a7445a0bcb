"""How the host runs channel connections: a fatal ``ChannelError`` stops one channel (reported once), a passing
one restarts it, connections start side by side, and each account has its own seeded random source and state
directory."""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import ChannelError, HostConfigInvalid
from ishiki_host.host.connections import ChannelDirectory, ChannelSpec, ChannelSupervisor
from ishiki_host.testing import FakeChannelHost, FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.channels import FakeChannel, FakeConnection
from ishiki_host.testing.host import host_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


class Unreachable(ChannelError):
    """The platform cannot be reached for now."""

    fatal = False


class Refusing(FakeChannel):
    """A channel whose connections fail before they are ready, with ``Refusing.error``."""

    error: ClassVar[Exception]
    runs: ClassVar[int] = 0

    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        class Connection(FakeConnection):
            async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                Refusing.runs += 1
                raise Refusing.error

        return Connection(ctx, platform="refusing", self_id="r")


HOST = host_yaml(extra="  refusing:\n    accounts: [{}]\n")
PROFILES = {"ana": profile_yaml("fake:bot: ['*']"), "bob": profile_yaml("refusing:r: ['*']")}
PLUGINS = {"ishiki.channel.refusing": Refusing}


def answer(server: FakeOpenAIServer) -> None:
    server.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["here"]}),))


def supervisor_of(th: Any, platform: str) -> Any:
    return next(s for s in th.host.channels.supervisors() if s.spec.platform == platform)


async def test_a_fatal_channel_error_is_reported_once_and_the_rest_serves(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    answer(fake_openai)
    Refusing.error, Refusing.runs = ChannelError("account 'shop': the platform refused the token"), 0
    caplog.set_level(logging.INFO, logger="ishiki_host.channels")
    async with make_host(profiles=PROFILES, host=HOST, plugins=PLUGINS, clock=fake_clock) as th:
        delivery = await th.channel().say("still there?")
        with anyio.fail_after(10):
            await delivery.settled()
        status = th.host.channels.status()
        assert th.channel().texts() == ["here"]
    assert Refusing.runs == 1
    assert status["refusing#0"]["state"] == "failed"  # finished, nothing to restart, and still shown with why
    assert status["refusing#0"]["error"] == "ChannelError: account 'shop': the platform refused the token"
    problems = [r for r in caplog.records if "refusing" in r.getMessage() and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in problems] == [
        "channel refusing#0 failed: account 'shop': the platform refused the token (not restarted)"
    ]
    assert problems[0].exc_info is None  # a clear line, no traceback


async def test_a_passing_channel_error_restarts_the_channel_with_back_off(
    make_host: MakeHost, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    Refusing.error, Refusing.runs = Unreachable("api.example cannot be reached"), 0
    async with make_host(profiles=PROFILES, host=HOST, plugins=PLUGINS, clock=fake_clock, seed=3) as th:
        supervisor = supervisor_of(th, "refusing")
        with anyio.fail_after(5):
            await fake_clock.wait_for_sleepers(2)  # the route's idle reaper and the supervisor's back-off
        assert (supervisor.state, Refusing.runs) == ("waiting", 1)
        await fake_clock.advance(fake_clock.next_deadline() - fake_clock.now())
        await anyio.wait_all_tasks_blocked()  # the supervisor tried again, and waits once more
        assert (supervisor.state, Refusing.runs, supervisor.restarts) == ("waiting", 2, 2)
    crashes = [r for r in caplog.records if r.name == "ishiki_host.channels" and "refusing#0" in r.getMessage()]
    assert crashes
    assert all(r.exc_info is None for r in crashes)  # explained by the channel: no traceback
    assert "Unreachable: api.example cannot be reached" in crashes[0].getMessage()


class Gate:
    """Set when the fake channel's connection runs."""

    fake_running: ClassVar[anyio.Event]


class Slow(FakeChannel):
    """A channel that is ready only once the fake channel runs (it would never be, started one after the other)."""

    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        class Connection(FakeConnection):
            async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                await Gate.fake_running.wait()
                task_status.started()
                await anyio.sleep_forever()

        return Connection(ctx, platform="aslow", self_id="s")


class Announcing(FakeChannel):
    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        class Connection(FakeConnection):
            async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                Gate.fake_running.set()
                await super().run(task_status=task_status)

        return Connection(ctx, self_id=account.get("self_id", "bot"))


async def test_channels_start_side_by_side(make_host: MakeHost) -> None:
    Gate.fake_running = anyio.Event()
    host = host_yaml(extra="  aslow:\n    accounts: [{}]\n")
    profiles = {"ana": profile_yaml("fake:bot: ['*']"), "bob": profile_yaml("aslow:s: ['*']")}
    plugins = {"ishiki.channel.aslow": Slow, "ishiki.channel.fake": Announcing}
    with anyio.fail_after(10):
        async with make_host(profiles=profiles, host=host, plugins=plugins) as th:
            assert th.host.directory.sids() == ("aslow:s", "fake:bot")


async def test_each_account_has_its_own_seeded_random_source_and_state_directory(make_host: MakeHost) -> None:
    accounts = "[{self_id: a}, {self_id: b}]"
    profiles = {"ana": profile_yaml("fake:a: ['*']\nfake:b: ['*']")}

    async def draws(seed: int) -> dict[str, tuple[float, Any]]:
        async with make_host(profiles=profiles, host=host_yaml(accounts), seed=seed) as th:
            return {
                sid: (th.channel(sid).host.rng.random(), th.channel(sid).host.state_dir) for sid in ("fake:a", "fake:b")
            }

    first, second, other = await draws(5), await draws(5), await draws(6)
    assert [first[s][0] for s in first] == [second[s][0] for s in second]  # a seeded run replays
    assert first["fake:a"][0] != first["fake:b"][0]  # each account draws its own numbers
    assert [first[s][0] for s in first] != [other[s][0] for s in other]
    directories = {first[s][1] for s in first}
    assert len(directories) == 2
    assert all(d.is_dir() and d.parent.name == "fake" for d in directories)


async def test_a_connection_never_ready_is_restarted_with_a_clear_reason(tmp_path: Path, fake_clock: FakeClock) -> None:
    class Mute(FakeChannel):
        def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
            class Connection(FakeConnection):
                async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                    await anyio.sleep_forever()  # never reports readiness

            return Connection(ctx, platform="mute", self_id="m")

    spec = ChannelSpec("mute", 0, {}, Mute())
    context = FakeChannelHost(tmp_path, clock=fake_clock)
    supervisor = ChannelSupervisor(spec, context, ChannelDirectory(), fake_clock, random.Random(1), start_timeout=0.05)
    async with anyio.create_task_group() as tg:
        await tg.start(supervisor.run)  # ready once the first attempt has failed
        with anyio.fail_after(5):
            await fake_clock.wait_for_sleepers(1)  # its back-off
        assert supervisor.state == "waiting"
        assert supervisor.last_error == "ChannelNotReady: mute was not ready within 0.05 s"
        supervisor.stop()


class Counted(FakeChannel):
    """A channel whose accounts need a token; counts the connections it was asked to make."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["token"],
        "properties": {"token": {"type": "string", "minLength": 1}},
    }
    created: ClassVar[int] = 0

    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        Counted.created += 1
        if "${" in account["token"]:
            raise HostConfigInvalid("the token holds an unexpanded ${VARIABLE}", path="channels.counted.accounts[]")
        return FakeConnection(ctx, platform="counted", self_id="c")


async def test_an_account_with_an_unset_variable_is_never_started_and_its_profile_waits(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    answer(fake_openai)
    Counted.created = 0
    caplog.set_level(logging.INFO)
    host = host_yaml(extra="  counted:\n    accounts:\n      - token: ${COUNTED_TOKEN_NEVER_SET}\n")
    profiles = {"ana": profile_yaml("fake:bot: ['*']"), "bob": profile_yaml("counted:c: ['*']")}
    async with make_host(profiles=profiles, host=host, plugins={"ishiki.channel.counted": Counted}, env={}) as th:
        delivery = await th.channel().say("still there?")
        with anyio.fail_after(10):
            await delivery.settled()
        assert th.channel().texts() == ["here"]  # the other profile runs
        bob = th.host.config.profile("bob")
        assert bob is not None
        assert (bob.state, bob.missing) == ("waiting", ("channels.counted.accounts[0] (invalid in ishiki.yaml)",))
        (reason,) = bob.errors
        assert reason.path == "channels.counted.accounts[0].token"
        assert reason.file == str(th.root / "ishiki.yaml")
        assert "environment variable COUNTED_TOKEN_NEVER_SET is not set" in reason.message
        assert [s.spec.platform for s in th.host.channels.supervisors()] == ["fake"]
        assert th.host.status()["profiles"]["bob"] == "waiting"
    assert Counted.created == 0  # never started, so never restarted
    assert not [r for r in caplog.records if r.exc_info is not None]  # no traceback
    said = [r.getMessage() for r in caplog.records if r.name == "ishiki_host.host"]
    waits = said.index("profile bob waits for channels.counted.accounts[0] (invalid in ishiki.yaml)")
    assert (
        "ishiki.yaml:8: channels.counted.accounts[0].token: environment variable COUNTED_TOKEN_NEVER_SET"
        in (said[waits + 1])
    )


async def test_a_waiting_profile_runs_and_its_channel_starts_once_the_account_is_fixed(make_host: MakeHost) -> None:
    Counted.created = 0
    broken = host_yaml(extra="  counted:\n    accounts:\n      - token: ${COUNTED_TOKEN_NEVER_SET}\n")
    profiles = {"ana": profile_yaml("fake:bot: ['*']"), "bob": profile_yaml("counted:c: ['*']")}
    async with make_host(profiles=profiles, host=broken, plugins={"ishiki.channel.counted": Counted}, env={}) as th:
        assert th.host.status()["profiles"]["bob"] == "waiting"
        (th.root / "ishiki.yaml").write_text(broken.replace("${COUNTED_TOKEN_NEVER_SET}", "written-out"))
        report = await th.host.reload()
        assert report.activated == ["bob"]
        assert th.host.status()["profiles"]["bob"] == "ready"
        assert th.host.directory.sids() == ("counted:c", "fake:bot")
    assert Counted.created == 1


async def test_an_account_the_channel_refuses_as_a_config_error_is_reported_once_not_restarted(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    answer(fake_openai)
    Counted.created = 0
    host = host_yaml(extra="  counted:\n    accounts:\n      - token: $${LITERAL}\n")  # a literal ${ the host allows
    profiles = {"ana": profile_yaml("fake:bot: ['*']"), "bob": profile_yaml("counted:c: ['*']")}
    async with make_host(profiles=profiles, host=host, plugins={"ishiki.channel.counted": Counted}) as th:
        delivery = await th.channel().say("still there?")
        with anyio.fail_after(10):
            await delivery.settled()
        status = th.host.channels.status()
    assert Counted.created == 1
    assert status["counted#0"]["state"] == "failed"  # failed and finished: no restart loop, still shown
    problems = [r for r in caplog.records if "counted#0" in r.getMessage() and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in problems] == [
        "channel counted#0 failed: channels.counted.accounts[]: the token holds an unexpanded ${VARIABLE} "
        "(not restarted)"
    ]
    assert problems[0].exc_info is None
