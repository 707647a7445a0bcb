"""What channels report in ``source.extra`` shapes every wakeup engine alike: an edit (``editedAt``) never starts
a turn by itself, and a group that needs no mention (``mentionRequired: false``) counts every message as
addressed. Each case runs on the standard, willingness and jev engines, on a real runtime."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.engines.wakeup.jev import JevWakeupEngine
from ishiki_host.engines.wakeup.standard import StandardWakeupEngine, wake_rule
from ishiki_host.engines.wakeup.willingness import WillingnessWakeupEngine
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply

pytestmark = pytest.mark.anyio

ENGINES: dict[str, Callable[[RuntimeHarness], Any]] = {
    "standard": lambda rt: StandardWakeupEngine().create(rt, {}),
    # A direct message alone reaches p = 1 (the default gain of 52 would wait for a second one).
    "willingness": lambda rt: WillingnessWakeupEngine().create(rt, {"seed": 7, "is_direct_message": 100}),
    "jev": lambda rt: JevWakeupEngine().create(rt, {"model": "judge", "interests": "tea"}),
}
NOT_FOR_ME = '{"addressed": 0.0, "interested": 0.0, "others": 1.0}'


class Judge:
    """The jev judge: always "not for me"; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.model = FunctionModel(self._answer, name="judge")

    def _answer(self, request: ModelRequest) -> ModelResult:
        self.calls += 1
        return reply(NOT_FOR_ME, model="judge")


def turn_starts(rt: RuntimeHarness) -> list[dict[str, Any]]:
    return [t for e in rt.log.iter_forward() if e.name == "turn.start" for t in e.data["triggers"]]


async def settle(rt: RuntimeHarness, engine: Any) -> None:
    for _ in range(2):  # jev: judges, then the records they hold for a turn that just ended
        await rt.agent.wait_idle()
        settled = getattr(engine, "settled", None)
        if settled is not None:
            await settled()


@pytest.fixture(params=sorted(ENGINES))
def engine_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def run_case(
    name: str, home: Path, wakeup_runtime: Any, messages: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """Deliver ``messages`` one by one (each decided before the next); the turns' triggers and judge calls."""
    judge = Judge()
    harness = {"clock": FakeClock(), "models": {"judge": judge.model}}
    model = FunctionModel(lambda request: reply("ok"))
    async with wakeup_runtime(home, model, ENGINES[name], **harness) as (rt, engine):
        for data in messages:
            await rt.agent.send(data)
            await settle(rt, engine)
        return turn_starts(rt), judge.calls


async def test_an_edit_in_a_private_chat_gets_no_second_answer(
    engine_name: str, tmp_path: Path, inbound: Any, wakeup_runtime: Any
) -> None:
    original = inbound("helo, are you there?", channel="private:42", message_id="5")
    fixed = inbound("hello, are you there?", channel="private:42", message_id="5", extra={"editedAt": 1_700_000_060})
    starts, judged = await run_case(engine_name, tmp_path, wakeup_runtime, [original, fixed])
    assert [t["entry"] for t in starts] == [1]  # the original only; the edit (entry 2+) started nothing
    assert judged == 0


async def test_an_edit_in_a_group_is_not_decided_on(
    engine_name: str, tmp_path: Path, inbound: Any, wakeup_runtime: Any
) -> None:
    fixed = inbound("@bot tea?", channel="group:g1", message_id="9", mentions=True, extra={"editedAt": 1_700_000_060})
    starts, judged = await run_case(engine_name, tmp_path, wakeup_runtime, [fixed])
    assert (starts, judged) == ([], 0)  # not even a mention added by an edit; and no judge call


async def test_a_group_that_needs_no_mention_counts_every_message_as_addressed(
    engine_name: str, tmp_path: Path, inbound: Any, wakeup_runtime: Any
) -> None:
    chatter = inbound("anyone up for tea?", channel="group:g1", message_id="3", extra={"mentionRequired": False})
    starts, judged = await run_case(engine_name, tmp_path, wakeup_runtime, [chatter])
    assert [t["entry"] for t in starts] == [1]
    assert judged == 0  # jev: its atSelf rule, no judge call
    rule = {"standard": "open", "jev": "atSelf"}.get(engine_name)
    if rule is not None:
        assert starts[0]["rule"] == rule
    else:
        assert starts[0]["probability"] == 1


async def test_a_group_that_requires_a_mention_leaves_each_engine_to_its_own_rules(
    engine_name: str, tmp_path: Path, inbound: Any, wakeup_runtime: Any
) -> None:
    chatter = inbound("anyone up for tea?", channel="group:g1", message_id="3", extra={"mentionRequired": True})
    starts, judged = await run_case(engine_name, tmp_path, wakeup_runtime, [chatter])
    assert starts == []  # standard: no mention; willingness: one message is far below the threshold
    assert judged == (1 if engine_name == "jev" else 0)  # jev asks its judge, as for any group message


def test_the_open_rule_holds_with_the_mention_rule_off_and_never_in_a_private_chat(inbound: Any) -> None:
    open_chat = Entry(1, "message", 0.0, inbound("tea?", extra={"mentionRequired": False}))
    private = Entry(2, "message", 0.0, inbound("tea?", channel="private:1", extra={"mentionRequired": False}))
    assert wake_rule(open_chat, mention=False) == "open"
    assert wake_rule(private, direct=False) is None
