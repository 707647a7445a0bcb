"""Model calls and tokens per turn: the narrative engines against the native toolcall behaviour.

Run: ``.venv/bin/python bench/narrative.py [--quick] [--runs N] [--json PATH]``. Both sides run the same
scripted conversation of 50 turns (every fifth asks something the persona must look up first) on a real agent
and fact log (``RuntimeHarness``), with in-process models whose answers are scripted per role and whose token
counts are the host's estimates of each request. The native side sends the whole session every step, as the
default window does; the narrative side runs the Narrator, the Action Decoder or the Replyer in each step and
folds each turn into the story afterwards (counted too). Reported, narrative against native: calls and tokens
per turn, the prompt size at turns 10 and 50, and the wall time per turn (host overhead with instant models; the
two sides alternate, runs paired); and per engine the prompt at turn 50 against turn 10 (growth). The counts are
the same in every run (scripted models), so their spread is zero.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from _report import Bench, run
from ishiki_engine_narrative import NarrativeContextEngine, NarrativeToolcallEngine

from ishiki_host.config.profile_types import Profile
from ishiki_host.core import AgentHooks, ModelRequest, ModelResult, Step, StepDecision, Stop, Tool, ToolContext, Usage
from ishiki_host.core.tokens import estimate_messages_tokens, estimate_tokens
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply, tool_call

TURNS = 50
PERSONA = (
    "You are Kiri, the librarian of a small town. You are warm and precise, you answer in one or two short "
    "sentences, and you never invent what the catalogue does not say. You know the regulars by name."
)
REPLY = "Of course! {topic} is on shelf {shelf}; the library is open from nine to five, and I can keep it for you."
TOPICS = ["Kyoto gardens", "tea ceremonies", "train timetables", "Lisbon history", "bread baking"]


def user_text(turn: int) -> str:
    topic = TOPICS[turn % len(TOPICS)]
    return f"Turn {turn}: Kiri, do you have anything about {topic}? I would like to read about it this week."


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def tools() -> list[Tool]:
    async def ok(args: Mapping[str, Any], ctx: ToolContext) -> Any:
        return {"ok": True}

    async def lookup(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return f"catalogue: 3 books about {args['query']}, shelf 12, all available"

    text = {"type": "string"}
    messages = {"type": "array", "items": text, "minItems": 1}
    return [
        Tool("send_message", "Send chat messages to the channel.", ok, _object({"messages": messages}, ["messages"]),
             kind="send"),
        Tool("finish", "End the turn.", ok, _object({"reason": text}, []), kind="control"),
        Tool("lookup", "Search the library catalogue by subject.", lookup, _object({"query": text}, ["query"])),
        Tool("reserve", "Reserve a book for a reader.", ok, _object({"title": text, "reader": text}, ["title"])),
        Tool("remember", "Remember a fact about a reader.", ok, _object({"fact": text}, ["fact"])),
    ]  # fmt: skip


class StopRule(AgentHooks):
    """The runtime's stop rule: a step whose only calls were successful sends ends the turn."""

    async def on_step_finish(self, step: Step) -> StepDecision:
        names = [record.call.name for record in step.calls]
        if "finish" in names or (names and all(name == "send_message" for name in names)):
            return Stop("sent")
        return None


@dataclass
class Meter:
    """Calls and tokens by turn (the turn a call served; background updates count for the turn they fold)."""

    turn: int = 0
    calls: dict[int, int] = field(default_factory=dict)
    tokens: dict[int, int] = field(default_factory=dict)
    biggest_prompt: dict[int, int] = field(default_factory=dict)

    def count(self, request: ModelRequest, result: ModelResult) -> ModelResult:
        prompt = estimate_messages_tokens(request.messages, request.tools)
        output = estimate_tokens(result.text) + sum(
            estimate_tokens(json.dumps(dict(c.arguments))) for c in result.tool_calls
        )
        self.calls[self.turn] = self.calls.get(self.turn, 0) + 1
        self.tokens[self.turn] = self.tokens.get(self.turn, 0) + prompt + output
        self.biggest_prompt[self.turn] = max(self.biggest_prompt.get(self.turn, 0), prompt)
        return ModelResult(result.text, result.tool_calls, result.finish_reason, Usage(prompt, output, True))


def looks_up(turn: int) -> bool:
    return turn % 5 == 0


def native_model(meter: Meter) -> FunctionModel:
    def answer(request: ModelRequest) -> ModelResult:
        last = request.messages[-1]
        topic = TOPICS[meter.turn % len(TOPICS)]
        if last.role == "user" and looks_up(meter.turn):
            result = reply("", tool_call("lookup", {"query": topic}))
        else:
            result = reply("", tool_call("send_message", {"messages": [REPLY.format(topic=topic, shelf=12)]}))
        return meter.count(request, result)

    return FunctionModel(answer, name="bench:native")


def narrative_model(meter: Meter) -> FunctionModel:
    def answer(request: ModelRequest) -> ModelResult:
        system, user = request.messages[0].text, request.messages[-1].text
        topic = TOPICS[meter.turn % len(TOPICS)]
        if system.startswith("You are the Narrator"):
            events = user.split("## Recent events (oldest first)")[1]
            act = looks_up(meter.turn) and "RESULT of lookup" not in events.split(f"Turn {meter.turn}:")[-1]
            rationale = f"look up {topic} in the catalogue" if act else f"tell the reader where {topic} is"
            result = reply(json.dumps({"intent": "act" if act else "reply", "rationale": rationale}))
        elif system.startswith("You are the Action Decoder"):
            result = reply("", tool_call("lookup", {"query": topic}))
        elif system.startswith("You write the next chat message"):
            result = reply(REPLY.format(topic=topic, shelf=12))
        else:
            story = {
                "present": ["the reader"],
                "situation": f"A regular reader has asked Kiri about {meter.turn} subjects this week; the latest is "
                f"{topic}, which Kiri found on shelf 12 and offered to keep.",
                "threads": [f"keep a book about {topic} for the reader"],
                "intent": "Help the reader find and borrow books",
            }
            result = reply(json.dumps(story))
        return meter.count(request, result)

    return FunctionModel(answer, name="bench:narrative")


async def conversation(kind: str, home: Path) -> tuple[Meter, float]:
    """Run the 50 turns; the meter and the wall seconds."""
    meter = Meter()
    model = native_model(meter) if kind == "native" else narrative_model(meter)
    profile = Profile(id="kiri", directory=home, file=home / "profile.yml", persona=PERSONA, model="bench")
    rt = RuntimeHarness(home, model=model, profile=profile, hooks=[StopRule()], extra_tools=tools())
    if kind == "narrative":
        rt.mount_engines(
            context=NarrativeContextEngine().create(rt, {}), toolcall=NarrativeToolcallEngine().create(rt, {})
        )
    start = time.perf_counter()
    async with rt:
        for turn in range(1, TURNS + 1):
            meter.turn = turn
            with anyio.fail_after(30):
                outcome = await rt.say(user_text(turn))
                await rt.settle()
            assert outcome.status == "done", outcome
    return meter, time.perf_counter() - start


def run_conversation(kind: str) -> tuple[Meter, float]:
    """One 50-turn conversation in a fresh directory."""
    with tempfile.TemporaryDirectory() as tmp:
        return anyio.run(conversation, kind, Path(tmp))


def mean(values: Mapping[int, int]) -> float:
    return sum(values.values()) / TURNS


COUNTS: dict[str, tuple[str, Any]] = {
    "model calls per turn": ("calls", lambda m: mean(m.calls)),
    "tokens per turn (in + out)": ("tokens", lambda m: mean(m.tokens)),
    "tokens at turn 50": ("tokens", lambda m: m.tokens[TURNS]),
    "largest prompt at turn 10": ("tokens", lambda m: m.biggest_prompt[10]),
    "largest prompt at turn 50": ("tokens", lambda m: m.biggest_prompt[TURNS]),
}


def measure(bench: Bench) -> None:
    """Alternate native and narrative conversations; report counts and wall time, narrative against native."""
    runs = bench.runs(quick=3, full=5)
    results: dict[str, list[tuple[Meter, float]]] = {"native": [], "narrative": []}
    for _ in range(runs):  # interleaved, so both sides see the same machine load
        for kind, done in results.items():
            done.append(run_conversation(kind))
    bench.note(f"{TURNS} scripted turns (every 5th looks something up first); tokens are the host's estimates")
    meters = {kind: [meter for meter, _ in done] for kind, done in results.items()}
    for label, (unit, count) in COUNTS.items():
        bench.add(label, unit, [count(m) for m in meters["narrative"]], baseline="native",
                  baseline_samples=[count(m) for m in meters["native"]], paired=True)  # fmt: skip
    for kind, kind_meters in meters.items():
        bench.add(f"{kind}: largest prompt at turn 50", "tokens", [m.biggest_prompt[TURNS] for m in kind_meters],
                  baseline="turn 10", baseline_samples=[m.biggest_prompt[10] for m in kind_meters], paired=True,
                  target="~1" if kind == "narrative" else None, notes="growth turn 10 -> 50")  # fmt: skip
    wall = {kind: [seconds / TURNS for _, seconds in done] for kind, done in results.items()}
    bench.add("host time per turn (instant models)", "s", wall["narrative"], baseline="native",
              baseline_samples=wall["native"], paired=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
