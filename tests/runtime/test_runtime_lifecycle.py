"""A runtime's life: stop and dispose always run, crash recovery answers once and resends nothing, a message
a turn never saw is answered after it, a failed start is reported and cleaned up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host import hookimpl
from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.channels.inbound import inbound_message
from ishiki_host.config.profile_types import ExtensionUse, Profile
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.errors import RuntimeStartFailed
from ishiki_host.runtime.parts import EngineUse, ProfileParts, SharedParts
from ishiki_host.runtime.runtime import AgentRuntime
from ishiki_host.testing import EveryMessageWakeup, FakeConnection, RuntimeHarness
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call

pytestmark = pytest.mark.anyio

CONSOLE = FakeConnection(platform="console", self_id="local")


class Recorder:
    """An extension instance that records its life in a shared list; it may raise in stop."""

    def __init__(self, name: str, events: list[str], *, raise_in_stop: bool = False):
        self.name = name
        self.events = events
        self.raise_in_stop = raise_in_stop

    @hookimpl
    def ishiki_attach(self) -> Any:
        self.events.append(f"attach {self.name}")
        return lambda: self.events.append(f"dispose {self.name}")

    @hookimpl
    async def ishiki_stop(self) -> None:
        self.events.append(f"stop {self.name}")
        if self.raise_in_stop:
            raise RuntimeError(f"{self.name} fails to stop")


class RecordingWakeup:
    """A wakeup provider whose instances record attach, reconsider and dispose."""

    def __init__(self, events: list[str]):
        self.events = events

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        events = self.events

        class Instance:
            def attach(self, ctx: Any) -> Any:
                events.append("wakeup attach")
                return lambda: events.append("wakeup dispose")

            async def reconsider(self, entries: Sequence[Entry]) -> None:
                events.append(f"reconsider {[e.id for e in entries]}")

        return Instance()


async def test_stop_and_dispose_always_run_even_when_one_extension_raises(tmp_path: Path) -> None:
    events: list[str] = []
    async with RuntimeHarness(tmp_path, model=ScriptedModel([]), wakeup=RecordingWakeup(events)) as rt:
        await rt.mount_extension(Recorder("a", events, raise_in_stop=True), "a")
        await rt.mount_extension(Recorder("b", events), "b")
        log = rt.log
    assert events == [
        "wakeup attach",
        "attach a",
        "attach b",
        "stop a",
        "stop b",
        "dispose b",
        "dispose a",
        "wakeup dispose",
    ]
    assert log.closed


async def test_stop_lets_the_running_turn_finish_within_the_grace(tmp_path: Path) -> None:
    release = anyio.Event()

    async def slow(request: ModelRequest) -> ModelResult:
        await release.wait()
        return reply("done at last")

    async with RuntimeHarness(tmp_path, model=FunctionModel(slow), kernel_tools=True) as rt:
        handle = await rt.context.wake("work")
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.stop)
            await anyio.wait_all_tasks_blocked()
            assert rt.state == "stopping"
            release.set()
        outcome = await handle
    assert (outcome.status, rt.channel.texts()) == ("done", ["done at last"])


async def test_a_stop_past_the_grace_aborts_the_turn_and_marks_it_for_resumption(tmp_path: Path) -> None:
    async def never(request: ModelRequest) -> ModelResult:
        await anyio.sleep_forever()
        raise AssertionError

    async with RuntimeHarness(tmp_path, model=FunctionModel(never)) as rt:
        handle = await rt.context.wake("work")
        await rt.stop(grace=0)
        outcome = await handle
    async with await FactLog.open(tmp_path / "facts.jsonl") as log:
        end = [e.data for e in log.iter_forward() if e.name == "turn.aborted"]
    assert outcome.status == "aborted"
    assert end == [{"name": "turn.aborted", "reason": "shutdown", "steps": 1, "resume": True}]


async def write_log(path: Path, entries: list[tuple[str, dict[str, Any], int | None]]) -> None:
    async with await FactLog.open(path) as log:
        for kind, data, turn in entries:
            await log.append(kind, data, turn=turn)


def inbound(text: str) -> dict[str, Any]:
    return inbound_message(CONSOLE.event(text, channel_id="private:local", user_id="local"), "owner")


async def test_after_a_crash_before_any_reply_the_message_is_answered_once(tmp_path: Path) -> None:
    await write_log(
        tmp_path / "facts.jsonl",
        [("message", inbound("are you there?"), None), ("event", {"name": "turn.start", "triggers": []}, 1)],
    )
    model = ScriptedModel([reply("", tool_call("send_message", {"messages": ["yes, here"]}))])
    async with RuntimeHarness(tmp_path, model=model, wakeup=EveryMessageWakeup(), kernel_tools=True) as rt:
        await rt.settled()
        ends = [(e.turn, e.data["reason"]) for e in rt.log.iter_forward() if e.name and e.name != "turn.start"]
    assert rt.channel.texts() == ["yes, here"]
    assert ends == [(1, "crash"), (2, "sent")]


async def test_after_a_crash_past_a_send_nothing_is_sent_again(tmp_path: Path) -> None:
    call = tool_call("send_message", {"messages": ["the answer is 4"]}, id="call_sent")
    await write_log(
        tmp_path / "facts.jsonl",
        [
            ("message", inbound("what is 2+2?"), None),
            ("event", {"name": "turn.start", "triggers": []}, 1),
            ("message", Message.assistant("", [call]).to_dict(), 1),
            ("message", Message.tool(call, '{"ok": true, "ids": ["out-9"]}').to_dict(), 1),
        ],
    )

    def model_fn(request: ModelRequest) -> ModelResult:
        already = any(m.role == "tool" and m.tool_call_id == "call_sent" for m in request.messages)
        return reply("", tool_call("finish" if already else "send_message", {} if already else {"messages": ["4"]}))

    model = FunctionModel(model_fn)
    async with RuntimeHarness(tmp_path, model=model, wakeup=EveryMessageWakeup(), kernel_tools=True) as rt:
        await rt.settled()
        reasons = [e.data["reason"] for e in rt.log.iter_forward() if e.name in ("turn.done", "turn.aborted")]
    assert rt.channel.sent == []
    assert reasons == ["crash", "finish"]
    assert len(model.requests) == 1


async def test_the_decision_is_rerun_for_what_a_crash_left_unanswered(tmp_path: Path) -> None:
    events: list[str] = []
    await write_log(
        tmp_path / "facts.jsonl",
        [
            ("message", inbound("first"), None),
            ("event", {"name": "turn.start", "triggers": []}, 1),
            ("message", inbound("second"), 1),
        ],
    )
    async with RuntimeHarness(tmp_path, model=ScriptedModel([]), wakeup=RecordingWakeup(events)):
        pass
    assert events[:2] == ["wakeup attach", "reconsider [1, 3]"]


async def test_a_message_that_joined_a_turn_too_late_is_answered_after_it_once(tmp_path: Path) -> None:
    first_call = anyio.Event()
    release = anyio.Event()

    async def model_fn(request: ModelRequest) -> ModelResult:
        last = request.messages[-1].text
        if last == "first":
            first_call.set()
            await release.wait()
        return reply("", tool_call("send_message", {"messages": [f"re: {last}"]}))

    async with RuntimeHarness(
        tmp_path, model=FunctionModel(model_fn), wakeup=EveryMessageWakeup(), kernel_tools=True
    ) as rt:
        await rt.deliver(CONSOLE.event("first", channel_id="private:local"))
        await first_call.wait()
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.deliver, CONSOLE.event("second", channel_id="private:local"))
            await anyio.wait_all_tasks_blocked()
            release.set()
        await rt.settled()
        starts = [e for e in rt.log.iter_forward() if e.name == "turn.start"]
    assert rt.channel.texts() == ["re: first", "re: second"]
    assert len(starts) == 2


class Exploding:
    """An extension provider whose create raises."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        raise ValueError("no config for me")


async def test_a_failed_start_is_reported_and_releases_the_log(tmp_path: Path) -> None:
    events: list[str] = []
    profile = Profile(id="ana", directory=tmp_path, file=tmp_path / "profile.yml", persona="", model="m")
    parts = ProfileParts(
        profile,
        ScriptedModel([]),
        wakeup=EngineUse("recording", RecordingWakeup(events)),
        extensions=((ExtensionUse("boom"), Exploding()),),
    )
    host = SharedParts(FakeClock(), tmp_path, tmp_path, outlets=Nowhere(), models=lambda ref: ScriptedModel([]))
    runtime = AgentRuntime(RuntimeKey.for_channel("ana", "console:local", "private:local"), parts, host)
    async with anyio.create_task_group() as tg:
        with pytest.raises(RuntimeStartFailed, match="extension 'boom' failed to create its instance: no config"):
            await tg.start(runtime.run)
    assert runtime.state == "stopped"
    async with await FactLog.open(runtime.context.home / "facts.jsonl") as log:  # the lock was released
        assert log.last_id == 0
    assert events == []  # never attached, so nothing to dispose


class Nowhere:
    """Outlets with no channel."""

    def connection(self, sid: str) -> None:
        return None

    def note_sent(self, sid: str, channel_id: str, ids: Sequence[str]) -> None:
        pass


async def test_input_made_durable_just_before_a_crash_is_decided_at_start(tmp_path: Path) -> None:
    await write_log(
        tmp_path / "facts.jsonl",
        [
            ("message", inbound("earlier"), None),
            ("event", {"name": "turn.start", "triggers": []}, 1),
            ("event", {"name": "turn.done", "reason": "sent"}, 1),
            ("message", inbound("did you get this?"), None),  # then the host died, before any decision
        ],
    )
    events: list[str] = []
    async with RuntimeHarness(tmp_path, model=ScriptedModel([]), wakeup=RecordingWakeup(events)):
        pass
    assert events[:2] == ["wakeup attach", "reconsider [4]"]


async def test_input_before_a_clean_stop_is_not_decided_again(tmp_path: Path) -> None:
    await write_log(
        tmp_path / "facts.jsonl",
        [
            ("message", inbound("group chatter the persona let pass"), None),
            ("event", {"name": "runtime.stop", "reason": "idle"}, None),
        ],
    )
    events: list[str] = []
    async with RuntimeHarness(tmp_path, model=ScriptedModel([]), wakeup=RecordingWakeup(events)):
        pass
    assert events == ["wakeup attach", "wakeup dispose"]
    async with await FactLog.open(tmp_path / "facts.jsonl") as log:
        stops = [e.data for e in log.iter_forward() if e.name == "runtime.stop"]
    assert stops == [{"name": "runtime.stop", "reason": "idle"}, {"name": "runtime.stop", "reason": "shutdown"}]
