"""Every built-in command end to end on a real Host, and an extension's commands, tools and switches."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import anyio
import pytest

from ishiki_host import hookimpl
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.heartbeat.tools import BEAT_TOOL_NAMES as BEATS
from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.plugins.base import Extension
from ishiki_host.plugins.commands import Command, CommandContext
from ishiki_host.runtime.hostview import breaker_line
from ishiki_host.runtime.runtime import AgentRuntime
from ishiki_host.testing import Reply, ScriptedCall

pytestmark = pytest.mark.anyio

MemoryHost = Any  # the fixtures of conftest.py
Router = Any
Settle = Any


def runtime_of(delivery: object) -> AgentRuntime:
    assert isinstance(delivery, RuntimeDelivery), delivery
    return delivery.runtime


class NotesInstance:
    """A small extension: a tool, instructions, a command and a status line."""

    @hookimpl
    def ishiki_tools(self) -> Sequence[Tool]:
        async def note(args: Mapping[str, Any], ctx: ToolContext) -> str:
            return "noted"

        return [Tool("note", "Take a note.", note, trust="trusted")]

    @hookimpl
    def ishiki_instructions(self) -> str:
        return "You can take notes with the note tool."

    @hookimpl
    def ishiki_commands(self) -> Sequence[Command]:
        async def notes(ctx: CommandContext, args: str) -> str:
            return f"no notes yet, {ctx.sender}"

        return [Command("notes", notes, "List the notes.")]

    @hookimpl
    def ishiki_status(self) -> Sequence[str]:
        return ["notes: none"]


class Notes(Extension):
    """The plugin class of ``NotesInstance``."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "object"}

    def create(self, ctx: Any, config: Mapping[str, Any]) -> NotesInstance:
        return NotesInstance()


NOTES = {"ishiki.ext.notes": Notes}


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


async def test_status_shows_profile_model_breakers_summarizer_session_and_extensions(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(extra="extends:\n  notes: {}\n", plugins=NOTES) as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("hello there")))
        await channel.say("/status")
        lines = channel.texts()[-1].splitlines()
    assert lines[0] == "profile: ana (runtime ana/fake:bot/private:1)"
    assert lines[1] == "model: default (context window 128,000 tokens)"
    assert lines[2] == "  fake:fake-model: breaker closed"
    assert lines[3] == "summarizer: auto (each exchange is condensed into long-term memory)"
    assert lines[4].startswith("session: ~")
    assert lines[4].endswith(" tokens in 3 messages")
    assert lines[5:] == [
        "heartbeats: 0 beats",
        "memory: 1 memory of ana (up to 20 per turn)",
        "skills: 0",
        "notes: none",
    ]


async def test_status_says_what_the_channel_set_aside(memory_host: MemoryHost, router: Router, settle: Settle) -> None:
    async with memory_host() as th:
        channel = th.channel()
        await channel.say("/status")
        quiet = channel.texts()[-1]
        last = {"updateId": 500_000, "why": "3 tries failed:\n  RuntimeError: no"}
        channel.status = lambda: {"offset": 500_003, "setAside": 2, "lastSetAside": last}  # type: ignore[attr-defined]
        await channel.say("/status")
        told = channel.texts()[-1].splitlines()
    assert "set aside" not in quiet
    said = "channel fake:bot: 2 inputs set aside (last: 500000, 3 tries failed: RuntimeError: no)"
    assert told[5] == f"{said}; see the channel's log"


async def test_clear_on_an_empty_session_says_so_and_writes_nothing(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        runtime = runtime_of(await channel.say("/clear"))
        assert channel.texts() == ["This session is already empty; nothing to clear."]
        assert list(runtime.context.log.iter_forward()) == []
        await settle(runtime_of(await channel.say("a thing to forget")))
        store = th.host.services.memory
        assert await store.sessions.current(str(runtime.key)) is None  # nothing needed its row yet
        await channel.say("/reset")
        await settle(runtime_of(await channel.say("what did I say?")))
        assert channel.texts()[2] == "Started a fresh session; nothing was carried over."
        sessions = await store.sessions.recent(str(runtime.key))
        assert [(s.start_fact_id, s.end_fact_id) for s in sessions] == [
            (sessions[0].start_fact_id, None),
            (1, sessions[0].start_fact_id - 1),
        ]
        assert "a thing to forget" not in json.dumps(router.requests()[-1])
        await channel.say("/memory")
        assert channel.texts()[-1] == "No summary is carried into this session."


async def test_compact_seeds_the_next_request_once_and_memory_shows_it(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    router.summaries.append(Reply("Ana asked about kites; the persona explained how they fly."))
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        runtime = runtime_of(await channel.say("how do kites fly?"))
        await settle(runtime)
        await channel.say("/compact")
        assert channel.texts()[-1] == "Summarized the session and started a fresh one seeded with the summary."
        await channel.say("/compact")
        assert channel.texts()[-1] == "Nothing new to compact since the last summary."
        await settle(runtime_of(await channel.say("and birds?")))
        sent = json.dumps(router.requests()[-1])
        assert sent.count("Ana asked about kites; the persona explained how they fly.") == 1
        assert "how do kites fly?" not in sent
        await channel.say("/memory")
        assert channel.texts()[-1] == (
            "Summary carried into this session:\nAna asked about kites; the persona explained how they fly."
        )
        await channel.say("/memories summary")
        assert channel.texts()[-1].startswith("The newest 1 summary:\n#1 ")
        assert channel.texts()[-1].endswith("summary: Ana asked about kites; the persona explained how they fly.")
        assert router.count("summary") == 1


async def test_a_failed_summary_leaves_the_session_as_it_was(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_openai: Any
) -> None:
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        runtime = runtime_of(await channel.say("keep this"))
        await settle(runtime)
        before = list(runtime.context.log.iter_forward())
        router.summaries.append(Reply(""))
        await channel.say("/compact")
        assert channel.texts()[-1].startswith("Could not summarize the session (")
        assert channel.texts()[-1].endswith("the session is unchanged.")
        assert list(runtime.context.log.iter_forward()) == before
        await settle(runtime_of(await channel.say("still here?")))
        assert "keep this" in json.dumps(router.requests()[-1])


async def test_tools_disable_takes_effect_on_the_next_turn(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(summarizer="off", extra="extends:\n  notes: {}\n", plugins=NOTES) as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("first")))
        assert "note" in tool_names(router.requests()[-1])
        await channel.say("/tools")
        listing = channel.texts()[-1]
        assert "- note: on (needs trusted)" in listing
        assert "- read: on (kernel, always on)" in listing
        await channel.say("/tools disable note")
        assert channel.texts()[-1] == "Turned tool note off for ana; it applies from the next turn."
        await settle(runtime_of(await channel.say("second")))
        assert tool_names(router.requests()[-1]) == ["read", "send_message", "finish", *BEATS, "wait"]
        await channel.say("/tools disable send_message")
        assert channel.texts()[-1].startswith("send_message is a kernel tool every reply needs")
        await channel.say("/tools enable note")
        await settle(runtime_of(await channel.say("third")))
        assert "note" in tool_names(router.requests()[-1])


async def test_extensions_disable_switches_off_tools_instructions_commands_and_status(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(summarizer="off", extra="extends:\n  notes: {}\n", plugins=NOTES) as th:
        channel = th.channel()
        await channel.say("/notes")
        assert channel.texts()[-1] == "no notes yet, fake:1"
        await channel.say("/extensions disable NOTES")
        assert channel.texts()[-1] == "Turned extension notes off for ana; it applies from the next turn."
        await settle(runtime_of(await channel.say("hi")))
        body = router.requests()[-1]
        assert "note" not in tool_names(body)
        assert "take notes" not in body["messages"][0]["content"]
        await channel.say("/notes")
        assert channel.texts()[-1] == (
            "/notes belongs to the notes extension, which is switched off here (/extensions enable notes)."
        )
        await channel.say("/status")
        assert channel.texts()[-1].splitlines()[-1] == "extensions switched off: notes"
        await channel.say("/extensions")
        assert channel.texts()[-1] == "Extensions:\n- heartbeat: on\n- memory: on\n- skills: on\n- notes: off"


async def test_compact_during_a_running_turn_waits_for_it(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_answer(request: Any) -> Reply:
        started.set()
        release.wait(10)
        return Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["re: hello"]}),))

    router.turns.append(slow_answer)
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        runtime = runtime_of(await channel.say("hello"))
        assert await anyio.to_thread.run_sync(started.wait, 10)
        async with anyio.create_task_group() as tg:
            tg.start_soon(channel.say, "/compact")
            with anyio.fail_after(10):
                await channel.wait_sent(1)
            release.set()
        await settle(runtime)
        assert channel.texts() == [
            "I will compact the session once the current work is done.",
            "re: hello",
            "Summarized the session and started a fresh one seeded with the summary.",
        ]
        assert "re: hello" in json.dumps(router.requests("summary")[0])


def test_a_breaker_line_says_how_a_member_is_doing() -> None:
    assert breaker_line("a:m", {"state": "closed", "failures": 0, "last_error": None}) == "  a:m: breaker closed"
    assert breaker_line("a:m", {"state": "closed", "failures": 1, "last_error": "unavailable: refused"}) == (
        "  a:m: breaker closed, 1 failure in a row (last error: unavailable: refused)"
    )
    opened = {"state": "open", "failures": 3, "probe_in_seconds": 29.6, "last_error": "rate_limited: 429"}
    assert breaker_line("a:m", opened) == (
        "  a:m: breaker open, 3 failures in a row, probed again in 30s (last error: rate_limited: 429)"
    )
