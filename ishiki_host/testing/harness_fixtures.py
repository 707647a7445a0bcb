"""The ``runtime_harness`` fixture: entered ``RuntimeHarness`` instances that never outlive their test.

``runtime_harness(model=None, **options)`` makes a ``RuntimeHarness`` with its home in ``tmp_path``
(``runtime1``, ``runtime2``... for several in one test; ``home=`` to choose, e.g. to restart on the same
home) on the ``fake_clock`` fixture's clock (``clock=`` to choose), with ``TestModel()`` unless a model is
given; the other options are ``RuntimeHarness``'s. Use what it returns either way::

    async with runtime_harness(model=ScriptedModel(["hi"])) as rt:   # left at the end of the block
        ...
    rt = await runtime_harness()                                     # left when the test ends

Every harness entered and not left is left at the test's teardown, newest first, so a test that returns
(or fails) inside it still stops the runtime and closes its log. Teardown runs in the test's own task
(anyio's pytest plugin runs an async test and its fixtures in one task), where the harness's task group
was entered.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.testmodel import TestModel

if TYPE_CHECKING:
    from ishiki_host.core.model import LanguageModel

__all__ = ["OpeningHarness", "RuntimeHarnessFactory", "runtime_harness"]


class OpeningHarness:
    """A harness the fixture made: ``async with`` it, or ``await`` it (the fixture then leaves it)."""

    def __init__(self, harness: RuntimeHarness, open_harnesses: list[RuntimeHarness]):
        self.harness = harness
        self._open = open_harnesses

    async def __aenter__(self) -> RuntimeHarness:
        await self.harness.__aenter__()
        self._open.append(self.harness)
        return self.harness

    async def __aexit__(self, *exc_info: object) -> None:
        self._open.remove(self.harness)
        await self.harness.__aexit__(*exc_info)

    def __await__(self) -> Generator[Any, None, RuntimeHarness]:
        return self.__aenter__().__await__()


class RuntimeHarnessFactory(Protocol):
    """The ``runtime_harness`` fixture's value (see the module docstring)."""

    def __call__(self, *, model: LanguageModel | None = None, **options: Any) -> OpeningHarness:
        """A harness on ``model`` (``TestModel()`` by default) with ``RuntimeHarness``'s ``options``."""
        ...


@pytest.fixture
async def runtime_harness(
    tmp_path: Path, fake_clock: FakeClock, anyio_backend: object
) -> AsyncIterator[RuntimeHarnessFactory]:
    """Makes entered ``RuntimeHarness`` instances in ``tmp_path``, left at teardown (see the module docstring)."""
    homes = itertools.count(1)
    open_harnesses: list[RuntimeHarness] = []

    def make(*, model: LanguageModel | None = None, **options: Any) -> OpeningHarness:
        options.setdefault("clock", fake_clock)
        home = options.pop("home", None) or tmp_path / f"runtime{next(homes)}"
        harness = RuntimeHarness(home, model=model if model is not None else TestModel(), **options)
        return OpeningHarness(harness, open_harnesses)

    yield make
    while open_harnesses:
        await open_harnesses.pop().__aexit__(None, None, None)
