"""What the test kit's fakes offer beyond the basics: ``FakeHostPluginContext``'s runtimes, tools, heartbeats,
log tail and installed plugins, all the test's to set; ``FakeChannelHost.shared``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from ishiki_host import Beat, HostPluginContext, InstalledPlugin, RuntimeKey, ServiceKey, SharedObjects
from ishiki_host.core.clock import FakeClock
from ishiki_host.heartbeat import HeartbeatService, admin_for
from ishiki_host.store import MemoryStore
from ishiki_host.testing import FakeChannelHost, FakeHostPluginContext, HostLogTail, RuntimeHarnessFactory

pytestmark = pytest.mark.anyio

KEY = RuntimeKey.for_channel("ana", "fake:bot", "private:7")


class Hub:
    """Something a channel and a host plugin of one package share."""


def test_by_default_nothing_runs_nothing_is_installed_and_the_tail_is_empty(tmp_path: Path) -> None:
    ctx: HostPluginContext = FakeHostPluginContext(tmp_path)
    assert ctx.runtime(KEY) is None
    assert ctx.heartbeats is None
    assert ctx.installed() == ()
    assert isinstance(ctx.logs, HostLogTail)
    assert ctx.logs.recent() == ()


async def test_runtimes_and_tools_are_what_the_test_set(tmp_path: Path, runtime_harness: RuntimeHarnessFactory) -> None:
    rt = await runtime_harness(kernel_tools=True)
    ctx = FakeHostPluginContext(tmp_path)
    assert await ctx.tools(rt.key) is None
    ctx.runtimes[rt.key] = rt.context
    ctx.tool_surfaces[rt.key] = await rt.tool_surface()
    assert ctx.runtime(rt.key) is rt.context
    tools = await ctx.tools(rt.key)
    assert tools is not None
    assert "send_message" in {tool.name for tool in tools}
    entry = await rt.context.log.append("custom", {"kind": "test.seen"})
    view = await ctx.runtime_log(rt.key)  # its log, read-only, as a supervisor's plugin reads a worker's
    assert view is not None
    assert [e.id for e in await view.since(entry.id - 1, limit=5)] == [entry.id]
    assert await ctx.runtime_log(KEY) is None


async def test_the_log_tail_is_real_and_fed_by_the_test(tmp_path: Path) -> None:
    ctx = FakeHostPluginContext(tmp_path)
    ctx.logs.write("INFO", "started")
    line = ctx.logs.write("WARNING", "disk almost full", logger="ishiki_host.store")
    with anyio.fail_after(10):
        await ctx.logs.wait_after(1)
    assert ctx.logs.recent(min_level="WARNING") == (line,)
    with ctx.logs.installed(ctx.logger):
        ctx.logger.error("the plugin's own line")
    assert ctx.logs.recent(1)[0].message == "the plugin's own line"


def test_installed_plugins_are_sorted_as_the_host_sorts_them(tmp_path: Path) -> None:
    given = (InstalledPlugin("ishiki.host", "board", "b:B"), InstalledPlugin("ishiki.channel", "tg", "t:T", error="x"))
    ctx = FakeHostPluginContext(tmp_path, installed=given)
    assert [(p.group, p.name) for p in ctx.installed()] == [("ishiki.channel", "tg"), ("ishiki.host", "board")]
    ctx.installed_plugins = ()
    assert ctx.installed() == ()


async def test_a_real_heartbeat_admin_can_be_given(tmp_path: Path, beat_service: HeartbeatService) -> None:
    admin = admin_for(beat_service)
    ctx = FakeHostPluginContext(tmp_path, heartbeats=admin)
    assert ctx.heartbeats is admin
    ctx.heartbeat_admin = None
    assert ctx.heartbeats is None


def test_a_fake_channel_host_has_shared_objects_of_its_own_or_the_ones_given(tmp_path: Path) -> None:
    key = ServiceKey("test.hub", Hub)
    alone = FakeChannelHost(tmp_path / "a")
    assert isinstance(alone.shared, SharedObjects)
    assert alone.shared is not FakeChannelHost(tmp_path / "b").shared
    plugin = FakeHostPluginContext(tmp_path / "plugin")
    channel = FakeChannelHost(tmp_path / "c", shared=plugin.services)
    assert channel.shared.setdefault(key, Hub) is plugin.services.get(key)


class NoRunner:
    """A ``BeatRunner`` for a scheduler that is never started."""

    async def run(self, beat: Beat, prompt: str) -> str:
        raise AssertionError("no beat runs here")


@pytest.fixture
async def beat_service(tmp_path: Path, fake_clock: FakeClock) -> AsyncIterator[HeartbeatService]:
    """A ``HeartbeatService`` over a real store, never started (an admin needs only its parts)."""
    async with await MemoryStore.open(tmp_path / "data" / "memory.db", clock=fake_clock) as store:
        yield HeartbeatService(
            store, NoRunner(), config_dir=tmp_path, data_dir=tmp_path / "data", default_tz="UTC", clock=fake_clock,
            target_validator=lambda target: None,
        )  # fmt: skip
