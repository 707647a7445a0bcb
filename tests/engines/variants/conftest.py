"""Fixtures of the variant engines' tests: a harness runtime with a wakeup engine attached as the runtime does."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host import RuntimeContext
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import LanguageModel
from ishiki_host.testing.harness import RuntimeHarness

WakeupRuntime = Callable[..., AbstractAsyncContextManager[tuple[RuntimeHarness, Any]]]


@asynccontextmanager
async def _wakeup_runtime(
    home: Path, model: LanguageModel, make: Callable[[RuntimeContext], Any], **harness: Any
) -> AsyncIterator[tuple[RuntimeHarness, Any]]:
    """A harness with ``make(rt.context)`` attached, its ``run`` started in a task group, disposed and stopped after."""
    with anyio.fail_after(20):
        async with RuntimeHarness(home, model=model, **harness) as rt, anyio.create_task_group() as tg:
            instance = make(rt.context)
            dispose = instance.attach(rt.context)
            run = getattr(instance, "run", None)
            if run is not None:
                await tg.start(run)
            try:
                yield rt, instance
            finally:
                result = dispose()
                if inspect.isawaitable(result):
                    await result
                tg.cancel_scope.cancel()


@pytest.fixture
def wakeup_runtime() -> WakeupRuntime:
    """``async with wakeup_runtime(home, model, lambda rt: Engine().create(rt, {}), clock=...) as (rt, engine)``."""
    return _wakeup_runtime


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock at 2023-11-14T22:13:20Z."""
    return FakeClock()


def sent(rt: RuntimeHarness, channel: str, *, sid: str = "telegram:bot1") -> Any:
    """Emit ``message.sent`` as the runtime does after the bot sent in ``channel``."""
    return rt.bus.emit("message.sent", channel_id=channel, sid=sid, ids=["out-1"], text="(sent)", reply_to=None)


@pytest.fixture
def emit_sent() -> Callable[..., Any]:
    """``await emit_sent(rt, "group:g1")``: the bot sent a message in that channel."""
    return sent
