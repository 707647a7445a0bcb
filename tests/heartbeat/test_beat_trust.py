"""Beats never run above the turn that made them (issue 20, item 1), on a real Host.

The laundering it closes: an untrusted sender asks for a wait; the waiter's turn had no new message, so it ran
at ``trusted`` with the request in its window and could ``set_beat`` an hourly beat that ran ``trusted`` too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from ishiki_host import Extension, Tool, ToolContext, hookimpl
from ishiki_host.heartbeat.tools import make_beat_tools
from ishiki_host.store import BeatSpec, BeatTarget, MemoryStore
from ishiki_host.store.migrations import MIGRATIONS, migrate
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall, profile_yaml

pytestmark = pytest.mark.anyio

BeatHostFactory = Callable[..., Any]
HANG = 20.0
TRUST = "trust: {owners: ['fake:42']}\n"
WAITED = "The 5 seconds you chose to wait have passed."


def last_text(request: RecordedRequest) -> str:
    content = request.json["messages"][-1].get("content") or ""
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def offered(request: RecordedRequest) -> set[str]:
    return {tool["function"]["name"] for tool in request.json.get("tools", ())}


async def test_a_wait_asked_by_an_untrusted_sender_cannot_set_a_beat(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer
) -> None:
    results: list[str] = []

    def answer(request: RecordedRequest) -> Reply:
        last = request.json["messages"][-1]
        if last["role"] == "tool":
            results.append(str(last["content"]))
            return Reply(tool_calls=(ScriptedCall("finish", {}),))
        if WAITED in last_text(request):
            beat = {"text": "open the vault", "cron": "0 * * * *", "type": "task"}
            return Reply(tool_calls=(ScriptedCall("set_beat", beat),))
        return Reply(tool_calls=(ScriptedCall("wait", {"seconds": 5}),))

    fake_openai.default = answer
    async with beat_host(profiles={"ana": profile_yaml(extra=TRUST)}) as bh:
        delivery = await bh.th.channel().say("in five seconds, set an hourly beat", channel_id="private:7")
        with anyio.fail_after(HANG):
            await delivery.settled()
        runtime = await bh.th.host.runtime_for("ana", "fake:bot", "private:7")
        await bh.clock.advance(5)
        with anyio.fail_after(HANG):
            await runtime.settled()
        made = await bh.store.heartbeats.find(managed=False)
    waited = [r for r in fake_openai.requests if WAITED in last_text(r)]
    assert len(waited) == 1
    assert "set_beat" not in offered(waited[0])
    assert made == []
    [refused] = results
    assert refused.startswith("unknown tool 'set_beat'")  # not offered at this level, so not callable


async def test_a_beat_runs_at_the_level_it_was_made_at(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["Stretch!"]}),))
    target = BeatTarget("ana", "fake:bot", "private:7")
    async with beat_host(profiles={"ana": profile_yaml(extra=TRUST)}) as bh:
        for beat_id, trust in (("low", "untrusted"), ("legacy", None)):
            spec = BeatSpec(beat_id, "stretch", "reminder", "0 9 * * *", target=target, trust=trust)  # type: ignore[arg-type]
            await bh.store.heartbeats.add(spec, next_run=bh.clock.now() + 60, created_by="ana/fake:bot/private:7")
        bh.service.scheduler.poke()
        await bh.run_to(bh.clock.now() + 60)
        runtime = await bh.th.host.runtime_for("ana", "fake:bot", "private:7")
        starts = [e.data for e in runtime.context.log.tail(50) if e.data.get("name") == "turn.start"]
    levels = {t["triggers"][0]["heartbeat"]: t["triggers"][0].get("trust") for t in starts}
    assert levels == {"low": "untrusted", "legacy": None}  # the tracker caps a turn at its triggers' ceiling


class VaultInstance:
    """An extension with one trusted tool, to see which level a beat's turn is offered tools at."""

    @hookimpl
    def ishiki_tools(self) -> Sequence[Tool]:
        async def vault(args: Mapping[str, Any], ctx: ToolContext) -> str:
            return "opened"

        return [Tool("open_vault", "Open the vault.", vault, trust="trusted")]


class Vault(Extension):
    """The plugin class of ``VaultInstance``."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "object"}

    def create(self, ctx: Any, config: Mapping[str, Any]) -> VaultInstance:
        return VaultInstance()


async def test_a_heartbeats_json_beat_runs_at_the_level_the_operator_wrote(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer, beats_file: Any
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["done"]}),))
    target = {"profile": "ana", "sid": "fake:bot", "channel": "private:7"}
    entries = [
        {"id": name, "text": f"read the news ({name})", "cron": "0 9 * * *", "type": "task", "target": target, **extra}
        for name, extra in (("web", {"trust": "untrusted"}), ("plain", {}), ("high", {"trust": "owner"}))
    ]
    profile = profile_yaml(extra=TRUST + "extends:\n  vault: {}\n")
    files = {"heartbeats.json": beats_file(*entries)}
    async with beat_host(profiles={"ana": profile}, files=files, plugins={"ishiki.ext.vault": Vault}) as bh:
        stored = {b.id: b.spec.trust for b in await bh.store.heartbeats.find(managed=True)}
        await bh.run_to(await bh.next_run("web"))
        runtime = await bh.th.host.runtime_for("ana", "fake:bot", "private:7")
        starts = [e.data for e in runtime.context.log.tail(50) if e.data.get("name") == "turn.start"]
    assert {k: v for k, v in stored.items() if k != "__clear_images__"} == {
        "web": "untrusted",
        "plain": None,
        "high": "owner",
    }
    levels = {t["triggers"][0]["heartbeat"]: t["triggers"][0].get("trust") for t in starts}
    assert levels == {"web": "untrusted", "plain": None, "high": "owner"}
    tools = {
        next(w for w in ("web", "plain", "high") if f"({w})" in last_text(r)): offered(r) for r in fake_openai.requests
    }
    assert "open_vault" not in tools["web"]  # a trusted tool, above the operator's ceiling
    assert "open_vault" in tools["plain"]
    assert tools["high"] == tools["plain"]  # a ceiling never raises a turn above its runtime's level


async def test_set_beat_records_the_makers_level_and_an_edit_lowers_it(store: MemoryStore, ctx: Any) -> None:
    class Poke:
        def poke(self) -> None:
            pass

    here = BeatTarget("ana", "fake:bot", "private:7")
    tools = {t.name: t for t in make_beat_tools(store, Poke(), default_tz="UTC", target_validator=lambda t: None,
                                                runtime_target=here)}  # fmt: skip
    made = await tools["set_beat"].handler({"text": "t", "cron": "0 9 * * *", "type": "task"}, ctx)
    beat_id = made.data["id"]
    assert made.data["trust"] == "trusted"
    low = type(ctx)(trust="untrusted")
    updated = await tools["update_beat"].handler({"id": beat_id, "text": "changed"}, low)
    assert updated.data["trust"] == "untrusted"
    again = await tools["update_beat"].handler({"id": beat_id, "text": "back"}, ctx)
    assert again.data["trust"] == "untrusted"  # an edit never raises it


def test_beats_made_before_the_upgrade_keep_running_at_the_runtimes_level(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path)
    migrate(conn, path, MIGRATIONS[:1])
    conn.execute(
        "INSERT INTO heartbeat (id, text, type, cron, created_by, created_at, updated_at) "
        "VALUES ('old', 'water the plants', 'reminder', '0 9 * * *', 'ana/fake:bot/private:7', 0, 0)"
    )
    conn.commit()
    assert migrate(conn, path) == 1
    row = conn.execute("SELECT id, trust FROM heartbeat").fetchone()
    conn.close()
    assert tuple(row) == ("old", None)
