"""The ``jev`` engine on a real runtime: rules, cooldown, the judge call, its failures, and one judge per channel."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host import RuntimeContext
from ishiki_host.config.models import ModelsConfig, ModelSpec
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import ModelRequest, ModelResult, Usage
from ishiki_host.engines.wakeup._inbound import channel_key
from ishiki_host.engines.wakeup.jev import JevWakeup, JevWakeupEngine
from ishiki_host.errors import ConfigError, ModelUnavailable
from ishiki_host.gateway import Gateway
from ishiki_host.plugins.runtime_api import WakeupEngineInstance
from ishiki_host.testing import FakeOpenAIServer
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply, tool_call

pytestmark = pytest.mark.anyio

G1 = channel_key("telegram:bot1", "group:g1")
ADDRESSED = '{"addressed": 0.9, "interested": 0.2, "others": 0.0}'
NOT_FOR_ME = '{"addressed": 0.1, "interested": 0.1, "others": 0.9}'


class Judge:
    """A judge model answering from a list of verdicts (or callables); it records every request."""

    def __init__(self, *verdicts: str | Callable[[ModelRequest], Any]):
        self.verdicts = list(verdicts)
        self.requests: list[ModelRequest] = []
        self.model = FunctionModel(self._answer, name="cheap:judge")

    async def _answer(self, request: ModelRequest) -> ModelResult:
        self.requests.append(request)
        verdict = self.verdicts.pop(0)
        if callable(verdict):
            verdict = await verdict(request)
        return reply(verdict, usage=Usage(90, 12), model="cheap:judge")


def jev(config: dict[str, Any] | None = None) -> Callable[[RuntimeContext], JevWakeup]:
    return lambda rt: JevWakeupEngine().create(rt, {"model": "cheap", "interests": "tea", **(config or {})})


def answering() -> FunctionModel:
    return FunctionModel(lambda request: reply("ok"))


def turn_starts(rt: RuntimeHarness) -> list[dict[str, Any]]:
    return [t for e in rt.log.iter_forward() if e.name == "turn.start" for t in e.data["triggers"]]


def records(rt: RuntimeHarness) -> list[dict[str, Any]]:
    return [dict(e.data) for e in rt.log.iter_forward() if e.type == "custom" and e.data.get("kind") == "jev.judge"]


async def settle(rt: RuntimeHarness, engine: JevWakeup) -> None:
    await engine.settled()
    await rt.agent.wait_idle()
    await engine.settled()  # records held for the turn that just ended


async def test_direct_messages_and_mentions_start_a_turn_without_the_judge(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    judge = Judge()
    harness = {"clock": clock, "models": {"cheap": judge.model}}
    async with wakeup_runtime(tmp_path, answering(), jev(), **harness) as (rt, engine):
        assert isinstance(engine, WakeupEngineInstance)
        await rt.agent.send(inbound("hi", channel="private:42", message_id="1"))
        await rt.agent.send(inbound("@bot tea?", message_id="2", mentions=True))
        await settle(rt, engine)
        starts = turn_starts(rt)
    assert [(t["entry"], t["rule"]) for t in starts] == [(1, "direct"), (4, "atSelf")]
    assert judge.requests == []


async def test_the_judge_reads_the_channel_and_its_verdict_starts_a_turn(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    judge = Judge(NOT_FOR_ME, ADDRESSED)
    harness = {"clock": clock, "models": {"cheap": judge.model}}
    async with wakeup_runtime(tmp_path, answering(), jev({"history_messages": 3}), **harness) as (rt, engine):
        await rt.agent.send(inbound("morning", message_id="1", user=("7", "Bob")))
        await settle(rt, engine)
        assert turn_starts(rt) == []
        await rt.agent.send(inbound("elsewhere", channel="group:other", message_id="2", mentions=True))
        await settle(rt, engine)
        await rt.agent.send(inbound("so, any tea for the bot?", message_id="3", user=("8", "Cy")))
        await settle(rt, engine)
        starts = turn_starts(rt)
        judged = records(rt)
        usage = [e.data for e in rt.log.iter_forward() if e.type == "usage"]
    assert starts[-1] == {
        "by": "continue", "entry": 9, "channel": G1, "rule": "judge", "score": 0.9487, "reason": "wakeup.jev"
    }  # fmt: skip
    request = judge.requests[-1]
    assert (request.priority, request.temperature) == ("background", 0.0)
    prompt = request.messages[1].text
    assert "Interests: tea" in prompt
    assert "Bob: morning\ntest (the bot): ok\nCy: so, any tea for the bot?\n</conversation>" in prompt
    assert "elsewhere" not in prompt
    assert judged[0] == {
        "kind": "jev.judge", "entry": 1, "channel": G1, "trigger": False, "reason": "judge", "score": 0.1,
        "scores": {"addressed": 0.1, "interested": 0.1, "others": 0.9}, "model": "cheap:judge", "ms": 0,
    }  # fmt: skip
    assert judged[1]["trigger"] is True
    assert usage[0] == {
        "purpose": "jev.judge", "model": "cheap:judge", "input_tokens": 90, "output_tokens": 12, "estimated": False
    }  # fmt: skip


async def test_a_cooldown_after_the_bot_sent_keeps_the_judge_quiet(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, emit_sent: Any, clock: FakeClock
) -> None:
    judge = Judge(ADDRESSED)
    harness = {"clock": clock, "models": {"cheap": judge.model}}
    async with wakeup_runtime(tmp_path, answering(), jev(), **harness) as (rt, engine):
        await emit_sent(rt, "group:g1")
        await clock.advance(29.9)
        await rt.agent.send(inbound("and then?", message_id="1"))
        await settle(rt, engine)
        assert (judge.requests, turn_starts(rt)) == ([], [])
        await rt.agent.send(inbound("@bot still there?", message_id="2", mentions=True))
        await settle(rt, engine)
        assert [t["rule"] for t in turn_starts(rt)] == ["atSelf"]  # rules ignore the cooldown
        await clock.advance(0.2)
        await rt.agent.send(inbound("and now?", message_id="3"))
        await settle(rt, engine)
        assert len(judge.requests) == 1
        assert [t["rule"] for t in turn_starts(rt)] == ["atSelf", "judge"]


@pytest.mark.parametrize(
    ("verdict", "detail"),
    [
        ("```json\n" + ADDRESSED + "\n```", "not one JSON object"),
        ('{"addressed": 0.9, "interested": 0.2}', "missing keys ['others']"),
        ('{"addressed": "high", "interested": 0.2, "others": 0}', '"addressed" must be a number'),
        ("Sure! I think they are talking to you.", "not one JSON object"),
    ],
)
async def test_a_bad_verdict_means_wait_and_is_logged_and_recorded(
    tmp_path: Path,
    inbound: Any,
    wakeup_runtime: Any,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    verdict: str,
    detail: str,
) -> None:
    judge = Judge(verdict)
    harness = {"clock": clock, "models": {"cheap": judge.model}}
    with caplog.at_level(logging.WARNING):
        async with wakeup_runtime(tmp_path, answering(), jev(), **harness) as (rt, engine):
            await rt.agent.send(inbound("hello?", message_id="1"))
            await settle(rt, engine)
            (record,) = records(rt)
            assert turn_starts(rt) == []
    assert (record["trigger"], record["reason"], record["score"]) == (False, "judge_error", None)
    assert detail in record["detail"]
    assert "the judge failed on entry 1" in caplog.text


async def test_a_judge_past_its_deadline_on_the_runtime_clock_means_wait(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    async def never(request: ModelRequest) -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    judge = Judge(never)
    harness = {"clock": clock, "models": {"cheap": judge.model}}
    async with wakeup_runtime(tmp_path, answering(), jev({"timeout_ms": 1500}), **harness) as (rt, engine):
        await rt.agent.send(inbound("hello?", message_id="1"))
        await clock.wait_for_sleepers()
        await clock.advance(1.4)
        assert records(rt) == []
        await clock.advance(0.1)
        await settle(rt, engine)
        (record,) = records(rt)
        assert turn_starts(rt) == []
    assert record["detail"] == "no answer within 1500 ms"
    assert record["ms"] == 1500


async def test_a_model_error_means_wait(tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock) -> None:
    async def down(request: ModelRequest) -> str:
        raise ModelUnavailable("503 from upstream", model="cheap:judge")

    harness = {"clock": clock, "models": {"cheap": Judge(down).model}}
    async with wakeup_runtime(tmp_path, answering(), jev(), **harness) as (rt, engine):
        await rt.agent.send(inbound("hello?", message_id="1"))
        await settle(rt, engine)
        (record,) = records(rt)
        assert turn_starts(rt) == []
    assert record["detail"] == "ModelUnavailable: 503 from upstream"


@pytest.mark.parametrize(
    ("first", "calls", "starts"),
    [
        (NOT_FOR_ME, 2, [(3, "judge")]),  # wait: judged once more, with the latest history
        (ADDRESSED, 1, [(1, "judge")]),  # trigger: the turn reads everything; no second call
    ],
)
async def test_messages_during_a_judge_make_at_most_one_more_judge(
    tmp_path: Path,
    inbound: Any,
    wakeup_runtime: Any,
    clock: FakeClock,
    first: str,
    calls: int,
    starts: list[tuple[int, str]],
) -> None:
    asked, release = anyio.Event(), anyio.Event()

    async def slow(request: ModelRequest) -> str:
        asked.set()
        await release.wait()
        return first

    judge = Judge(slow, ADDRESSED)
    harness = {"clock": clock, "models": {"cheap": judge.model}}
    async with wakeup_runtime(tmp_path, answering(), jev(), **harness) as (rt, engine):
        await rt.agent.send(inbound("one", message_id="1"))
        await asked.wait()
        await rt.agent.send(inbound("two", message_id="2"))
        await rt.agent.send(inbound("three", message_id="3"))
        release.set()
        await settle(rt, engine)
        started = [(t["entry"], t["rule"]) for t in turn_starts(rt)]
    assert (len(judge.requests), started) == (calls, starts)
    assert judge.requests[-1].messages[1].text.endswith(f"Ana: {'three' if calls == 2 else 'one'}\n</conversation>")


async def test_a_mention_during_a_judge_answers_and_the_verdict_adds_no_turn(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    asked, release = anyio.Event(), anyio.Event()

    async def slow(request: ModelRequest) -> str:
        asked.set()
        await release.wait()
        return ADDRESSED

    judge = Judge(slow)
    harness = {"clock": clock, "models": {"cheap": judge.model}}
    async with wakeup_runtime(tmp_path, answering(), jev(), **harness) as (rt, engine):
        await rt.agent.send(inbound("one", message_id="1"))
        await asked.wait()
        await rt.agent.send(inbound("@bot two", message_id="2", mentions=True))
        await rt.agent.wait_idle()
        release.set()
        await settle(rt, engine)
        started = [(t["entry"], t["rule"]) for t in turn_starts(rt)]
        (record,) = records(rt)
    assert started == [(2, "atSelf")]
    assert record["trigger"] is True


async def test_judge_records_wait_for_a_running_turn_to_end(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    asked, release_judge, in_turn, release_turn = anyio.Event(), anyio.Event(), anyio.Event(), anyio.Event()

    async def slow_judge(request: ModelRequest) -> str:
        asked.set()
        await release_judge.wait()
        return NOT_FOR_ME

    async def slow_turn(request: ModelRequest) -> ModelResult:
        in_turn.set()
        await release_turn.wait()
        return reply("ok")

    harness = {"clock": clock, "models": {"cheap": Judge(slow_judge).model}}
    async with wakeup_runtime(tmp_path, FunctionModel(slow_turn), jev(), **harness) as (rt, engine):
        await rt.agent.send(inbound("group talk", message_id="1"))
        await asked.wait()
        await rt.agent.send(inbound("hi", channel="private:42", message_id="2"))
        await in_turn.wait()
        release_judge.set()
        await anyio.wait_all_tasks_blocked()
        assert records(rt) == []
        release_turn.set()
        await settle(rt, engine)
        kinds = [e.name or e.data.get("kind") or e.data.get("role") for e in rt.log.iter_forward()]
    assert kinds == ["user", "user", "turn.start", "assistant", "reply_with_text", "turn.done", "jev.judge", None]


async def test_history_stops_at_a_session_boundary_and_keeps_the_bots_sends(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, clock: FakeClock
) -> None:
    judge = Judge(NOT_FOR_ME)
    harness = {"clock": clock, "models": {"cheap": judge.model}}
    async with wakeup_runtime(tmp_path, answering(), jev(), **harness) as (rt, engine):
        await rt.log.append("message", inbound("forgotten", message_id="0"))
        await rt.log.append("session", {"reason": "clear"})
        said = reply("", tool_call("send_message", {"text": "I said this"})).message()
        await rt.log.append("message", said.to_dict())
        await rt.agent.send(inbound("remembered", message_id="1"))
        await settle(rt, engine)
    prompt = judge.requests[0].messages[1].text
    assert "forgotten" not in prompt
    assert "test (the bot): I said this\nAna: remembered" in prompt


async def test_an_unknown_judge_model_is_a_config_error_at_create(tmp_path: Path) -> None:
    async with RuntimeHarness(tmp_path, model=answering()) as rt:
        with pytest.raises(ConfigError) as caught:
            JevWakeupEngine().create(rt.context, {"model": "nope"})
    assert caught.value.path == "wakeup.jev.model"
    assert 'no model "nope"' in caught.value.message


async def test_judges_wait_for_the_engine_task(tmp_path: Path, inbound: Any, clock: FakeClock) -> None:
    judge = Judge(ADDRESSED)
    async with RuntimeHarness(tmp_path, model=answering(), clock=clock, models={"cheap": judge.model}) as rt:
        engine = jev()(rt.context)
        dispose = engine.attach(rt.context)
        await rt.agent.send(inbound("queued", message_id="1"))
        assert judge.requests == []
        async with anyio.create_task_group() as tg:
            await tg.start(engine.run)
            await settle(rt, engine)
            tg.cancel_scope.cancel()
        dispose()
        assert [t["rule"] for t in turn_starts(rt)] == ["judge"]
        assert [r["entry"] for r in records(rt)] == [1]


async def test_the_judge_and_the_turn_go_over_http(
    tmp_path: Path, inbound: Any, wakeup_runtime: Any, fake_openai: FakeOpenAIServer, model_apis: Any
) -> None:
    clock = FakeClock()
    specs = [ModelSpec("chat", context_window=8000), ModelSpec("judge", context_window=8000)]
    config = ModelsConfig(providers={"fake": fake_openai.provider("fake", specs)})
    fake_openai.reply(ADDRESSED)
    fake_openai.reply("Tea, of course.")
    async with Gateway(config, model_apis, clock=clock) as gateway:
        harness = {"clock": clock, "models": {"fake:judge": gateway.model("fake:judge")}}
        make = jev({"model": "fake:judge"})
        async with wakeup_runtime(tmp_path, gateway.model("fake:chat"), make, **harness) as (rt, engine):
            await rt.agent.send(inbound("what should the bot drink?", message_id="1"))
            await settle(rt, engine)
            starts = turn_starts(rt)
            (record,) = records(rt)
    judged, answered = (r.json for r in fake_openai.requests)
    assert (judged["model"], judged["temperature"], judged["max_tokens"]) == ("judge", 0.0, 64)
    assert "Ana: what should the bot drink?" in judged["messages"][1]["content"]
    assert answered["model"] == "chat"
    assert (record["model"], record["score"]) == ("fake:judge", 0.9487)
    assert [t["rule"] for t in starts] == ["judge"]
