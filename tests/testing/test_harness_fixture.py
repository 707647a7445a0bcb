"""The ``runtime_harness`` fixture makes entered harnesses on the test's clock and leaves the forgotten ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_host import FakeClock
from ishiki_host.testing import ScriptedModel, TestModel
from ishiki_host.testing.harness_factory import HarnessFactory, RuntimeHarnessFactory

pytestmark = pytest.mark.anyio


async def test_a_harness_in_tmp_path_on_the_fake_clock(
    runtime_harness: RuntimeHarnessFactory, tmp_path: Path, fake_clock: FakeClock
) -> None:
    async with runtime_harness() as rt:
        assert rt.state == "ready"
        assert rt.home == tmp_path / "runtime1"
        assert rt.clock is fake_clock
        assert isinstance(rt.model, TestModel)
        outcome = await rt.say("hi")
    assert outcome.status == "done"
    assert rt.state == "stopped"


async def test_options_reach_the_harness(runtime_harness: RuntimeHarnessFactory, tmp_path: Path) -> None:
    clock = FakeClock(start=5.0)
    model = ScriptedModel(["one"])
    first = await runtime_harness(model=model, clock=clock, sid="fake:bot")
    second = await runtime_harness(home=tmp_path / "mine")
    third = await runtime_harness()
    assert (first.model, first.clock, first.key.sid) == (model, clock, "fake:bot")
    assert (first.home.name, second.home.name, third.home.name) == ("runtime1", "mine", "runtime2")


async def test_close_all_leaves_what_was_not_left_newest_first(tmp_path: Path) -> None:
    factory = HarnessFactory(tmp_path, FakeClock())
    first = await factory()
    async with factory() as inner:
        assert factory.open == [first, inner]
    second = await factory()
    assert factory.open == [first, second]
    await factory.close_all()
    assert (first.state, second.state, inner.state) == ("stopped", "stopped", "stopped")
    assert factory.open == []


def test_the_fixture_leaves_a_forgotten_harness_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.anyio
        kept = []

        async def test_forgets(runtime_harness):
            kept.append(await runtime_harness())
            assert kept[0].state == "ready"

        async def test_forgets_and_fails(runtime_harness):
            kept.append(await runtime_harness())
            raise RuntimeError("the test failed")

        def test_both_were_left():
            assert [rt.state for rt in kept] == ["stopped", "stopped"]
            assert all(rt.log.closed for rt in kept)
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED *::test_forgets_and_fails*", "*1 failed, 2 passed*"])
