"""What a host plugin's context offers on a real Host: the loaded profiles, the live runtimes and their tools,
the heartbeats, the log tail, the installed entry points; and the shared objects a channel meets it in."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

import anyio
import pytest
from anyio.abc import TaskStatus

from ishiki_host import BeatSpec, BeatTarget, HostPlugin, HostPluginContext, PluginConfig, RuntimeKey
from ishiki_host.testing import MakeHost, host_yaml, profile_yaml

pytestmark = pytest.mark.anyio

KEY = RuntimeKey.for_channel("ana", "fake:bot", "private:7")
BAD_PROFILE = "model: default\nmode: sideways\nchannels: {}\n"


class Life:
    """One life of the test plugin: it keeps its context where the test reads it, and waits."""

    def __init__(self, owner: type[Peek], ctx: HostPluginContext):
        self.owner = owner
        self.ctx = ctx

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        self.owner.contexts.append(self.ctx)
        self.ctx.logger.warning("peek is up")
        task_status.started()
        await anyio.sleep_forever()


class Peek(HostPlugin):
    """A host plugin that only shows its context to the test."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "object", "additionalProperties": False}
    contexts: ClassVar[list[HostPluginContext]]

    def create(self, ctx: HostPluginContext, config: PluginConfig) -> Life:
        return Life(type(self), ctx)


def peek() -> type[Peek]:
    return type("Peek", (Peek,), {"contexts": []})


def start(make_host: MakeHost, cls: type[Peek], **options: Any) -> Any:
    profiles = options.pop("profiles", {"ana": profile_yaml()})
    host = host_yaml(extra="plugins:\n  peek: {}\n")
    return make_host(profiles=profiles, host=host, plugins={"ishiki.host.peek": cls}, **options)


async def test_profiles_carry_the_loaded_profile_and_none_for_one_that_did_not_load(make_host: MakeHost) -> None:
    cls = peek()
    async with start(make_host, cls, profiles={"ana": profile_yaml(), "bo": BAD_PROFILE}):
        (ctx,) = cls.contexts
        ana, bo = ctx.profiles()
    assert (ana.id, ana.state) == ("ana", "ready")
    assert ana.profile is not None
    assert ana.profile.id == "ana"
    assert ana.profile.persona == "You are ana, a test persona."
    assert (bo.id, bo.state, bo.profile) == ("bo", "invalid", None)


async def test_a_runtime_is_seen_only_while_it_runs_and_is_never_spawned(make_host: MakeHost) -> None:
    cls = peek()
    async with start(make_host, cls) as th:
        (ctx,) = cls.contexts
        assert ctx.runtime(KEY) is None
        assert await ctx.tools(KEY) is None
        assert th.host.routes.get("ana").runtimes == {}  # asking spawned nothing
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:7")
        seen = ctx.runtime(KEY)
        tools = await ctx.tools(KEY)
        other = ctx.runtime(RuntimeKey.for_channel("ana", "fake:bot", "private:8"))
        unknown = ctx.runtime(RuntimeKey.for_cross("nobody"))
        await runtime.stop("test")
        after = ctx.runtime(KEY)
    assert seen is runtime.context
    assert tools is not None
    assert {"send_message", "set_beat", "list_beats"} <= {tool.name for tool in tools}
    assert [t.name for t in tools] == [t.name for t in await runtime.tool_surface()]  # what /tools lists
    assert (other, unknown, after) == (None, None, None)


async def test_the_heartbeats_make_user_beats_and_name_where_managed_ones_come_from(
    make_host: MakeHost, beats_json: str
) -> None:
    cls = peek()
    async with start(make_host, cls, files={"heartbeats.json": beats_json}) as th:
        (ctx,) = cls.contexts
        admin = ctx.heartbeats
        assert admin is not None
        assert ctx.heartbeats is admin  # one admin per host
        target = BeatTarget("ana", "fake:bot", "private:7")
        made = await admin.create(
            BeatSpec("tea", "Time for tea", "reminder", "0 16 * * *", target=target), created_by="dashboard:ana"
        )
        beats = {beat.id: beat for beat in await admin.beats()}
        sources = {beat_id: admin.source(beat) for beat_id, beat in beats.items()}
        stored = await th.host.heartbeats.store.heartbeats.get("tea")
    assert made.created_by == "dashboard:ana"
    assert not made.managed
    assert not admin.paused(made)
    assert stored == made
    assert sources == {
        "stretch": str(th.root / "heartbeats.json"),
        "__clear_images__": "ishiki.yaml",  # seeded from attachments.retention (30d by default)
        "tea": None,
    }


async def test_a_host_whose_memory_database_did_not_open_has_no_heartbeats(make_host: MakeHost) -> None:
    cls = peek()
    async with start(make_host, cls, files={"data/memory.db": "not a database at all"}) as th:
        (ctx,) = cls.contexts
        assert th.host.services.memory is None
        assert ctx.heartbeats is None


async def test_the_log_tail_keeps_the_hosts_lines_from_its_start_and_is_removed_at_its_stop(
    make_host: MakeHost,
) -> None:
    cls = peek()
    before = len(logging.getLogger().handlers)
    async with start(make_host, cls):
        (ctx,) = cls.contexts
        logging.getLogger("ishiki_channel_telegram.test").error("a channel package's own line")
        lines = ctx.logs.recent(min_level="WARNING")
        installed = len(logging.getLogger().handlers)
    assert ("WARNING", "ishiki_host.hostplugin.peek", "peek is up") in [(x.level, x.logger, x.message) for x in lines]
    assert lines[-1].logger == "ishiki_channel_telegram.test"
    assert [line.seq for line in lines] == sorted(line.seq for line in lines)
    assert installed == before + 2  # the log tail and the error count of the report's activity
    assert len(logging.getLogger().handlers) == before
    last = ctx.logs.last_seq
    logging.getLogger("ishiki_host.test").error("after the stop")
    assert ctx.logs.last_seq == last


async def test_installed_lists_every_entry_point_as_ishiki_plugins_does(make_host: MakeHost) -> None:
    cls = peek()
    async with start(make_host, cls) as th:
        (ctx,) = cls.contexts
        installed = ctx.installed()
        records = th.host.config.registry.records
    assert [(p.group, p.name) for p in installed] == sorted((p.group, p.name) for p in installed)
    assert [(p.group, p.name, p.target, p.error) for p in installed] == [
        (r.group, r.name, r.target, r.error) for r in records
    ]
    mine = next(p for p in installed if (p.group, p.name) == ("ishiki.host", "peek"))
    assert mine.target.endswith(":Peek")
    assert mine.distribution == "tests"
    assert any(p.group == "ishiki.ext" and p.name == "heartbeat" for p in installed)


async def test_a_channel_shares_the_hosts_objects_with_the_host_plugins(make_host: MakeHost) -> None:
    cls = peek()
    async with start(make_host, cls) as th:
        (ctx,) = cls.contexts
        channel_host = th.channel().host
        assert channel_host is not None
        assert channel_host.shared is th.host.services
        assert channel_host.shared is ctx.services


@pytest.fixture
def beats_json() -> str:
    return (
        '[{"id": "stretch", "text": "stand up", "cron": "0 9 * * *", "type": "reminder", '
        '"target": {"profile": "ana", "sid": "fake:bot", "channel": "private:7"}}]'
    )
