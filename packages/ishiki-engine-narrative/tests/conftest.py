"""Fixtures of the narrative engines' tests: a small chat world (tools the harness lacks), the runtime's stop
rule, a gateway over the fake OpenAI server, and a factory of harnesses with both engines mounted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from ishiki_host import (
    AgentHooks,
    Entry,
    FakeClock,
    LanguageModel,
    ModelAPI,
    ModelRequest,
    Profile,
    Step,
    StepDecision,
    Stop,
    Tool,
    ToolContext,
    TurnOutcome,
)
from ishiki_host.testing import FakeOpenAIServer, Gateway, ModelsConfig, RuntimeHarness, SchedulerConfig

from ishiki_engine_narrative import NarrativeContextEngine, NarrativeToolcallEngine

PERSONA = "You are Kiri, the cheerful librarian of a small town."


@dataclass
class Chat:
    """What the persona's tools did: messages sent, lookups made."""

    sent: list[list[str]] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)


def _chat_tools(chat: Chat, with_wait: bool) -> list[Tool]:
    async def send(args: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
        chat.sent.append(list(args["messages"]))
        return {"ok": True, "ids": [str(len(chat.sent))]}

    async def finish(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return "finished"

    async def wait(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return "waiting"

    async def lookup(args: Mapping[str, Any], ctx: ToolContext) -> str:
        chat.lookups.append(args["query"])
        return f"catalogue: {args['query']} -> open 9:00-17:00"

    messages = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}
    query = {"type": "string", "minLength": 1}
    tools = [
        Tool("send_message", "Send chat messages.", send, _object({"messages": messages}, ["messages"]), kind="send"),
        Tool("finish", "End the turn.", finish, _object({"reason": {"type": "string"}}), kind="control"),
        Tool("lookup", "Look something up in the library catalogue.", lookup, _object({"query": query}, ["query"])),
    ]
    if with_wait:
        tools.append(Tool("wait", "Wait for something new.", wait, _object({}), kind="control"))
    return tools


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    return {**schema, "required": required} if required else schema


class StopRule(AgentHooks):
    """The runtime's stop rule, which the harness lacks: ``finish`` called, or a step that only sent."""

    async def on_step_finish(self, step: Step) -> StepDecision:
        names = [record.call.name for record in step.calls]
        if "finish" in names or "wait" in names:
            return Stop("finish")
        if names and all(r.call.name == "send_message" and r.status == "ran" for r in step.calls):
            return Stop("sent")
        return None


@pytest.fixture
def chat() -> Chat:
    """A chat world: ``send_message``, ``finish`` and ``lookup`` tools that record what they did."""
    world = Chat()
    world.tools = _chat_tools(world, with_wait=False)
    return world


@pytest.fixture
def chat_with_wait(chat: Chat) -> Chat:
    """The chat world with a ``wait`` tool too."""
    chat.tools = _chat_tools(chat, with_wait=True)
    return chat


MakeRuntime = Callable[..., RuntimeHarness]


@pytest.fixture
def make_runtime(tmp_path: Path, fake_clock: FakeClock) -> MakeRuntime:
    """``make_runtime(model, chat, context={...}, toolcall={...}, models={...}, home=...)``: a harness whose
    agent runs the narrative engines (made with the harness's context, or with ``context_ctx(rt)`` for
    the context engine) and the stop rule."""

    def make(
        model: LanguageModel,
        chat: Chat,
        *,
        context: Mapping[str, Any] | None = None,
        toolcall: Mapping[str, Any] | None = None,
        models: Mapping[str, LanguageModel] | None = None,
        home: Path | None = None,
        context_ctx: Callable[[RuntimeHarness], Any] | None = None,
    ) -> RuntimeHarness:
        home = home or tmp_path / "runtime"
        profile = Profile(id="kiri", directory=tmp_path, file=tmp_path / "profile.yml", persona=PERSONA, model="main")
        rt = RuntimeHarness(
            home,
            model=model,
            profile=profile,
            clock=fake_clock,
            hooks=[StopRule()],
            extra_tools=chat.tools,
            models=models,
        )
        engines = SimpleNamespace(
            context=NarrativeContextEngine().create(context_ctx(rt) if context_ctx else rt.context, context or {}),
            toolcall=NarrativeToolcallEngine().create(rt.context, toolcall or {}),
        )
        rt.mount_engines(context=engines.context, toolcall=engines.toolcall)
        rt.engines = engines  # for tests that call the instances directly
        return rt

    return make


@pytest.fixture
async def gateway(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI], fake_clock: FakeClock
) -> AsyncIterator[Gateway]:
    """A gateway whose provider ``fake`` (models ``main``, ``narrator``, ``writer``) is the fake OpenAI server."""
    config = ModelsConfig(providers={"fake": fake_openai.provider("fake", ["main", "narrator", "writer"])})
    # background calls go at once (the clock is fake: a deferral to interactive traffic would never end)
    scheduler = SchedulerConfig(interactive_grace_seconds=0)
    async with Gateway(config, model_apis, clock=fake_clock, scheduler=scheduler) as gw:
        yield gw


def custom(entries: list[Entry], kind: str) -> list[Entry]:
    """The ``custom`` entries of ``kind``."""
    return [e for e in entries if e.type == "custom" and e.data.get("kind") == kind]


async def turn(rt: RuntimeHarness, text: str) -> TurnOutcome:
    """One turn, then the background update it started (both within a deadline)."""
    with anyio.fail_after(10):
        outcome = await rt.say(text)
        await rt.settle()
    return outcome


@pytest.fixture
def run_turn() -> Callable[[RuntimeHarness, str], Awaitable[TurnOutcome]]:
    """``await run_turn(rt, text)``: one turn and its background update."""
    return turn


ROLE_MARKERS = {
    "You are the Narrator": "narrator",
    "You are the Action Decoder": "decoder",
    "You write the next chat message": "replyer",
    "You keep the running story": "update",
}


def role_of(request: ModelRequest) -> str:
    """Which role a request is for, from its (built-in) system prompt."""
    system = request.messages[0].text
    return next(role for marker, role in ROLE_MARKERS.items() if system.startswith(marker))


@pytest.fixture
def which_role() -> Callable[[ModelRequest], str]:
    """``which_role(request)``: ``narrator``, ``decoder``, ``replyer`` or ``update``."""
    return role_of


@pytest.fixture
def records() -> Callable[[list[Entry], str], list[Entry]]:
    """``records(entries, kind)``: the custom entries of one kind."""
    return custom
