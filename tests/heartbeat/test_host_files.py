"""heartbeats.json on a running Host (re-synced on the reload tick, bad JSON keeps what is stored, ``ishiki
check``), ``/beats``, cross mode, and hosts without heartbeats (``__clear_images__`` on a real host:
``test_attachment_retention``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.heartbeat import HeartbeatInstance, next_run_for
from ishiki_host.plugins.commands import CommandTable
from ishiki_host.runtime.command_runner import run_command
from ishiki_host.store import BeatSpec, BeatTarget
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall, TestHost, profile_yaml
from ishiki_host.testing.host import host_yaml

pytestmark = pytest.mark.anyio

BeatHostFactory = Callable[..., Any]
TARGET = {"profile": "ana", "sid": "fake:bot", "channel": "private:7"}
HANG = 20.0


def beat(beat_id: str, text: str, cron: str = "0 9 * * *", **extra: Any) -> dict[str, Any]:
    return {"id": beat_id, "text": text, "cron": cron, "type": "reminder", "target": TARGET, **extra}


def says(server: FakeOpenAIServer) -> None:
    """Every turn sends the beat's quoted text (or "ok"), to the chat the prompt names in cross mode."""

    def answer(request: RecordedRequest) -> Reply:
        last = str(request.json["messages"][-1]["content"])
        quoted = [line[2:] for line in last.splitlines() if line.startswith("> ")]
        arguments: dict[str, Any] = {"messages": [quoted[0] if quoted else "ok"]}
        if "give send_message the target " in last:
            arguments["target"] = json.loads(last.rsplit("the target ", 1)[1].rstrip("."))
        return Reply(tool_calls=(ScriptedCall("send_message", arguments),))

    server.default = answer


async def test_heartbeats_json_edited_while_running_is_synced_on_the_reload_tick(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer, beats_file: Any
) -> None:
    says(fake_openai)
    files = {"heartbeats.json": beats_file(beat("a", "first text"), beat("gone", "dropped soon"))}
    host = host_yaml(reload_interval=2)
    async with beat_host(profiles={"ana": profile_yaml()}, files=files, host=host) as bh:
        await bh.store.heartbeats.add(BeatSpec("b-mine01", "a user beat", "task", "0 7 * * *"), next_run=None)
        synced = bh.service.syncs
        (bh.th.root / "heartbeats.json").write_text(
            beats_file(beat("a", "changed text"), beat("new", "added later", "15 23 * * *")), encoding="utf-8"
        )
        await bh.clock.advance(2)
        with anyio.fail_after(HANG):
            await bh.service.wait_synced(synced)
        stored = {b.id: b for b in await bh.store.heartbeats.find()}
        assert sorted(stored) == ["__clear_images__", "a", "b-mine01", "new"]  # the clean-up is seeded
        assert stored["a"].text == "changed text"
        await bh.run_to(await bh.next_run("new"))  # 23:15, the same evening: the re-armed timer runs it
        assert bh.th.channel().texts() == ["added later"]


async def test_heartbeats_json_that_is_not_json_keeps_the_managed_beats(
    beat_host: BeatHostFactory, beats_file: Any
) -> None:
    files = {"heartbeats.json": beats_file(beat("kept", "still here"))}
    async with beat_host(profiles={"ana": profile_yaml()}, files=files) as bh:
        (bh.th.root / "heartbeats.json").write_text('[{"id": "kept",\n  oops}]', encoding="utf-8")
        await bh.th.host.reload()
        assert [b.id for b in await bh.store.heartbeats.find(managed=True)] == ["__clear_images__", "kept"]
        assert bh.service.last_sync is not None
        [error] = bh.service.last_sync.errors
        assert error.line == 2
        assert "not valid JSON" in error.message
        assert "the managed beats are kept as they were" in error.message


def test_ishiki_check_reports_heartbeats_json_errors(
    run_ishiki: Any, write_config: Any, profile_files: Any, echo_models: str
) -> None:
    console = "model: default\nchannels:\n  console:local: ['*']\n"
    good = {"id": "ok", "text": "t", "cron": "0 9 * * *", "type": "task",
            "target": {"profile": "p", "sid": "console:local", "channel": "private:local"}}  # fmt: skip
    bad = {**good, "id": "bad", "cron": "0 25 * * *"}
    root = write_config({"models.yaml": echo_models, **profile_files("p", console),
                         "heartbeats.json": json.dumps([good, bad])})  # fmt: skip
    done = run_ishiki("check", str(root), "--json", plugins=True)
    report = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    assert report["ok"] is False
    assert report["heartbeats"] == {
        "file": str(root / "heartbeats.json"),
        "found": True,
        "beats": 1,
        "errors": [{"file": str(root / "heartbeats.json"), "line": None, "path": "[1]",
                    "message": "beat 'bad': cron '0 25 * * *': bad hour field '25'"}],
    }  # fmt: skip
    (root / "heartbeats.json").write_text("[{", encoding="utf-8")
    text = run_ishiki("check", str(root), plugins=True)
    assert text.returncode == 1
    assert "heartbeats.json: 1 error (0 beats)" in text.stdout
    assert "heartbeats.json:1: [0]: not valid JSON: the file ends inside an object opened at line 1" in text.stdout
    (root / "heartbeats.json").write_text(json.dumps([good]), encoding="utf-8")
    assert run_ishiki("check", str(root), plugins=True).returncode == 0


@dataclass
class Ctx:
    """A ``CommandContext`` with what ``/beats`` uses."""

    runtime: Any
    channel: str = "fake:bot private:7"
    sender: str = "fake:1"
    trust: str = "trusted"
    replies: list[str] | None = None

    async def reply(self, text: str) -> None:
        self.replies = [*(self.replies or []), text]


def heartbeat_instance(runtime: Any) -> HeartbeatInstance:
    return next(i for i in runtime._extensions.instances if isinstance(i, HeartbeatInstance))


async def test_slash_beats_lists_the_beats_of_the_runtime(beat_host: BeatHostFactory, beats_file: Any) -> None:
    elsewhere = {**beat("other", "elsewhere"), "target": {**TARGET, "channel": "private:8"}}
    files = {"heartbeats.json": beats_file(beat("standup", "Ask for the standup", "0 10 * * 1-5"), elsewhere)}
    async with beat_host(profiles={"ana": profile_yaml()}, files=files) as bh:
        runtime = await bh.th.host.runtime_for("ana", "fake:bot", "private:7")
        spec = BeatSpec("b-00000a", "stretch, your back hurts", "reminder", "0 9 * * *", target=None)
        when = next_run_for(spec, default_tz="UTC", after=bh.clock.now())
        await bh.store.heartbeats.add(spec, next_run=when, created_by="ana/fake:bot/private:7")
        table = CommandTable()
        table.register_all(heartbeat_instance(runtime).ishiki_commands(runtime), source="heartbeat")
        ctx = Ctx(runtime.context)
        result = await run_command(table, ctx, "/beats")
        refused = await run_command(table, Ctx(runtime.context, trust="untrusted"), "/BEATS")
    assert result is not None
    assert result.status == "ok"
    assert ctx.replies == [
        "2 beats:\n"
        "- b-00000a: reminder, cron '0 9 * * *' (UTC), next Wed 2023-11-15 09:00 UTC, to no chat (output recorded "
        "only): stretch, your back hurts\n"
        "- standup [from heartbeats.json]: reminder, cron '0 10 * * 1-5' (UTC), next Wed 2023-11-15 10:00 UTC, to "
        "ana in fake:bot private:7: Ask for the standup"
    ]
    assert refused is not None
    assert (refused.status, refused.reply) == (
        "refused",
        "Sorry, /beats is only for people I trust.",
    )


async def test_cross_mode_beats_speak_in_the_chat_they_were_made_in(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        if request.json["messages"][-1]["role"] == "user" and "[Scheduled " not in str(request.json["messages"][-1]):
            arguments = {"text": "feed the cat", "cron": "0 18 * * *", "type": "reminder"}
            return Reply(tool_calls=(ScriptedCall("set_beat", arguments),))
        if request.json["messages"][-1]["role"] == "tool":
            return Reply(tool_calls=(ScriptedCall("finish", {}),))
        return says_reply(request)

    says(fake_openai)
    says_reply = fake_openai.default
    fake_openai.default = answer
    async with beat_host(profiles={"ana": profile_yaml(mode="cross")}) as bh:
        delivery = await bh.th.channel().say("remind me to feed the cat at six", channel_id="private:7")
        with anyio.fail_after(HANG):
            await delivery.settled()
        [made] = await bh.store.heartbeats.find(created_by="ana/main")
        assert made.target == BeatTarget("ana", "fake:bot", "private:7")
        await bh.run_to(await bh.next_run(made.id))
        assert [(m.channel_id, m.text) for m in bh.th.channel().sent] == [("private:7", "feed the cat")]


async def test_a_profile_with_heartbeats_off_gets_no_beat_tools_and_no_beats(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer, beats_file: Any
) -> None:
    files = {"heartbeats.json": beats_file(beat("a", "x"))}
    off = profile_yaml(extra="extends: {heartbeat: {enable: false}}\n")
    async with beat_host(profiles={"ana": off}, files=files) as bh:
        delivery = await bh.th.channel().say("hi", channel_id="private:7")
        with anyio.fail_after(HANG):
            await delivery.settled()
        assert bh.service.last_sync is not None
        assert [e.message for e in bh.service.last_sync.errors] == [
            "beat 'a': target: profile 'ana' turns heartbeats off (extends: {heartbeat: {enable: false}})"
        ]
    offered = {t["function"]["name"] for t in fake_openai.last_request.json["tools"]}
    assert "set_beat" not in offered


async def test_a_corrupt_memory_database_leaves_the_host_running_without_heartbeats(
    make_host: Any, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    off = "Heartbeats are not running on this host: the memory database is not open (see the host log)."
    th: TestHost = make_host(profiles={"ana": profile_yaml()}, files={"data/memory.db": "not a database at all"})
    async with th:
        assert th.host.heartbeats is None
        assert th.host.services.memory is None
        delivery = await th.channel().say("/beats")
        with anyio.fail_after(HANG):
            await delivery.settled()
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        ctx = Ctx(runtime, channel="fake:bot private:1")
        instance = heartbeat_instance(runtime)
        assert instance.ishiki_tools(runtime) == ()
        assert await instance.beats_command(ctx, "") == off
        assert th.channel().texts() == [off]  # the command gate answers /beats; no model turn
        assert fake_openai.requests == []
    assert (th.root / "data" / "memory.db").read_text(encoding="utf-8") == "not a database at all"
