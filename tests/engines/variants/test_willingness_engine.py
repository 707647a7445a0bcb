"""The ``willingness`` engine on a real runtime: replayable decisions, persisted scores, reply cost, unseen messages."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.engines.wakeup._inbound import channel_key
from ishiki_host.engines.wakeup.willingness import STATE_FILE, WillingnessWakeup, WillingnessWakeupEngine
from ishiki_host.errors import ConfigError
from ishiki_host.plugins.runtime_api import WakeupEngineInstance
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply

pytestmark = pytest.mark.anyio

G1 = channel_key("telegram:bot1", "group:g1")
G2 = channel_key("telegram:bot1", "group:g2")


def engine(config: dict[str, Any] | None = None) -> Any:
    return lambda rt: WillingnessWakeupEngine().create(rt, {"seed": 7, **(config or {})})


def answering() -> FunctionModel:
    return FunctionModel(lambda request: reply("ok"))


def turn_starts(rt: RuntimeHarness) -> list[dict[str, Any]]:
    return [t for e in rt.log.iter_forward() if e.name == "turn.start" for t in e.data["triggers"]]


async def replay(home: Path, inbound: Any, wakeup_runtime: Any, emit_sent: Any) -> tuple[list[Any], dict[str, Any]]:
    """Forty group messages in two channels, a few seconds apart; the bot 'sends' after each turn."""
    clock = FakeClock()
    async with wakeup_runtime(home, answering(), engine(), clock=clock) as (rt, _):
        for number in range(40):
            channel = "group:g1" if number % 3 else "group:g2"
            answered = len(turn_starts(rt))
            await rt.agent.send(inbound(f"message {number}", channel=channel, message_id=str(number)))
            await rt.agent.wait_idle()
            if len(turn_starts(rt)) > answered:
                await emit_sent(rt, channel)
            await clock.advance(7)
        starts = turn_starts(rt)
    return starts, json.loads((home / STATE_FILE).read_text())


async def test_the_same_messages_on_the_same_clock_and_seed_make_the_same_decisions(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, emit_sent: Any
) -> None:
    first = await replay(tmp_path / "a", inbound, wakeup_runtime, emit_sent)
    second = await replay(tmp_path / "b", inbound, wakeup_runtime, emit_sent)
    assert first == second
    starts, state = first
    assert 2 <= len(starts) < 40  # some messages answered, most not
    assert any(0 < t["probability"] < 1 for t in starts)  # decided by the die, not only by certainty
    assert {t["reason"] for t in starts} == {"wakeup.willingness"}
    assert set(state["channels"]) == {G1, G2}


async def test_a_mention_from_zero_starts_a_turn_and_plain_chatter_does_not(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    async with wakeup_runtime(tmp_path, answering(), engine(), clock=clock) as (rt, willingness):
        assert isinstance(willingness, WakeupEngineInstance)
        await rt.agent.send(inbound("hello all", message_id="1"))
        await rt.agent.wait_idle()
        assert turn_starts(rt) == []
        assert willingness.score(G1) == pytest.approx(12)
        await rt.agent.send(inbound("@bot hi", message_id="2", mentions=True))
        await rt.agent.wait_idle()
        (start,) = turn_starts(rt)
    assert start == {
        "by": "continue", "entry": 2, "channel": G1, "score": 100, "probability": 1, "reason": "wakeup.willingness"
    }  # fmt: skip


async def test_with_the_defaults_a_first_direct_message_waits_and_is_direct_message_is_the_knob(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    dm = inbound("hi", channel="private:42", message_id="1")
    async with wakeup_runtime(tmp_path / "a", answering(), engine(), clock=clock) as (rt, willingness):
        await rt.agent.send(dm)
        await rt.agent.wait_idle()
        assert turn_starts(rt) == []
        assert willingness.score(channel_key("telegram:bot1", "private:42")) == pytest.approx(52)
    async with wakeup_runtime(tmp_path / "b", answering(), engine({"is_direct_message": 68}), clock=clock) as (rt, _):
        await rt.agent.send(dm)
        await rt.agent.wait_idle()
        assert [t["probability"] for t in turn_starts(rt)] == [1]


async def test_scores_survive_a_restart_and_decay_while_the_host_was_down(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    async with wakeup_runtime(tmp_path, answering(), engine(), clock=clock) as (rt, willingness):
        for number in range(3):
            await rt.agent.send(inbound(f"chatter {number}", message_id=str(number)))
        await rt.agent.send(inbound("other room", channel="group:g2", message_id="9"))
        before = willingness.score(G1)
    saved = json.loads((tmp_path / STATE_FILE).read_text())
    assert saved["lastEntry"] == 4
    assert saved["channels"][G1] == {"score": pytest.approx(before), "updatedAt": clock.now()}
    await clock.advance(600)
    async with wakeup_runtime(tmp_path, answering(), engine(), clock=clock) as (rt, willingness):
        assert willingness.score(G1) == pytest.approx(before / 2)
        assert willingness.score(G2) == pytest.approx(6)
        assert willingness.scored == 4


async def test_a_reply_costs_only_the_channel_it_went_to(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, emit_sent: Any, clock: FakeClock
) -> None:
    async with wakeup_runtime(tmp_path, answering(), engine(), clock=clock) as (rt, willingness):
        for number, channel in enumerate(["group:g1"] * 4 + ["group:g2"] * 2):
            await rt.agent.send(inbound("talk", channel=channel, message_id=str(number)))
        g1, g2 = willingness.score(G1), willingness.score(G2)
        assert g1 == pytest.approx(40.0, abs=0.1)
        await emit_sent(rt, "group:g1")
        assert willingness.score(G1) == pytest.approx(g1 - 35)
        assert willingness.score(G2) == pytest.approx(g2)
        await emit_sent(rt, "group:g1")
        assert willingness.score(G1) == 0
    assert json.loads((tmp_path / STATE_FILE).read_text())["channels"][G2]["score"] == pytest.approx(g2)


async def test_a_message_that_joined_a_turn_warms_its_channel_and_is_decided_if_the_turn_missed_it(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    started, release = anyio.Event(), anyio.Event()
    calls: list[ModelRequest] = []

    async def slow(request: ModelRequest) -> ModelResult:
        calls.append(request)
        if len(calls) == 1:
            started.set()
            await release.wait()
        return reply("ok")

    async with wakeup_runtime(tmp_path, FunctionModel(slow), engine(), clock=clock) as (rt, willingness):
        await rt.agent.send(inbound("@bot first", message_id="1", mentions=True))
        await started.wait()
        await rt.agent.send(inbound("@bot second", message_id="2", mentions=True))
        assert willingness.scored == 1  # held for the running turn: not in the log yet
        release.set()
        await rt.agent.wait_idle()
        starts = turn_starts(rt)
    assert [(t["entry"], t["probability"]) for t in starts] == [(1, 1), (4, 1)]
    assert len(calls) == 2


async def test_reconsider_scores_unscored_messages_once_and_rolls_once_per_channel(
    tmp_path: Path, inbound: Any, clock: FakeClock
) -> None:
    async with RuntimeHarness(tmp_path, model=answering(), clock=clock) as rt:
        willingness = WillingnessWakeupEngine().create(rt.context, {"seed": 1})
        assert isinstance(willingness, WillingnessWakeup)
        entries = [(await rt.agent.send(inbound("hey", message_id=str(n)))).entry for n in range(3)]
        await willingness.reconsider([e for e in entries if e is not None])
        once = willingness.score(G1)
        await willingness.reconsider([e for e in entries if e is not None])
        assert willingness.score(G1) == once
        await rt.agent.wait_idle()
    second = 12 + 12 * (1 - 12 / 100)
    assert once == pytest.approx(second + 12 * (1 - second / 100))


@pytest.mark.parametrize(
    "content",
    [
        b'{"version": 1, "channels": {"x": {"score": "high"}}}',
        b"[" * 100_000,  # json.loads recursed and raised RecursionError out of the engine
        b'{"version": 1, "lastEntry": ' + b"9" * 5_000 + b"}",
        b'{"version": 1, "channels": {}, "x": "\xff"}',
        b"[1, 2]",
    ],
    ids=["bad-score", "deep", "huge-int", "latin-1", "not-an-object"],
)
async def test_a_corrupt_state_file_is_set_aside_and_scores_start_from_zero(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture, content: bytes
) -> None:
    (tmp_path / STATE_FILE).write_bytes(content)
    with caplog.at_level(logging.WARNING):
        async with RuntimeHarness(tmp_path, model=answering(), clock=clock) as rt:
            willingness = WillingnessWakeupEngine().create(rt.context, {})
            assert len(willingness.model) == 0
    assert (tmp_path / (STATE_FILE + ".corrupt")).exists()
    assert not (tmp_path / STATE_FILE).exists()
    assert "cannot be read" in caplog.text


async def test_bad_options_are_config_errors_naming_the_key(tmp_path: Path) -> None:
    async with RuntimeHarness(tmp_path, model=answering()) as rt:
        with pytest.raises(ConfigError) as caught:
            WillingnessWakeupEngine().create(rt.context, {"probability_threshold": 100})
        assert caught.value.path == "wakeup.willingness.probability_threshold"
        with pytest.raises(ConfigError, match="did you mean"):
            WillingnessWakeupEngine().create(rt.context, {"replycost": 3})
