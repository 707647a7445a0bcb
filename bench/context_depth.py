"""CPU per chat turn at a history depth of 10, 100, 200 and 400 turns, against raw httpx sending the same history.

A real ``Host`` (fake channel, a wakeup engine that answers every message, the ``standard`` context engine with
the default 128k context window, native toolcall, fact logs with the ``turn`` fsync policy) holds one
conversation per depth, its fact log filled before the host starts with that many finished exchanges (an
inbound message of about 40 words, the turn answering it with one ``send_message`` of about 30 words and its
result; depth 400 is about 62k tokens, inside the 96k budget, so nothing is compacted). Each turn is one message
to that conversation and its one model call (the fake model server, in its own process, answers at once with
``send_message("ok")``), until the reply is on the channel and the turn closed in the log. The baseline POSTs the
same request body (the host's own request of that conversation, captured from its ``turn.step`` event and encoded
as the gateway encodes it) with a pooled httpx client and parses the JSON answer.

The figures are the process CPU per turn (every thread) at each depth, against the baseline at the same depth and,
for depths above the first, against the host at the first depth. Every run adds its turns to each conversation,
so a depth is where the conversation starts. Runs alternate host and baseline (paired).

    .venv/bin/python bench/context_depth.py [--quick] [--depths 10 100 200 400] [--turns N] [--runs N]
        [--dir PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run

from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.config.models import ModelSpec
from ishiki_host.core.clock import SystemClock
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.model import ModelRequest
from ishiki_host.gateway.providers.openai import encode_request
from ishiki_host.jsontypes import Json
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

DEPTHS = (10, 100, 200, 400)
ASKED = "could you remind me what we decided about the trip, and who is bringing the tent and the stove? " * 2
ANSWERED = "we said Saturday at eight, Ana brings the tent, Rui the stove, and I will check the weather first."


def inbound(number: int, channel_id: str) -> dict[str, Json]:
    """An inbound platform message, as the fake channel shapes one."""
    text = f"{number}: {ASKED}"
    source: dict[str, Json] = {
        "kind": "message.created", "platform": "fake", "selfId": "bot", "channelId": channel_id, "isDirect": True,
        "messageId": f"old-{number}", "timestamp": 1_700_000_000.0 + number, "content": text,
        "mentionsSelf": False, "user": {"id": "1"},
    }  # fmt: skip
    return {"role": "user", "parts": [{"type": "text", "text": text}], "source": source, "trust": "trusted"}


def exchange(first_id: int, turn: int, channel_id: str) -> list[tuple[str, dict[str, Json], int | None]]:
    """One finished exchange as the host writes it: 5 entries, the first with id ``first_id``."""
    call: dict[str, Json] = {"id": f"call_{turn}", "name": "send_message",
                             "arguments": {"messages": [f"{turn}: {ANSWERED}"]}}  # fmt: skip
    usage: dict[str, Json] = {"input_tokens": 10, "output_tokens": 5, "estimated": False}
    trigger: dict[str, Json] = {"by": "continue", "entry": first_id, "reason": "message"}
    start: dict[str, Json] = {"name": "turn.start", "priority": "interactive", "triggers": [trigger]}
    assistant: dict[str, Json] = {"role": "assistant", "parts": [], "tool_calls": [call], "usage": usage,
                                  "model": "fake:fake-model", "finish_reason": "tool_calls",
                                  "trust": "trusted"}  # fmt: skip
    sent: dict[str, Json] = {"type": "text", "text": f'{{"ok": true, "ids": ["o{turn}"]}}'}
    result: dict[str, Json] = {"role": "tool", "parts": [sent], "tool_call_id": f"call_{turn}",
                               "tool_name": "send_message", "trust": "trusted"}  # fmt: skip
    done: dict[str, Json] = {"name": "turn.done", "reason": "sent", "steps": 1, "usage": usage}
    return [("message", inbound(turn, channel_id), None), ("event", start, turn), ("message", assistant, turn),
            ("message", result, turn), ("event", done, turn)]  # fmt: skip


async def fill(data_dir: Path, channel_id: str, depth: int) -> None:
    """Write ``depth`` finished exchanges into the conversation's fact log (before the host opens it)."""
    path = runtime_dir(data_dir, RuntimeKey("ana", "fake:bot", channel_id)) / "facts.jsonl"
    async with await FactLog.open(path, fsync="never") as log:
        for turn in range(1, depth + 1):
            for type_, data, number in exchange(log.last_id + 1, turn, channel_id):
                await log.append(type_, data, turn=number)


class HostSide:
    """Turns through the host, one conversation per depth."""

    def __init__(self, th: TestHost):
        self.th = th
        self.bot = th.channel()

    async def turn(self, channel_id: str) -> None:
        """One message, until its turn has ended (replied and closed in the log)."""
        delivery = await self.bot.say("and what time do we leave?", channel_id=channel_id)
        with anyio.fail_after(60):
            await delivery.settled()

    async def capture(self, channel_id: str) -> ModelRequest:
        """The model request of one turn of the conversation."""
        runtime = await self.th.host.runtime_for("ana", "fake:bot", channel_id)
        captured: list[ModelRequest] = []
        dispose = runtime.context.bus.subscribe("turn.step", lambda event: captured.append(event["step"].request))
        await self.turn(channel_id)
        dispose()
        return captured[-1]


def raw_turn(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Callable[[str], Awaitable[None]]:
    """A baseline turn: POST the body, parse the JSON answer."""

    async def post(channel_id: str) -> None:
        response = await client.post(url, json=body)
        response.raise_for_status()
        response.json()

    return post


async def cpu_per_turn(turn: Callable[[str], Awaitable[None]], channel_id: str, turns: int) -> float:
    """Process CPU seconds per turn over ``turns`` turns, one after the other."""
    start = time.process_time()
    for _ in range(turns):
        await turn(channel_id)
    return (time.process_time() - start) / turns


async def measure_in(bench: Bench, base_url: str, base: Path) -> None:
    """Fill the logs, start the host, warm both sides per depth, then paired runs."""
    depths: Sequence[int] = bench.args.depths
    runs, turns = bench.runs(quick=3, full=5), bench.args.turns or (5 if bench.quick else 10)
    bench.note(f"{runs} runs of {turns} turns per depth; depths {', '.join(map(str, depths))}")
    profile = profile_yaml().replace("context: {engine: plain}", "context: {engine: standard}")
    root = write_config(base / "bot", profiles={"ana": profile}, models=models_yaml(base_url, 4),
                        host=host_yaml(extra="fsync: turn\n"))  # fmt: skip
    channels = {depth: f"private:{depth}" for depth in depths}
    for depth, channel_id in channels.items():
        await fill(root / "data", channel_id, depth)
    async with TestHost(root, clock=SystemClock()) as th, httpx.AsyncClient() as client:
        host = HostSide(th)
        url, spec = f"{base_url}/chat/completions", ModelSpec("fake-model")
        raw = {}
        for depth, channel_id in channels.items():
            await host.turn(channel_id)  # spawn the runtime: its first read of the log is not a turn's cost
            body = encode_request(spec, await host.capture(channel_id), stream=False, options={})
            raw[depth] = raw_turn(client, url, body)
            await cpu_per_turn(raw[depth], channel_id, 2)
        host_samples: dict[int, list[float]] = {depth: [] for depth in depths}
        raw_samples: dict[int, list[float]] = {depth: [] for depth in depths}
        for number in range(runs):
            for depth, channel_id in channels.items():
                sides = [(host.turn, host_samples), (raw[depth], raw_samples)]
                for side, into in sides if number % 2 == 0 else reversed(sides):
                    into[depth].append(await cpu_per_turn(side, channel_id, turns))
    first = depths[0]
    for depth in depths:
        bench.add(f"CPU per turn at depth {depth}", "s", host_samples[depth],
                  baseline=f"raw httpx, the same history (depth {depth})", baseline_samples=raw_samples[depth],
                  paired=True, target="<= 3" if depth == depths[-1] else None)  # fmt: skip
    for depth in depths[1:]:
        bench.add(f"CPU per turn at depth {depth}", "s", host_samples[depth],
                  baseline=f"CPU per turn at depth {first}", baseline_samples=host_samples[first], paired=True,
                  target="<= 1.5" if depth == depths[-1] else None)  # fmt: skip


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process; measure in a temporary config dir."""
    with fake_model_process(0.0) as base_url, tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        await measure_in(bench, base_url, Path(base))


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS), help="history depths (turns)")
    parser.add_argument("--turns", type=int, help="turns per depth per run (default 10; 5 with --quick)")
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
