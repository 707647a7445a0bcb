"""What the ``runtime_harness`` fixture hands a test: a factory of harnesses that never outlive it.

``HarnessFactory(root, clock)`` makes ``RuntimeHarness`` instances with their homes under ``root``
(``runtime1``, ``runtime2``... for several in one test; ``home=`` to choose, e.g. to restart on the same home),
on ``clock`` unless given ``clock=``, with ``TestModel()`` unless given a model; the other options are
``RuntimeHarness``'s. Each comes as an ``OpeningHarness``, used either way::

    async with runtime_harness(model=ScriptedModel(["hi"])) as rt:   # left at the end of the block
        ...
    rt = await runtime_harness()                                     # left by close_all, at teardown

``close_all()`` leaves every harness entered and not left, newest first. It must run in the task that entered
them (a harness holds a task group): the fixture's teardown does, since anyio's pytest plugin runs an async
test and its fixtures in one task. No pytest here: ``ishiki_host.testing`` imports without it.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.testmodel import TestModel

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.model import LanguageModel

__all__ = ["HarnessFactory", "OpeningHarness", "RuntimeHarnessFactory"]


class OpeningHarness:
    """A harness the factory made: ``async with`` it, or ``await`` it (``close_all`` then leaves it)."""

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


class HarnessFactory:
    """Makes harnesses under ``root`` on ``clock`` and leaves the forgotten ones (see the module docstring)."""

    def __init__(self, root: Path, clock: Clock):
        self.root = Path(root)
        self.clock = clock
        self._homes = itertools.count(1)
        self._open: list[RuntimeHarness] = []

    def __call__(self, *, model: LanguageModel | None = None, **options: Any) -> OpeningHarness:
        """A harness on ``model`` (``TestModel()`` by default) with ``RuntimeHarness``'s ``options``."""
        options.setdefault("clock", self.clock)
        home = options.pop("home", None)
        if home is None:
            home = self.root / f"runtime{next(self._homes)}"
        harness = RuntimeHarness(home, model=model if model is not None else TestModel(), **options)
        return OpeningHarness(harness, self._open)

    @property
    def open(self) -> list[RuntimeHarness]:
        """The harnesses entered and not yet left, oldest first."""
        return list(self._open)

    async def close_all(self) -> None:
        """Leave every harness still open, newest first."""
        while self._open:
            await self._open.pop().__aexit__(None, None, None)
