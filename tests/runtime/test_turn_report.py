"""A turn's report says how long it ran by the runtime's clock and which tools it called, and the host's turn
listeners get it with the runtime's key (a listener that raises is logged and the others still run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_host import hookimpl
from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.plugins.runtime_api import TurnReport
from ishiki_host.testing import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply, tool_call

pytestmark = pytest.mark.anyio


class Reports:
    """An extension keeping every turn report it is given."""

    def __init__(self) -> None:
        self.reports: list[TurnReport] = []

    @hookimpl
    def ishiki_turn_finished(self, outcome: TurnReport) -> None:
        self.reports.append(outcome)


async def test_the_report_has_the_turns_time_and_tool_calls(tmp_path: Path, fake_clock: FakeClock) -> None:
    async def answer(request: ModelRequest) -> ModelResult:
        await fake_clock.advance(1.5)  # each model call takes 1.5 s of the runtime's clock
        if len(model.requests) == 1:
            return reply("", tool_call("read", {"url": "asset://nothing"}), tool_call("finish"))
        return reply("", tool_call("finish"))

    model = FunctionModel(answer)
    kept = Reports()
    async with RuntimeHarness(tmp_path, model=model, clock=fake_clock, kernel_tools=True) as rt:
        await rt.mount_extension(kept)
        await rt.say("hi")
        await rt.settled(background=True)
    (report,) = kept.reports
    assert report.status == "done"
    assert report.seconds == pytest.approx(1.5)
    assert report.tools == ("read", "finish")


async def test_turn_listeners_get_the_key_and_report_and_one_that_raises_is_logged(
    tmp_path: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[tuple[RuntimeKey, str]] = []

    def broken(key: RuntimeKey, report: TurnReport) -> None:
        raise RuntimeError("listener broke")

    model = FunctionModel(lambda request: reply("hello"))
    listeners = (broken, lambda key, report: heard.append((key, report.status)))
    harness = RuntimeHarness(tmp_path, model=model, clock=fake_clock, kernel_tools=True, turn_listeners=listeners)
    async with harness as rt:
        await rt.say("hi")
        await rt.settled()
        key = rt.key
    assert heard == [(key, "done")]
    assert "turn listener" in caplog.text
    assert "listener broke" in caplog.text
