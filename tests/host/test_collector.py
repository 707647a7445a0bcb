"""The garbage collector's thresholds while hosts run: raised, nested, never lowered, restored."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from ishiki_host.host.collector import THRESHOLDS, freeze_startup_heap, tuned_collector
from ishiki_host.testing import profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    """Every test starts from CPython's defaults and leaves the collector as it found it."""
    found, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield (700, 10, 10)
    gc.set_threshold(*found)
    if not enabled:
        gc.disable()


def test_the_thresholds_are_set_for_the_block(default_thresholds: tuple[int, int, int]) -> None:
    with tuned_collector():
        assert gc.get_threshold() == THRESHOLDS
    assert gc.get_threshold() == default_thresholds


def test_nested_blocks_restore_only_when_the_last_ends(default_thresholds: tuple[int, int, int]) -> None:
    outer = tuned_collector()
    outer.__enter__()
    with tuned_collector():
        assert gc.get_threshold() == THRESHOLDS
    assert gc.get_threshold() == THRESHOLDS
    outer.__exit__(None, None, None)
    assert gc.get_threshold() == default_thresholds


def test_a_higher_threshold_is_kept() -> None:
    gc.set_threshold(50_000, 20, 20)
    with tuned_collector():
        assert gc.get_threshold() == (50_000, 20, 20)
    assert gc.get_threshold() == (50_000, 20, 20)


def test_a_disabled_collector_is_left_alone(default_thresholds: tuple[int, int, int]) -> None:
    gc.disable()
    with tuned_collector():
        assert gc.get_threshold() == default_thresholds
        assert not gc.isenabled()


def test_thresholds_changed_meanwhile_are_not_undone() -> None:
    with tuned_collector():
        gc.set_threshold(2_000, 5, 5)
    assert gc.get_threshold() == (2_000, 5, 5)


@pytest.mark.anyio
async def test_a_running_host_raises_it_and_restores_it_when_it_stops(
    make_host: MakeHost, default_thresholds: tuple[int, int, int]
) -> None:
    async with make_host(profiles={"ana": profile_yaml()}):
        assert gc.get_threshold() == THRESHOLDS
    assert gc.get_threshold() == default_thresholds


class _Node:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_the_start_up_heap_is_frozen_and_a_second_freeze_collects_what_the_first_kept() -> None:
    try:
        node = _Node()
        frozen = freeze_startup_heap()
        assert frozen == gc.get_freeze_count() > 0
        assert not any(o is node for o in gc.get_objects())  # out of the collector's sight
        gone = weakref.ref(node)
        del node
        gc.collect()
        assert gone() is not None  # a frozen cycle is not collected...
        freeze_startup_heap()
        assert gone() is None  # ...until the next freeze unfreezes and collects first
    finally:
        gc.unfreeze()
