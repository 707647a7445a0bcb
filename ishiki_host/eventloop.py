"""The event loop ``ishiki`` runs the host on: uvloop where it is installed, else asyncio's own.

uvloop is a dependency wherever it builds (Linux and macOS): the host's own work per turn is cheaper on it (measured
in ``docs/benchmarks.md``, the event loop). ``event_loop`` in ``ishiki.yaml`` picks one: ``auto`` (the default:
uvloop when installed), ``uvloop`` (an error in ``ishiki check`` when it is not installed) or ``asyncio`` (to
compare, or to use asyncio's debug mode). The loop is chosen once, when ``ishiki run`` starts; a reload does not
change it.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar, get_args

import anyio

__all__ = ["EVENT_LOOPS", "EventLoop", "backend_options", "run", "running_loop", "uvloop_installed"]

EventLoop = Literal["auto", "uvloop", "asyncio"]
EVENT_LOOPS: tuple[EventLoop, ...] = get_args(EventLoop)
T = TypeVar("T")


def uvloop_installed() -> bool:
    """Whether uvloop can be imported (without importing it)."""
    return importlib.util.find_spec("uvloop") is not None


def backend_options(loop: EventLoop = "auto") -> dict[str, Any]:
    """anyio's asyncio backend options for ``loop``."""
    if loop not in EVENT_LOOPS:
        raise ValueError(f"event loop must be one of {', '.join(EVENT_LOOPS)}; got {loop!r}")
    return {"use_uvloop": loop == "uvloop" or (loop == "auto" and uvloop_installed())}


def run(func: Callable[..., Awaitable[T]], *args: object, loop: EventLoop = "auto") -> T:
    """``anyio.run(func, *args)`` on ``loop``."""
    return anyio.run(func, *args, backend_options=backend_options(loop))


def running_loop() -> str:
    """The name of the loop this coroutine runs on: ``uvloop`` or ``asyncio`` (its loop's top module)."""
    return type(asyncio.get_running_loop()).__module__.split(".", 1)[0]
