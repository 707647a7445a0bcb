"""The ``runtime_harness`` fixture: entered ``RuntimeHarness`` instances that never outlive their test.

``runtime_harness(model=None, **options)`` makes a ``RuntimeHarness`` with its home in ``tmp_path``, on the
``fake_clock`` fixture's clock, with ``TestModel()`` unless a model is given (``HarnessFactory``, in
``ishiki_host.testing.harness_factory``, has the details)::

    async def test_greets(runtime_harness):
        async with runtime_harness(model=ScriptedModel(["hi"])) as rt:
            ...
        rt = await runtime_harness()   # or entered for the rest of the test

Every harness entered and not left is left at the test's teardown, newest first, so a test that returns (or
fails) inside one still stops the runtime and closes its log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.testing.harness_factory import HarnessFactory, RuntimeHarnessFactory


@pytest.fixture
async def runtime_harness(
    tmp_path: Path, fake_clock: FakeClock, anyio_backend: object
) -> AsyncIterator[RuntimeHarnessFactory]:
    """A factory of entered ``RuntimeHarness`` instances in ``tmp_path``, left at teardown."""
    factory = HarnessFactory(tmp_path, fake_clock)
    try:
        yield factory
    finally:
        await factory.close_all()
