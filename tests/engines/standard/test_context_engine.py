"""The standard context engine on a real runtime context: budget, compaction in the background, hysteresis."""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host import HostServices
from ishiki_host.config.profile_types import Profile
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import ModelRequest, ModelResult, Usage
from ishiki_host.core.tokens import estimate_messages_tokens
from ishiki_host.core.window import SUMMARY_HEADER
from ishiki_host.engines.context.standard import StandardContext, StandardContextEngine
from ishiki_host.errors import ConfigError, ContextLengthExceeded, ModelUnavailable
from ishiki_host.plugins.runtime_api import ContextEngineInstance
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply

pytestmark = pytest.mark.anyio

WINDOW = 2000  # tokens; the budget is 1500 minus the system prompt
LONG = "lorem ipsum dolor sit amet " * 14  # about 95 tokens


class Summarizer:
    """A summary model: answers with a numbered summary, or fails / waits when told to."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self.failures: list[Exception] = []
        self.gate: anyio.Event | None = None
        self.entered = anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResult:
        self.requests.append(request)
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            raise self.failures.pop(0)
        return reply(f"SUMMARY {len(self.requests)}", usage=Usage(300, 20), model="test:summary")


@asynccontextmanager
async def runtime(
    tmp_path: Path, config: Mapping[str, Any] | None = None, **harness: Any
) -> AsyncIterator[tuple[RuntimeHarness, StandardContext, FunctionModel]]:
    main = harness.pop("model", None) or FunctionModel(lambda request: reply("ok"))
    engine_config = {"summary_model": "summary", **(config or {})}
    harness.setdefault("models", {"summary": FunctionModel(Summarizer())})
    harness.setdefault("context_window", WINDOW)
    with anyio.fail_after(20):
        async with RuntimeHarness(
            tmp_path, model=main, hooks=[lambda rt: StandardContextEngine().create(rt, engine_config)], **harness
        ) as rt:
            instance = rt.hooks[0]
            assert isinstance(instance, StandardContext)
            yield rt, instance, main


async def exchange(rt: RuntimeHarness, inbound: Any, number: int, text: str = LONG) -> None:
    """One inbound direct message and the turn that answers it."""
    await rt.agent.send(inbound(f"{number}: {text}", channel="private:42", message_id=str(number), user=("42", "Ana")))
    outcome = await (await rt.agent.continue_(reason="test"))
    assert outcome.status == "done", outcome


def compacts(rt: RuntimeHarness) -> list[dict[str, Any]]:
    return [dict(e.data) for e in rt.log.iter_forward() if e.type == "compact"]


def first_user_text(request: ModelRequest) -> str:
    return next(m.text for m in request.messages if m.role == "user")


async def test_the_instance_meets_the_protocol_and_owns_the_window(tmp_path: Path) -> None:
    async with runtime(tmp_path) as (_, instance, _):
        assert isinstance(instance, ContextEngineInstance)
        assert instance.hooks() is instance
        instructions = await instance.instructions()
        assert instructions is not None
        assert "first line is a header" in instructions


async def test_the_model_sees_rendered_messages_and_the_format_in_the_system_prompt(
    tmp_path: Path, inbound: Any
) -> None:
    async with runtime(tmp_path) as (rt, _, main):
        await exchange(rt, inbound, 1, "hello")
    system, user, *_ = main.requests[0].messages
    assert "Chat messages arrive as user messages" in system.text
    assert user.text == '[2023-11-14T22:13:20+00:00 | private | msg 1 | from "Ana" (id 42)]\n1: hello'


async def test_the_request_stays_inside_the_budget_and_drops_the_oldest_exchanges(tmp_path: Path, inbound: Any) -> None:
    async with runtime(tmp_path, {"summarize": False}) as (rt, _, main):
        for number in range(1, 21):
            await exchange(rt, inbound, number)
    for request in main.requests:
        assert estimate_messages_tokens(request.messages, request.tools) <= WINDOW * 0.75
    last = main.requests[-1]
    assert last.messages[-1].text.endswith(f"20: {LONG}")
    assert "msg 1 " not in "".join(m.text for m in last.messages)


async def test_dropped_exchanges_are_summarized_in_the_background_and_head_the_window(
    tmp_path: Path, inbound: Any
) -> None:
    summarizer = Summarizer()
    async with runtime(tmp_path, models={"summary": FunctionModel(summarizer)}) as (rt, instance, main):
        number = 0
        while not summarizer.requests:
            number += 1
            await exchange(rt, inbound, number)
            await instance.compactor.settled()
        (compact,) = compacts(rt)
        await exchange(rt, inbound, number + 1)
        entries = {e.id: e for e in rt.log.iter_forward()}
    request = summarizer.requests[0]
    assert request.priority == "background"
    assert request.max_tokens == 1024
    assert "running summary of a chat" in request.messages[0].text
    transcript = request.messages[1].text
    assert "msg 1 |" in transcript
    assert f"msg {number} |" not in transcript
    assert compact["summary"] == "SUMMARY 1"
    assert compact["min_trust"] == "trusted"  # the highest level of what it covers: only those may read it
    upto = compact["upto"]
    assert entries[upto + 1].data.get("source") is not None  # the cut is right before an exchange's message
    usage = next(e for e in entries.values() if e.type == "usage")
    assert usage.data == {
        "purpose": "context.summary",
        "model": "test:summary",
        "input_tokens": 300,
        "output_tokens": 20,
        "estimated": False,
    }
    after = main.requests[-1]
    assert first_user_text(after) == f"{SUMMARY_HEADER}\nSUMMARY 1"
    seen = "".join(m.text for m in after.messages)
    assert "msg 1 |" not in seen
    assert f"msg {number + 1} |" in seen


async def test_after_a_compaction_the_window_start_holds_until_the_budget_is_full_again(
    tmp_path: Path, inbound: Any
) -> None:
    async with runtime(tmp_path) as (rt, instance, main):
        for number in range(1, 31):
            await exchange(rt, inbound, number)
            await instance.compactor.settled()
        count = len(compacts(rt))
    # from the second request on: the first one's window holds a single message, so it has no two to compare
    starts = [[m.text for m in request.messages[1:3]] for request in main.requests[1:]]
    changes = sum(1 for before, now in itertools.pairwise(starts) if before != now)
    assert 3 <= count <= 6  # hysteresis: one compaction every few exchanges, not one every turn
    # the start moves twice per compaction (the turn that overflows, then the summary), never in between:
    # a window that only slid would move on every one of the ~20 turns after the first overflow
    assert changes <= 2 * count


async def test_a_failed_summary_keeps_the_thread_and_is_retried_after_the_next_turn(
    tmp_path: Path, inbound: Any, caplog: pytest.LogCaptureFixture
) -> None:
    summarizer = Summarizer()
    summarizer.failures.append(ModelUnavailable("summary model is down", model="summary"))
    caplog.set_level(logging.WARNING)
    async with runtime(tmp_path, models={"summary": FunctionModel(summarizer)}) as (rt, instance, main):
        number = 0
        while not summarizer.requests:
            number += 1
            await exchange(rt, inbound, number)
            await instance.compactor.settled()
        assert compacts(rt) == []
        assert "the summary of the entries up to" in caplog.text
        assert "retried after the next turn" in caplog.text
        cut = instance.compactor.cut
        assert cut is not None
        await exchange(rt, inbound, number + 1)
        seen = "".join(m.text for m in main.requests[-1].messages)
        newest_due = next(e for e in rt.log.iter_reverse() if e.id <= cut and e.data.get("source"))
        # until a summary exists, what it would stand for stays in the window as far as the budget allows
        assert SUMMARY_HEADER not in seen
        assert f"msg {newest_due.data['source']['messageId']} |" in seen
        await instance.compactor.settled()
        assert [c["summary"] for c in compacts(rt)] == ["SUMMARY 2"]
        assert instance.compactor.failures == 1


async def test_a_slow_summary_never_blocks_turns_and_lands_between_them(tmp_path: Path, inbound: Any) -> None:
    summarizer = Summarizer()
    summarizer.gate = anyio.Event()
    turn_gate, in_turn = anyio.Event(), anyio.Event()

    async def main_model(request: ModelRequest) -> ModelResult:
        if request.messages[-1].text.startswith("[") and "HOLD" in request.messages[-1].text:
            in_turn.set()
            await turn_gate.wait()
        return reply("ok")

    models = {"summary": FunctionModel(summarizer)}
    async with runtime(tmp_path, models=models, model=FunctionModel(main_model)) as (rt, instance, _):
        number = 0
        while not summarizer.requests:
            number += 1
            await exchange(rt, inbound, number)
        await summarizer.entered.wait()
        await exchange(rt, inbound, number + 1)  # a turn runs while the summary waits
        await rt.agent.send(inbound("HOLD", channel="private:42", message_id="hold", user=("42", "Ana")))
        handle = await rt.agent.continue_(reason="test")
        await in_turn.wait()
        summarizer.gate.set()  # the summary finishes while a turn runs: it waits for the turn's end
        await instance.compactor.settled()
        assert compacts(rt) == []
        turn_gate.set()
        await handle
        (compact,) = [e for e in rt.log.iter_forward() if e.type == "compact"]
        done = [e for e in rt.log.iter_forward() if e.name == "turn.done"][-1]
        assert compact.id > done.id
        assert compact.turn is None


async def test_a_session_boundary_ends_the_window(tmp_path: Path, inbound: Any) -> None:
    async with runtime(tmp_path) as (rt, _, main):
        await exchange(rt, inbound, 1, "before the clear")
        await rt.log.append("session", {"reason": "clear"})
        await exchange(rt, inbound, 2, "after the clear")
    seen = [m.text for m in main.requests[-1].messages[1:]]
    assert seen == ['[2023-11-14T22:13:20+00:00 | private | msg 2 | from "Ana" (id 42)]\n2: after the clear']


async def test_without_summaries_a_compact_entry_still_marks_the_cut(tmp_path: Path, inbound: Any) -> None:
    summarizer = Summarizer()
    async with runtime(tmp_path, {"summarize": False}, models={"summary": FunctionModel(summarizer)}) as (rt, _, m):
        for number in range(1, 16):
            await exchange(rt, inbound, number)
        assert compacts(rt)
        assert all(set(c) == {"upto"} for c in compacts(rt))
    assert summarizer.requests == []
    assert SUMMARY_HEADER not in "".join(msg.text for msg in m.requests[-1].messages)


async def test_message_times_use_the_option_then_the_host_time_zone(tmp_path: Path, inbound: Any) -> None:
    services = HostServices(timezone="Asia/Tokyo")
    async with runtime(tmp_path / "host", services=services) as (rt, _, main):
        await exchange(rt, inbound, 1, "hi")
    assert first_user_text(main.requests[0]).startswith("[2023-11-15T07:13:20+09:00 |")
    async with runtime(tmp_path / "option", {"timezone": "America/New_York"}, services=services) as (rt, _, main):
        await exchange(rt, inbound, 1, "hi")
    assert first_user_text(main.requests[0]).startswith("[2023-11-14T17:13:20-05:00 |")


async def test_an_unknown_host_time_zone_falls_back_to_utc(
    tmp_path: Path, inbound: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async with runtime(tmp_path, services=HostServices(timezone="Mars/Olympus")) as (rt, _, main):
        await exchange(rt, inbound, 1, "hi")
    assert first_user_text(main.requests[0]).startswith("[2023-11-14T22:13:20+00:00 |")
    assert "unknown host time zone 'Mars/Olympus'" in caplog.text


async def test_cross_mode_renders_channel_coordinates(tmp_path: Path, inbound: Any) -> None:
    profile = Profile(id="x", directory=tmp_path, file=tmp_path / "profile.yml", persona="P.", model="m", mode="cross")
    async with runtime(tmp_path, profile=profile) as (rt, _, main):
        await rt.agent.send(inbound("in a group", channel="group:-100", message_id="5"))
        await rt.agent.send(inbound("in private", channel="private:42", platform="discord", self_id="app"))
        await (await rt.agent.continue_(reason="test"))
    system, group, private = main.requests[0].messages
    assert "target for send_message" in system.text
    assert group.text.startswith("[2023-11-14T22:13:20+00:00 | telegram:bot1 group:-100 | msg 5 |")
    assert private.text.startswith("[2023-11-14T22:13:20+00:00 | discord:app private:42 | msg m1 |")


def test_bad_options_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r'context\.standard: unknown option "budget" \(did you mean "budget_ratio"'):
        StandardContextEngine().create(None, {"budget": 0.5})
    with pytest.raises(ConfigError, match=r"context\.standard\.refill_ratio: 2 is invalid"):
        StandardContextEngine().create(None, {"refill_ratio": 2})
    harness = RuntimeHarness(tmp_path, model=FunctionModel(lambda r: reply("ok")))
    with pytest.raises(ConfigError, match=r'profile\.yml: context\.standard\.timezone: unknown time zone "Nowhere/X"'):
        StandardContextEngine().create(harness.context, {"timezone": "Nowhere/X"})
    with pytest.raises(ConfigError, match=r'context\.standard\.summary_model: no model "cheap" in models\.yaml'):
        StandardContextEngine().create(harness.context, {"summary_model": "cheap"})


async def test_a_summary_that_takes_too_long_is_abandoned_and_retried(
    tmp_path: Path, inbound: Any, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    summarizer = Summarizer()
    summarizer.gate = anyio.Event()
    models = {"summary": FunctionModel(summarizer)}
    config = {"summary_timeout_seconds": 30}
    async with runtime(tmp_path, config, models=models, clock=fake_clock) as (rt, instance, _):
        number = 0
        while instance.compactor.cut is None:
            number += 1
            await exchange(rt, inbound, number)
        await summarizer.entered.wait()
        await fake_clock.advance(31)  # the summary's deadline, on the runtime's clock
        await instance.compactor.settled()
        assert compacts(rt) == []
        assert instance.compactor.failures == 1
        assert "failed (no answer within 30 s)" in caplog.text
        summarizer.gate.set()
        await exchange(rt, inbound, number + 1)
        await instance.compactor.settled()
        assert [c["summary"] for c in compacts(rt)] == ["SUMMARY 2"]


async def test_compact_now_after_a_context_length_error(tmp_path: Path, inbound: Any) -> None:
    def main_model(request: ModelRequest) -> ModelResult:
        if request.messages[-1].text.endswith("TOO LONG"):
            raise ContextLengthExceeded("prompt is too long for this model", model="main")
        return reply("ok")

    async with runtime(tmp_path, context_window=100_000, model=FunctionModel(main_model)) as (rt, instance, main):
        for number in range(1, 7):
            await exchange(rt, inbound, number)
        assert instance.compactor.cut is None  # everything fits by the estimate
        await rt.agent.send(inbound("TOO LONG", channel="private:42", message_id="x", user=("42", "Ana")))
        outcome = await (await rt.agent.continue_(reason="test"))
        assert outcome.kind == "context_length"
        assert await instance.compact()
        (compact,) = compacts(rt)
        retry = await (await rt.agent.continue_(reason="retry"))
        assert retry.status == "failed"  # the fake model refuses this message whatever the window
        seen = [m.text for m in main.requests[-1].messages[1:]]
        assert seen[0] == f"{SUMMARY_HEADER}\nSUMMARY 1"
        assert len(seen) < 2 * 7  # about half of the exchanges left, behind the summary
        assert compact["upto"] < rt.log.last_id
        assert not await StandardContextEngine().create(rt.context, {}).compact()  # a new instance has no window yet
