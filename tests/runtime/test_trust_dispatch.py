"""Trust on a real runtime: what an untrusted turn is offered, what it may run, and what it may read."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.channels.base import InboundAttachment
from ishiki_host.config.profile_types import Profile, ResourcesConfig, TrustConfig
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.errors import ResourceError
from ishiki_host.resources import (
    Resource,
    ResourceCenter,
    ResourceRequest,
    create_runtime_resources,
    parse_resource_url,
)
from ishiki_host.resources.artifacts import ArtifactStore
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply, tool_call

pytestmark = pytest.mark.anyio

DIARY = "Dear diary, the safe's code is 4711. " * 40


class Script:
    """A model function answering from per-step scripts, recording the tools each request offered."""

    def __init__(self, *steps: ModelResult):
        self.steps = list(steps)
        self.offered: list[list[str]] = []
        self.results: list[list[str]] = []

    def __call__(self, request: ModelRequest) -> ModelResult:
        self.offered.append([tool.name for tool in request.tools])
        self.results.append([m.text for m in request.messages if m.role == "tool"])
        return self.steps.pop(0) if self.steps else reply("", tool_call("finish", {}))


def diary_tool(ran: list[str]) -> Tool:
    async def diary(args: Mapping[str, Any], ctx: ToolContext) -> str:
        ran.append("diary")
        return DIARY

    return Tool("diary", "The owner's diary.", diary, trust="owner")


def harness(tmp_path: Path, script: Script, ran: list[str]) -> RuntimeHarness:
    profile = Profile(
        id="ana",
        directory=tmp_path,
        file=tmp_path / "profile.yml",
        persona="You are Ana.",
        model="test",
        trust=TrustConfig(owners=("fake:42",)),
        resources=ResourcesConfig(artifact_threshold_chars=200),
    )
    return RuntimeHarness(
        tmp_path / "rt",
        model=FunctionModel(script),
        profile=profile,
        sid="fake:bot",
        channel_id="private:1",
        kernel_tools=True,
        extra_tools=[diary_tool(ran)],
    )


async def turn_from(rt: RuntimeHarness, user: str, text: str, **kw: Any) -> None:
    await rt.deliver(rt.channel.event(text, user_id=user), **kw)
    outcome = await (await rt.agent.continue_(reason="test"))
    assert outcome.status == "done", outcome


async def test_an_untrusted_turn_is_not_offered_privileged_tools_and_a_call_to_one_is_refused(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    script = Script(reply("", tool_call("diary", {})), reply("", tool_call("finish", {})))
    async with harness(tmp_path, script, ran) as rt:
        await turn_from(rt, "3", "read me the diary")
    assert "diary" not in script.offered[0]
    assert {"read", "send_message", "finish", "wait"} <= set(script.offered[0])
    assert ran == []  # the model named a tool it was not offered: refused at dispatch, never run
    assert "diary" in script.results[1][0]
    assert DIARY not in script.results[1][0]


async def test_an_owner_turn_runs_it_and_a_message_joining_from_an_untrusted_sender_lowers_the_turn(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    script = Script(reply("", tool_call("diary", {})), reply("", tool_call("finish", {})))
    async with harness(tmp_path, script, ran) as rt:
        await turn_from(rt, "42", "read me the diary")
        assert ran == ["diary"]
        assert "diary" in script.offered[0]
        await rt.deliver(rt.channel.event("me too", user_id="3"))
        await rt.deliver(rt.channel.event("and me", user_id="42"))
        await (await rt.agent.continue_(reason="test"))
    assert "diary" not in script.offered[-1]


async def test_reads_carry_the_turns_trust(tmp_path: Path) -> None:
    ran: list[str] = []
    owner_script = [reply("", tool_call("diary", {})), reply("", tool_call("finish", {}))]
    script = Script(*owner_script)
    async with harness(tmp_path, script, ran) as rt:
        await turn_from(rt, "42", "read me the diary")
        found = re.search(r"artifact://diary/[0-9a-f]+\.txt", script.results[-1][-1])
        assert found is not None
        url = found.group(0)
        attachment = InboundAttachment("text/plain", name="list.txt", data=b"milk, eggs")
        event = rt.channel.event("here is my list", user_id="3")
        entry = await rt.deliver(event, [attachment])
        assert entry is not None
        asset = entry.data["source"]["attachments"][0]["url"]
        script.steps = [
            reply("", tool_call("read", {"url": url}), tool_call("read", {"url": "local://facts.jsonl"})),
            reply("", tool_call("read", {"url": asset})),
            reply("", tool_call("finish", {})),
        ]
        await (await rt.agent.continue_(reason="test"))
    artifact_result, local_result = script.results[-2][-2:]
    assert f"forbidden: {url} is the output of a tool that needs trust owner" in artifact_result
    assert "4711" not in artifact_result
    assert "forbidden: local:// needs trust trusted; this conversation is untrusted" in local_result
    assert "milk, eggs" in script.results[-1][-1]  # what this conversation was sent is readable


async def test_the_center_checks_a_schemes_level_before_its_handler_runs(tmp_path: Path) -> None:
    asked: list[ResourceRequest] = []

    class Secrets:
        async def read(self, request: ResourceRequest) -> Any:
            asked.append(request)
            return Resource(text="secret")

    center = ResourceCenter()
    center.register("secret", Secrets(), owner="vault", trust="owner")
    center.register("open", Secrets(), trust="untrusted")
    assert (center.trust("secret"), center.trust("open")) == ("owner", "untrusted")
    for level in ("untrusted", "trusted"):
        with pytest.raises(ResourceError, match=f"secret:// needs trust owner; this conversation is {level}") as no:
            await center.read("secret://x", trust=level)  # type: ignore[arg-type]
        assert no.value.code == "forbidden"
    assert asked == []
    assert (await center.read("secret://x", trust="owner")).text == "secret"
    assert (await center.read("secret://x")).text == "secret"  # the host itself
    assert (await center.read("open://x", trust="untrusted")).text == "secret"
    assert [r.trust for r in asked] == ["owner", None, "untrusted"]
    with pytest.raises(ValueError, match="trust must be untrusted, trusted or owner"):
        center.register("bad", Secrets(), trust="root")  # type: ignore[arg-type]


async def test_an_artifact_keeps_its_tools_level(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    owner_url = await store.archive("diary", "private words", trust="owner")
    open_url = await store.archive("search", "public words", trust="untrusted")
    for url, level, allowed in (
        (owner_url, "trusted", False),
        (owner_url, "owner", True),
        (owner_url, None, True),
        (open_url, "untrusted", True),
    ):
        for view in (None, "meta"):
            request = ResourceRequest(parse_resource_url(url), view=view, trust=level)  # type: ignore[arg-type]
            if allowed:
                await store.read(request)
                continue
            with pytest.raises(ResourceError, match="needs trust owner; this conversation is trusted"):
                await store.read(request)
    meta = tmp_path / "artifacts" / "search" / f"{open_url.rsplit('/', 1)[1].split('.')[0]}.json"
    data = json.loads(meta.read_text())
    del data["trust"]  # archived before levels were kept: trusted and above
    meta.write_text(json.dumps(data))
    with pytest.raises(ResourceError, match="needs trust trusted"):
        await store.read(ResourceRequest(parse_resource_url(open_url), trust="untrusted"))


async def test_local_does_not_serve_or_list_what_artifact_and_asset_check(tmp_path: Path) -> None:
    """Issue 20, item 4: ``local://artifacts/<tool>/<id>.txt`` served an owner-only tool's output to a trusted
    turn that ``artifact://`` refuses, and ``local://artifacts/<tool>`` listed the ids."""
    home = tmp_path / "home"
    resources = create_runtime_resources(home)
    url = await resources.artifacts.archive("diary", DIARY, trust="owner")
    artifact_id = url.rsplit("/", 1)[1]
    (home / "notes").mkdir()
    (home / "notes" / "today.md").write_text("buy milk", encoding="utf-8")
    (home / "notes" / "link").symlink_to(home / "artifacts" / "diary")
    center = resources.center
    with pytest.raises(ResourceError, match="needs trust owner"):
        await center.read(url, trust="trusted")
    for path in (f"artifacts/diary/{artifact_id}", "artifacts/diary", "artifacts", "notes/link", "assets"):
        with pytest.raises(ResourceError) as refused:
            await center.read(f"local://{path}", trust="trusted")
        assert refused.value.code == "forbidden", path
        assert "4711" not in str(refused.value)
    listing = (await center.read("local://", trust="trusted")).text
    assert listing is not None
    assert listing.splitlines() == ["notes/"]
    assert (await center.read("local://notes/today.md", trust="trusted")).text == "buy milk"
    assert "artifact://" in str(refused.value) or "asset://" in str(refused.value)  # names where to read it
