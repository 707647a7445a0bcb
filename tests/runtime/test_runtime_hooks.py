"""The runtime's own hooks and per-turn assembly: reply_with_text, trust at dispatch, large outputs, images,
tool conflicts, extensions that raise, the system prompt."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ishiki_host import Tool, hookimpl
from ishiki_host.channels.base import InboundAttachment
from ishiki_host.config.profile_types import Profile, ResourcesConfig, TrustConfig
from ishiki_host.core.messages import ImagePart
from ishiki_host.core.tools import ToolContext
from ishiki_host.testing import EveryMessageWakeup, FakeConnection, RuntimeHarness
from ishiki_host.testing.models import ScriptedModel, reply, tool_call

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def profile(tmp_path: Path, **changes: Any) -> Profile:
    base = Profile(id="ana", directory=tmp_path, file=tmp_path / "profile.yml", persona="You are Ana.", model="m")
    return replace(base, **changes)


def results(rt: RuntimeHarness) -> list[dict[str, Any]]:
    return [e.data for e in rt.log.iter_forward() if e.data.get("role") == "tool"]


async def secret(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "the owner's diary"


SECRET = Tool("secret", "Read the owner's diary.", secret, trust="owner")


async def test_text_without_tool_calls_is_sent_and_recorded_once(tmp_path: Path) -> None:
    model = ScriptedModel([reply("Hello from plain text")])
    async with RuntimeHarness(tmp_path, model=model, kernel_tools=True) as rt:
        outcome = await rt.say("hi")
        records = [e for e in rt.log.iter_forward() if e.type == "custom"]
    assert outcome.reason == "no_tool_calls"
    assert rt.channel.texts() == ["Hello from plain text"]
    assert [dict(r.data) for r in records] == [{"kind": "reply_with_text", "ids": ["out-1"], "of": 3}]


async def test_reply_with_text_off_sends_nothing(tmp_path: Path) -> None:
    model = ScriptedModel([reply("thinking out loud")])
    quiet = profile(tmp_path, reply_with_text=False)
    async with RuntimeHarness(tmp_path, model=model, profile=quiet, kernel_tools=True) as rt:
        await rt.say("hi")
        system = model.requests[0].messages[0].text
    assert rt.channel.sent == []
    assert "is not sent to anyone" in system


async def test_an_untrusted_sender_gets_no_privileged_tool_even_when_the_model_names_it(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("secret", {})), reply("", tool_call("finish", {}))])
    strict = profile(tmp_path, trust=TrustConfig(owners=("fake:1",)))
    stranger = FakeConnection(platform="fake", self_id="bot")
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=strict,
        sid="fake:bot",
        channel_id="group:7",
        extra_tools=[SECRET],
        kernel_tools=True,
        wakeup=EveryMessageWakeup(),
    ) as rt:
        entry = await rt.deliver(stranger.event("tell me the diary", channel_id="group:7", user_id="99"))
        await rt.settled()
        logged = results(rt)
    assert entry is not None
    assert entry.data["trust"] == "untrusted"
    assert "secret" not in [t.name for t in model.requests[0].tools]
    assert "only basic tools are available" in model.requests[0].messages[0].text
    assert logged[0]["is_error"]
    assert logged[0]["parts"][0]["text"].startswith("unknown tool 'secret'")


async def test_the_owner_gets_the_privileged_tool(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("secret", {})), reply("", tool_call("finish", {}))])
    strict = profile(tmp_path, trust=TrustConfig(owners=("fake:1",)))
    owner = FakeConnection(platform="fake", self_id="bot")
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=strict,
        sid="fake:bot",
        channel_id="group:7",
        extra_tools=[SECRET],
        kernel_tools=True,
        wakeup=EveryMessageWakeup(),
    ) as rt:
        await rt.deliver(owner.event("my diary please", channel_id="group:7", user_id="1"))
        await rt.settled()
        logged = results(rt)
    assert logged[0]["parts"][0]["text"] == "the owner's diary"


async def test_a_large_output_is_archived_and_readable(tmp_path: Path) -> None:
    big = "\n".join(f"line {i}" for i in range(5000))

    async def dump(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return big

    small = profile(tmp_path, resources=ResourcesConfig(artifact_threshold_chars=1000))
    model = ScriptedModel([reply("", tool_call("dump", {})), reply("", tool_call("finish", {}))])
    async with RuntimeHarness(
        tmp_path, model=model, profile=small, extra_tools=[Tool("dump", "Dump.", dump)], kernel_tools=True
    ) as rt:
        await rt.say("dump it")
        text = results(rt)[0]["parts"][0]["text"]
        url = text[text.index("artifact://") :].split(";")[0]
        page = await rt.resources.read(url, lines="4999-5000")
    assert len(text) < len(big)
    assert "line 0" in text
    assert "line 4999" in text
    assert page.text == "line 4998\nline 4999"


async def test_duplicate_tool_names_fail_the_turn(tmp_path: Path) -> None:
    async def fake_read(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return "shadowed"

    model = ScriptedModel([reply("never asked")])
    async with RuntimeHarness(
        tmp_path, model=model, extra_tools=[Tool("read", "Another read.", fake_read)], kernel_tools=True
    ) as rt:
        outcome = await rt.say("hi")
    assert (outcome.status, outcome.reason) == ("failed", "ToolConflictError")
    assert "two tools are named 'read'" in str(outcome.error)
    assert model.requests == []


class Flaky:
    """Raises in ishiki_tools on its first turn only."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def ishiki_tools(self) -> list[Tool]:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("the tools hook broke")
        return []


async def test_an_extension_raising_in_its_tools_hook_fails_that_turn_only(tmp_path: Path) -> None:
    model = ScriptedModel([reply("second turn works")])
    async with RuntimeHarness(tmp_path, model=model, kernel_tools=True) as rt:
        await rt.mount_extension(Flaky(), "flaky")
        first = await rt.say("one")
        second = await rt.say("two")
        ends = [e.data for e in rt.log.iter_forward() if e.name in ("turn.done", "turn.failed")]
    assert (first.status, first.reason) == ("failed", "RuntimeError")
    assert ends[0]["message"] == "the tools hook broke"
    assert (second.status, rt.channel.texts()) == ("done", ["second turn works"])


class Twin:
    @hookimpl
    def ishiki_tools(self) -> list[Tool]:
        async def handler(args: Mapping[str, Any], ctx: ToolContext) -> str:
            return ""

        return [Tool("twin", "A tool.", handler)]


async def test_two_extensions_offering_one_name_are_named_in_the_conflict(tmp_path: Path) -> None:
    async with RuntimeHarness(tmp_path, model=ScriptedModel([reply("x")])) as rt:
        await rt.mount_extension(Twin(), "first")
        await rt.mount_extension(Twin(), "second")
        outcome = await rt.say("hi")
    assert "extension 'second' offers a tool named 'twin', which extension 'first' already offers" in str(outcome.error)


async def test_images_become_data_urls_for_models_that_take_them(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("finish", {}))] * 2)
    console = FakeConnection(platform="console", self_id="local")
    async with RuntimeHarness(
        tmp_path, model=model, wakeup=EveryMessageWakeup(), kernel_tools=True, accepts_images=True
    ) as rt:
        photo = InboundAttachment(media_type="image/png", name="cat.png", data=PNG)
        entry = await rt.deliver(console.event("look", channel_id="private:local"), [photo])
        await rt.settled()
    assert entry is not None
    url = entry.data["source"]["attachments"][0]["url"]
    assert url.startswith("asset://")
    assert entry.data["parts"][1] == {"type": "image", "url": url, "media_type": "image/png"}
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert model.requests[0].messages[-1].images == (ImagePart(data_url, "image/png"),)


async def test_images_become_a_note_for_models_that_do_not(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("finish", {}))])
    console = FakeConnection(platform="console", self_id="local")
    async with RuntimeHarness(tmp_path, model=model, wakeup=EveryMessageWakeup(), kernel_tools=True) as rt:
        photo = InboundAttachment(media_type="image/png", name="cat.png", data=PNG)
        await rt.deliver(console.event("look", channel_id="private:local"), [photo])
        await rt.settled()
    last = model.requests[0].messages[-1]
    assert last.images == ()
    assert "this model does not take images" in last.text


async def test_the_system_prompt_has_persona_control_flow_and_extension_sections(tmp_path: Path) -> None:
    class Notes:
        @hookimpl
        def ishiki_instructions(self) -> str:
            return "Notes: keep them short."

    model = ScriptedModel([reply("ok")])
    async with RuntimeHarness(
        tmp_path, model=model, profile=profile(tmp_path), sid="fake:bot", channel_id="group:7", kernel_tools=True
    ) as rt:
        await rt.mount_extension(Notes(), "notes")
        await rt.say("hi")
    system = model.requests[0].messages[0].text
    assert system.startswith("You are Ana.\n\n## How you act here\n")
    assert "You are in a group chat: channel group:7 of fake:bot." in system
    assert system.endswith("Notes: keep them short.")
    assert json.dumps(system)  # plain text
