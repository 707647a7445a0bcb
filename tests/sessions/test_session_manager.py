"""Sessions as fact-log entries: /clear, /compact (seeded once), failures, concurrency, carried messages."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ishiki_host import CarriedSummary, hookimpl
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.window import SUMMARY_HEADER, project_entries
from ishiki_host.errors import ModelUnavailable
from ishiki_host.memory.retrieval import memory_section
from ishiki_host.sessions.manager import SessionManager
from ishiki_host.sessions.summarizer import Summarizer
from ishiki_host.testing.models import FunctionModel, reply
from ishiki_host.testing.sessions import SessionRig

pytestmark = pytest.mark.anyio

SUMMARY = "Ana loves jasmine tea and lives in Kyoto."


def fixed_summary(request: ModelRequest) -> ModelResult:
    return reply(SUMMARY)


class Gate:
    """A model function that waits for ``release`` on every call and counts the calls."""

    def __init__(self, answer: str = SUMMARY):
        self.answer = answer
        self.calls = 0
        self.called = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResult:
        self.calls += 1
        self.called.set()
        await self.release.wait()
        return reply(self.answer)


class Recall:
    """The long-term memory section in the system prompt, as the memory extension builds it."""

    def __init__(self, rig: SessionRig, *, exclude_seed: bool = True):
        self.rig = rig
        self.exclude_seed = exclude_seed

    @hookimpl
    async def ishiki_instructions(self) -> str | None:
        sessions = self.rig.sessions
        window = await sessions.window()
        new = [e for e in window if e.data.get("role") == "user"][-1:]
        seed = await sessions.carried_memory_id()
        exclude = [seed] if self.exclude_seed and seed is not None else []
        return await memory_section(
            self.rig.store, new, profile="test", trust="owner", limit=20, session_id=sessions.session_id,
            exclude_ids=exclude,
        )  # fmt: skip


def occurrences(request: ModelRequest, needle: str) -> int:
    return sum(message.text.count(needle) for message in request.messages)


@pytest.mark.parametrize(("exclude_seed", "expected"), [(True, 1), (False, 2)])
async def test_the_next_request_carries_the_summary_once(tmp_path: Path, exclude_seed: bool, expected: int) -> None:
    persona = FunctionModel(lambda request: reply("ok"))
    async with SessionRig(tmp_path, persona=persona, summarizer=FunctionModel(fixed_summary)) as rig:
        await rig.rt.mount_extension(Recall(rig, exclude_seed=exclude_seed))
        await rig.say("Ana says she loves jasmine tea; she lives in Kyoto.")
        await rig.command("/compact")
        assert rig.replies[-1] == "Summarized the session and started a fresh one seeded with the summary."
        await rig.say("Which tea does Ana love, and where does she live?")
        request = persona.requests[-1]
        assert occurrences(request, SUMMARY) == expected
        assert request.messages[1].text == f"{SUMMARY_HEADER}\n{SUMMARY}"
        assert "jasmine tea; she lives" not in "".join(m.text for m in request.messages)  # the old session is gone


async def test_compact_writes_a_summary_memory_and_a_seeded_boundary(tmp_path: Path) -> None:
    async with SessionRig(tmp_path, summarizer=FunctionModel(fixed_summary)) as rig:
        first = rig.sessions.session_id
        await rig.say("hello", sender="telegram:9", trust="untrusted")
        await rig.say("I am Ana", sender="telegram:5", trust="trusted")
        change = await rig.sessions.compact()
        assert change.status == "compacted"
        assert change.memory is not None
        assert change.boundary is not None
        assert (change.memory.type, change.memory.content, change.memory.session_id) == ("summary", SUMMARY, first)
        assert change.memory.min_trust == "trusted"  # the highest level of the messages it covers
        data = change.boundary.data
        assert data == {"reason": "compact", "summary": SUMMARY, "upto": change.boundary.id - 2,
                        "min_trust": "trusted", "memory": change.memory.id, "chats": ["telegram:bot private:local"],
                        "senders": ["telegram:9", "telegram:5"]}  # fmt: skip
        usage = [e for e in rig.rt.log.iter_forward() if e.type == "usage"]
        assert usage[-1].data["purpose"] == "compact"
        assert usage[-1].id == change.boundary.id - 1
        current = await rig.store.sessions.current(str(rig.rt.key))
        assert current is not None
        assert current.id == rig.sessions.session_id != first
        assert (current.start_fact_id, current.start_reason, current.summary) == (
            change.boundary.id,
            "compact",
            SUMMARY,
        )
        closed = await rig.store.sessions.get(first)  # type: ignore[arg-type]
        assert closed.end_fact_id == change.boundary.id - 1
        assert closed.end_reason == "compact"
        assert await rig.sessions.carried_summary() == CarriedSummary(SUMMARY, "trusted")
        await rig.command("/memory")
        assert rig.replies[-1] == f"Summary carried into this session:\n{SUMMARY}"

        await rig.say("a secret", sender="console:local", trust="owner")
        again = await rig.sessions.compact()
        assert again.memory is not None
        assert again.memory.min_trust == "owner"
        await rig.say("bye", sender="telegram:9", trust="untrusted")
        third = await rig.sessions.compact()
        assert third.memory is not None
        assert third.memory.min_trust == "owner"


async def test_a_failed_summary_changes_nothing(tmp_path: Path) -> None:
    def down(request: ModelRequest) -> ModelResult:
        raise ModelUnavailable("connection refused", model="test:summarizer")

    async with SessionRig(tmp_path, summarizer=FunctionModel(down)) as rig:
        await rig.say("hello")
        before, session = rig.rt.log.last_id, rig.sessions.session_id
        result = await rig.command("/compact")
        assert result is not None
        assert result.status == "ok"
        assert rig.replies[-1] == "Could not summarize the session (connection refused); the session is unchanged."
        assert rig.rt.log.last_id == before
        current = await rig.store.sessions.current(str(rig.rt.key))
        assert current is not None
        assert current.id == session
        assert await rig.store.memories.count("test") == 0
        assert [e.data.get("role") for e in await rig.sessions.window() if e.type == "message"] == ["user", "assistant"]


async def test_an_empty_summary_is_a_failure(tmp_path: Path) -> None:
    async with SessionRig(tmp_path, summarizer=FunctionModel(lambda request: reply("   "))) as rig:
        await rig.say("hello")
        change = await rig.sessions.compact()
        assert change.status == "failed"
        assert "answered nothing" in change.message


async def test_clear_on_an_empty_session_writes_nothing(tmp_path: Path) -> None:
    async with SessionRig(tmp_path) as rig:
        await rig.command("/clear")
        assert rig.replies[-1] == "This session is already empty; nothing to clear."
        assert rig.rt.log.last_id == 0
        await rig.say("hello")
        await rig.command("/RESET")
        assert rig.replies[-1] == "Started a fresh session; nothing was carried over."
        boundary = rig.rt.log.tail(1)[0]
        assert (boundary.type, dict(boundary.data)) == ("session", {"reason": "clear"})
        assert await rig.sessions.window() == [boundary]
        last = rig.rt.log.last_id
        await rig.command("/clear")
        assert rig.replies[-1] == "This session is already empty; nothing to clear."
        assert rig.rt.log.last_id == last
        sessions = await rig.store.sessions.recent(str(rig.rt.key))
        assert [(s.start_fact_id, s.start_reason, s.is_open) for s in sessions] == [
            (last, "clear", True),
            (1, "start", False),
        ]


async def test_compact_on_an_empty_or_already_compacted_session(tmp_path: Path) -> None:
    async with SessionRig(tmp_path, summarizer=FunctionModel(fixed_summary)) as rig:
        assert (await rig.sessions.compact()).status == "empty"
        await rig.say("hello")
        assert (await rig.sessions.compact()).status == "compacted"
        last = rig.rt.log.last_id
        again = await rig.sessions.compact()
        assert (again.status, again.message) == ("unchanged", "Nothing new to compact since the last summary.")
        assert rig.rt.log.last_id == last
        cleared = await rig.sessions.clear()  # a seeded session is not empty: clearing drops the summary
        assert cleared.status == "cleared"
        assert await rig.sessions.carried_summary() is None


async def test_two_compactions_at_once_run_one_after_the_other(tmp_path: Path) -> None:
    gate = Gate()
    async with SessionRig(tmp_path, summarizer=FunctionModel(gate)) as rig:
        await rig.say("hello")
        async with anyio.create_task_group() as tg:
            tg.start_soon(rig.command, "/compact")
            await gate.called.wait()
            tg.start_soon(rig.command, "/compact")
            await anyio.wait_all_tasks_blocked()
            assert rig.sessions.busy
            assert rig.replies == ["I will compact the session once the current work is done."]
            gate.release.set()
        assert gate.calls == 1
        assert sorted(rig.replies[1:]) == [
            "Nothing new to compact since the last summary.",
            "Summarized the session and started a fresh one seeded with the summary.",
        ]
        assert sum(1 for e in rig.rt.log.iter_forward() if e.type == "session") == 1


async def test_compact_during_a_turn_waits_for_it(tmp_path: Path) -> None:
    turn_gate = Gate(answer="a long answer")
    async with SessionRig(tmp_path, persona=FunctionModel(turn_gate), summarizer=FunctionModel(fixed_summary)) as rig:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rig.say, "tell me a story")
            await turn_gate.called.wait()
            tg.start_soon(rig.command, "/compact")
            await anyio.wait_all_tasks_blocked()
            assert rig.replies == ["I will compact the session once the current work is done."]
            assert not any(e.type == "session" for e in rig.rt.log.iter_forward())
            turn_gate.release.set()
        entries = list(rig.rt.log.iter_forward())
        done = next(e for e in entries if e.name == "turn.done")
        boundary = next(e for e in entries if e.type == "session")
        assert boundary.id > done.id
        assert boundary.data["upto"] == done.id


async def test_messages_that_arrive_during_the_summary_are_carried(tmp_path: Path) -> None:
    gate = Gate()
    async with SessionRig(tmp_path, summarizer=FunctionModel(gate)) as rig:
        await rig.say("hello")
        async with anyio.create_task_group() as tg:
            results = []

            async def compact() -> None:
                results.append(await rig.sessions.compact())

            tg.start_soon(compact)
            await gate.called.wait()
            await rig.post("a late question", sender="telegram:5", trust="trusted")
            late = rig.rt.log.tail(1)[0]
            gate.release.set()
        change = results[0]
        assert [dict(e.data) for e in change.carried] == [{**late.data, "carried": late.id}]
        window = await rig.sessions.window()
        assert [e.type for e in window] == ["session", "message"]
        texts = [m.text for m in project_entries(window)]
        assert texts == [f"{SUMMARY_HEADER}\n{SUMMARY}", "a late question"]


async def test_a_boundary_the_table_missed_is_picked_up_at_start(tmp_path: Path) -> None:
    async with SessionRig(tmp_path) as rig:
        await rig.say("hello")
        boundary = await rig.rt.log.append("session", {"reason": "clear"})  # the host died before rotating
        manager = SessionManager(runtime_key=str(rig.rt.key), profile="test", log=rig.rt.log, agent=rig.rt.agent,
                                 store=rig.store)  # fmt: skip
        await manager.start()
        current = await rig.store.sessions.current(str(rig.rt.key))
        assert current is not None
        assert (current.start_fact_id, current.start_reason) == (boundary.id, "clear")
        assert manager.session_id == current.id
        await manager.start()  # aligned: nothing more happens
        assert len(await rig.store.sessions.recent(str(rig.rt.key))) == 2


async def test_sessions_without_a_store_or_a_summarizer(tmp_path: Path) -> None:
    async with SessionRig(tmp_path) as rig:
        bare = SessionManager(runtime_key="k", profile="test", log=rig.rt.log, agent=rig.rt.agent)
        await bare.start()
        await rig.say("hello")
        assert (await bare.compact()).message == "No summarizer is set up for this persona; the session is unchanged."
        summarizing = SessionManager(runtime_key="k", profile="test", log=rig.rt.log, agent=rig.rt.agent,
                                     summarizer=Summarizer(FunctionModel(fixed_summary)))  # fmt: skip
        change = await summarizing.compact()
        assert change.status == "compacted"
        assert change.memory is None
        assert change.boundary is not None
        assert "memory" not in change.boundary.data
        assert (await bare.clear()).status == "cleared"


async def test_a_turn_that_never_ends_times_the_command_out(tmp_path: Path) -> None:
    turn_gate = Gate(answer="never")
    rig = SessionRig(tmp_path, persona=FunctionModel(turn_gate), idle_timeout=0.05)
    async with rig, anyio.create_task_group() as tg:
        tg.start_soon(rig.say, "hi")
        await turn_gate.called.wait()
        change = await rig.sessions.clear()
        assert change.status == "failed"
        assert "still running" in change.message
        turn_gate.release.set()
