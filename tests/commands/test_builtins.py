"""The built-in commands on a real runtime: trust gating, /whoami, /status, /memories, /tools, /extensions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ishiki_host import hookimpl
from ishiki_host.config.profile_types import ExtensionUse, Profile, SessionConfig
from ishiki_host.core.tools import Tool, ToolContext, TrustLevel
from ishiki_host.errors import CommandError, StoreError
from ishiki_host.plugins.commands import Command, CommandContext
from ishiki_host.runtime.switches import enabled_extensions, enabled_tools
from ishiki_host.testing.models import FunctionModel, reply
from ishiki_host.testing.sessions import SessionRig, StaticHostView

pytestmark = pytest.mark.anyio


def _tool(name: str, trust: TrustLevel = "trusted") -> Tool:
    async def run(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return name

    return Tool(name, f"The {name} tool.", run, trust=trust)


async def test_a_sender_below_the_level_gets_a_short_refusal(tmp_path: Path) -> None:
    async with SessionRig(tmp_path) as rig:
        result = await rig.command("/memories", sender="telegram:9", trust="untrusted")
        assert result is not None
        assert result.status == "refused"
        assert rig.replies == ["Sorry, /memories is only for people I trust."]
        for text in ("/tools", "/extensions disable memory"):
            result = await rig.command(text, sender="telegram:9", trust="untrusted")
            assert result is not None
            assert result.status == "refused"
        assert await rig.store.plugin_settings.all(profile="test") == []
        result = await rig.command("/memories", sender="telegram:5", trust="trusted")
        assert result is not None
        assert result.status == "ok"


async def test_an_owner_only_command_of_an_extension(tmp_path: Path) -> None:
    async def shutdown(ctx: CommandContext, args: str) -> str:
        return f"bye {args}"

    async with SessionRig(tmp_path) as rig:
        rig.table.register(Command("Shutdown", shutdown, "Stop.", trust="owner"), source="ishiki.ext.admin")
        refused = await rig.command("/SHUTDOWN now", sender="telegram:5", trust="trusted")
        assert refused is not None
        assert refused.reply == "Sorry, /shutdown is only for my owner."
        done = await rig.command("/shutdown now")
        assert done is not None
        assert done.reply == "bye now"


async def test_handler_failures_become_replies(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def usage(ctx: CommandContext, args: str) -> str:
        raise CommandError("That is not a colour.")

    async def broken(ctx: CommandContext, args: str) -> str:
        raise RuntimeError("boom")

    async def store(ctx: CommandContext, args: str) -> str:
        raise StoreError("disk full")

    async with SessionRig(tmp_path) as rig:
        rig.table.register_all(
            [Command("paint", usage, "Paint.", "COLOUR"), Command("oops", broken, "x"), Command("db", store, "x")],
            source="ext",
        )
        assert (await rig.command("/paint blurple")).reply == "That is not a colour.\nUsage: /paint COLOUR"  # type: ignore[union-attr]
        result = await rig.command("/oops")
        assert result is not None
        assert result.status == "failed"
        assert result.reply == "/oops failed unexpectedly; the host log has the details."
        assert "boom" in caplog.text
        assert (await rig.command("/db")).reply == "/db failed: disk full"  # type: ignore[union-attr]
        assert await rig.command("/not-a-command") is None
        assert await rig.command("just text") is None


async def test_whoami_and_status(tmp_path: Path) -> None:
    host = StaticHostView(models=["model: test:persona (breaker closed)"], extensions=["memory: 0 memories"])
    async with SessionRig(tmp_path, host=host, context_window=32_000) as rig:
        await rig.command("/whoami", sender="telegram:42", trust="trusted")
        assert rig.replies[-1] == "channel: console:local private:local\nid: telegram:42\ntrust: trusted"
        await rig.say("hello there, how are you today?")
        await rig.command("/status")
        lines = rig.replies[-1].splitlines()
        assert lines[0] == f"profile: test (runtime {rig.rt.key})"
        assert lines[1] == "model: test:persona (breaker closed)"
        assert lines[2] == "summarizer: auto (each exchange is condensed into long-term memory)"
        size = await rig.sessions.size()
        assert size.messages == 2
        assert size.tokens > 0
        assert lines[3] == f"session: ~{size.tokens:,} tokens in 2 messages"
        assert lines[4] == "memory: 0 memories"


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("auto", "each exchange is condensed into long-term memory"),
        ("manual", "compaction at 80% of 32,000 tokens"),
        ("off", "no automatic summaries or compaction; /compact or /clear when the conversation gets long"),
    ],
)
async def test_status_says_what_the_summarizer_mode_does(tmp_path: Path, mode: str, says: str) -> None:
    profile = Profile(
        id="test",
        directory=tmp_path,
        file=tmp_path / "profile.yml",
        persona="You are a test persona.",
        model="test",
        extends=(ExtensionUse("memory"),),
        session=SessionConfig(mode, 0.8),  # type: ignore[arg-type]
    )
    async with SessionRig(tmp_path, profile=profile, context_window=32_000) as rig:
        await rig.command("/status")
        assert rig.replies[-1].splitlines()[2] == f"summarizer: {mode} ({says})"


async def test_memories_default_type_and_caps(tmp_path: Path) -> None:
    async with SessionRig(tmp_path) as rig:
        for n in range(60):
            await rig.store.memories.add(
                "fact" if n % 2 else "lesson",
                f"note {n}",
                profile="test",
                runtime_key=str(rig.rt.key),
                min_trust="trusted",
            )
        await rig.store.memories.add(
            "fact", "the owner's secret", profile="test", runtime_key=str(rig.rt.key), min_trust="owner"
        )
        await rig.store.memories.add(
            "fact", "another persona's", profile="other", runtime_key=str(rig.rt.key), min_trust="trusted"
        )

        await rig.command("/memories", sender="telegram:5", trust="trusted")
        lines = rig.replies[-1].splitlines()
        assert lines[0] == "The newest 10 memories:"
        assert len(lines) == 11
        assert "secret" not in rig.replies[-1]
        assert "another persona" not in rig.replies[-1]

        await rig.command("/memories")
        assert "the owner's secret" in rig.replies[-1]

        await rig.command("/memories facts 3")
        assert rig.replies[-1].splitlines()[0] == "The newest 3 fact:"
        assert all(" fact: " in line for line in rig.replies[-1].splitlines()[1:])

        await rig.command("/memories 80")
        lines = rig.replies[-1].splitlines()
        assert lines[0] == "The newest 50 memories (at most 50 are shown):"
        assert len(lines) == 51

        await rig.command("/memories 4 lesson")
        assert len(rig.replies[-1].splitlines()) == 5

        await rig.command("/memories reminder")
        assert rig.replies[-1] == "No reminder memories yet."
        for bad in ("/memories feelings", "/memories 0", "/memories 3 4"):
            result = await rig.command(bad)
            assert result is not None
            assert result.status == "failed"
            assert result.reply is not None
            assert result.reply.endswith("Usage: /memories [type] [count]")


class Switchable:
    """An extension whose tools the runtime filters through plugin_settings, as the wiring does."""

    def __init__(self, rig: SessionRig, tools: Sequence[Tool]):
        self.rig = rig
        self.tools = tools

    @hookimpl
    async def ishiki_tools(self) -> list[Tool]:
        return await enabled_tools(self.rig.store, "test", self.tools)


async def test_tools_switches_apply_on_the_next_turn(tmp_path: Path) -> None:
    tools = [_tool("send_message", "untrusted"), _tool("web_search"), _tool("shell", "owner")]
    persona = FunctionModel(lambda request: reply("ok"))
    async with SessionRig(tmp_path, persona=persona, host=StaticHostView(tools=tools)) as rig:
        await rig.rt.mount_extension(Switchable(rig, tools))
        await rig.say("first")
        assert [t.name for t in persona.requests[-1].tools] == ["send_message", "web_search", "shell"]

        await rig.command("/tools disable WEB_SEARCH")
        assert rig.replies[-1] == "Turned tool web_search off for test; it applies from the next turn."
        await rig.say("second")
        assert [t.name for t in persona.requests[-1].tools] == ["send_message", "shell"]

        await rig.command("/tools")
        assert rig.replies[-1].splitlines() == [
            "Tools:",
            "- send_message: on (kernel, always on)",
            "- web_search: off (needs trusted)",
            "- shell: on (needs owner)",
        ]
        await rig.command("/tools enable web_search")
        await rig.say("third")
        assert [t.name for t in persona.requests[-1].tools] == ["send_message", "web_search", "shell"]

        refused = await rig.command("/tools disable send_message")
        assert refused is not None
        assert refused.status == "failed"
        assert "kernel tool" in (refused.reply or "")
        await rig.store.plugin_settings.set("tool", "send_message", False, profile=None)  # even a global row
        assert next(t.name for t in await enabled_tools(rig.store, "test", tools)) == "send_message"
        unknown = await rig.command("/tools disable teleport")
        assert unknown is not None
        assert "No tool 'teleport'" in (unknown.reply or "")
        bad = await rig.command("/tools remove web_search")
        assert bad is not None
        assert bad.status == "failed"


async def test_extensions_switches(tmp_path: Path) -> None:
    async with SessionRig(tmp_path) as rig:
        await rig.command("/extensions")
        assert rig.replies[-1] == "Extensions:\n- memory: on\n- skills: on"
        await rig.command("/extensions disable Skills")
        assert rig.replies[-1] == "Turned extension skills off for test; it applies from the next turn."
        assert await enabled_extensions(rig.store, "test", ["memory", "skills"]) == ["memory"]
        assert await enabled_extensions(rig.store, "other", ["memory", "skills"]) == ["memory", "skills"]
        await rig.command("/extensions")
        assert rig.replies[-1] == "Extensions:\n- memory: on\n- skills: off"
        missing = await rig.command("/extensions enable workspace")
        assert missing is not None
        assert "No extension 'workspace'" in (missing.reply or "")
        await rig.command("/extensions enable skills")
        assert await enabled_extensions(rig.store, "test", ["memory", "skills"]) == ["memory", "skills"]
    assert await enabled_extensions(None, "test", ["memory"]) == ["memory"]
