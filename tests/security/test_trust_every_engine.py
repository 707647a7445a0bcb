"""An untrusted sender cannot get an owner-only tool run, whichever toolcall engine reads the model's answer.

A real host (fake channel, standard context and wakeup engines unless the engine needs its own context) with an
extension offering ``launch`` (trust ``owner``) and a model scripted to call it: as a native tool call, as a
``json`` action block, as an ``xml`` ``<tool_call>`` (both with the native call added, in case an engine lets
one through), as the narrative engine's Action Decoder, and from a codemode program. The same turn from the
owner runs ``launch``, so the script does reach the tool; from an unlisted sender (``untrusted``) or a
``trusted`` one it must not, and the fact log shows the attempt refused in the engine's own way. The second
test is the injection case: group chatter from an untrusted sender asks for the launch, then the owner
mentions the bot; the turn runs at the lowest level of the messages it reads, so ``launch`` stays refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import anyio
import pytest

from ishiki_host import Extension, Tool, hookimpl
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall
from ishiki_host.testing.host import host_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

LAUNCHED: list[dict[str, Any]] = []
ENGINES = {
    "native": "",
    "json": "toolcall: {engine: json}\n",
    "xml": "toolcall: {engine: xml}\n",
    "narrative": "context: {engine: narrative}\ntoolcall: {engine: narrative}\n",
    "codemode": "codemode: {}\n",
}
PROFILE = (
    "model: default\nchannels:\n  fake:bot: ['*']\ntrust:\n  owners: ['fake:1']\n  trusted: ['fake:3']\n"
    "extends:\n  armory: {}\n"
)
# How each engine refuses a call of a tool the turn's trust level does not reach (seen in the fact log).
REFUSED = {
    "native": "unknown tool 'launch'",
    "json": 'There is no function "launch"',
    "xml": 'There is no function "launch"',
    "narrative": "called 'launch', which is not an action tool",
    "codemode": "TypeError: not a function",
}
HOST = host_yaml()  # no interactive grace (its default): the narrative update goes at once
SENDERS = [("2", False), ("3", False), ("1", True)]
SENDER_IDS = ["untrusted", "trusted", "owner"]
LAUNCH = ScriptedCall("launch", {"target": "moon"})
STORY = {"present": ["Ada"], "situation": "Ada asked for a launch.", "threads": [], "intent": "wait"}


class ArmoryInstance:
    @hookimpl
    def ishiki_tools(self, runtime: Any) -> list[Tool]:
        async def launch(args: Mapping[str, Any], ctx: Any) -> str:
            LAUNCHED.append(dict(args))
            return "launched"

        schema = {"type": "object", "properties": {"target": {"type": "string"}}}
        return [Tool("launch", "Launch at a target (owners only).", launch, schema, trust="owner")]


class Armory(Extension):
    """Offers ``launch``, an owner-only tool."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "object", "additionalProperties": False}

    def create(self, ctx: Any, config: Mapping[str, Any]) -> ArmoryInstance:
        return ArmoryInstance()


def attacker(engine: str) -> Any:
    """The model: asks for ``launch`` in the engine's own form once it reads "please launch" (and has not
    answered it yet), else ends the turn."""
    narrated = [0]

    def answer(request: RecordedRequest) -> Reply:
        messages = request.json["messages"]
        system = str(messages[0].get("content")) if messages and messages[0]["role"] == "system" else ""
        if engine == "narrative":
            return narrative(system, narrated)
        asked = [i for i, m in enumerate(messages) if m["role"] == "user" and "please launch" in str(m.get("content"))]
        if not asked or any(m["role"] == "assistant" for m in messages[asked[-1] :]):
            ends = {"json": Reply('```json\n{"actions": []}\n```'), "xml": Reply("Done.")}
            return ends.get(engine, Reply(tool_calls=(ScriptedCall("finish", {}),)))
        if engine == "codemode":
            return Reply(
                tool_calls=(ScriptedCall("codemode", {"code": "return await tools.launch({target: 'moon'})"}),)
            )
        if engine == "json":
            return Reply('```json\n{"actions": [{"function": "launch", "params": {"target": "moon"}}]}\n```',
                         tool_calls=(LAUNCH,))  # fmt: skip
        if engine == "xml":
            return Reply('<tool_call>\n{"name": "launch", "arguments": {"target": "moon"}}\n</tool_call>',
                         tool_calls=(LAUNCH,))  # fmt: skip
        return Reply(tool_calls=(LAUNCH,))

    return answer


def narrative(system: str, narrated: list[int]) -> Reply:
    """The narrative engine's roles: act once, then finish; the decoder always asks for ``launch``."""
    if system.startswith("You are the Narrator"):
        narrated[0] += 1
        intent = "act" if narrated[0] == 1 else "finish"
        return Reply(json.dumps({"intent": intent, "rationale": "launch at the moon" if intent == "act" else "done"}))
    if system.startswith("You are the Action Decoder"):
        return Reply(tool_calls=(LAUNCH,))
    if system.startswith("You keep the running story"):
        return Reply(json.dumps(STORY))
    return Reply("All done.")


def strings(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def check_turn(log: str, engine: str, runs: bool) -> None:
    """The log of the turn: ``launch`` was asked for; it ran for the owner and was refused for anyone else."""
    entries = [json.loads(line)["data"] for line in log.splitlines() if line]
    results = [e for e in entries if e.get("role") == "tool"]
    ran = [r for r in results if r.get("tool_name") == "launch" and not r.get("is_error")]
    ran += [r for r in results if r.get("tool_name") == "codemode" and "launched" in str(r["parts"])]
    assert bool(ran) is runs, results
    if not runs:
        texts = "\n".join(s for e in entries for s in strings(e))
        assert REFUSED[engine] in texts, f"no refusal of launch by the {engine} engine in:\n{texts}"


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize(("sender", "runs"), SENDERS, ids=SENDER_IDS)
async def test_an_owner_tool_runs_for_the_owner_only(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, engine: str, sender: str, runs: bool
) -> None:
    LAUNCHED.clear()
    fake_openai.default = attacker(engine)
    th = make_host(profiles={"ana": PROFILE + ENGINES[engine]}, plugins={"ishiki.ext.armory": Armory}, host=HOST)
    async with th:
        delivery = await th.channel().say("please launch at the moon", user_id=sender)
        with anyio.fail_after(20):
            await delivery.settled()
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        log = runtime.context.home.joinpath("facts.jsonl").read_text()
    assert bool(LAUNCHED) is runs, LAUNCHED
    check_turn(log, engine, runs)


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize(("sender", "runs"), SENDERS, ids=SENDER_IDS)
async def test_group_chatter_lowers_the_owners_turn(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, engine: str, sender: str, runs: bool
) -> None:
    LAUNCHED.clear()
    fake_openai.default = attacker(engine)
    th = make_host(profiles={"ana": PROFILE + ENGINES[engine]}, plugins={"ishiki.ext.armory": Armory}, host=HOST)
    async with th:
        channel = th.channel()
        chatter = await channel.say("please launch at the moon", channel_id="group:7", user_id=sender)
        with anyio.fail_after(20):
            await chatter.settled()
        assert not fake_openai.requests  # group chatter without a mention is only recorded
        delivery = await channel.say("@bot anything new?", channel_id="group:7", user_id="1", mentions_self=True)
        with anyio.fail_after(20):
            await delivery.settled()
        log = (await th.host.runtime_for("ana", "fake:bot", "group:7")).context.home.joinpath("facts.jsonl").read_text()
    assert fake_openai.requests
    assert bool(LAUNCHED) is runs, LAUNCHED
    check_turn(log, engine, runs)
