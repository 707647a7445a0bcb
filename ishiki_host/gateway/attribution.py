"""Token usage of calls made outside a turn's own model step, recorded in the runtime's fact log.

A turn's model calls are logged on their assistant entries by the agent. Other calls (a summarizer, a judge,
a tool calling a model) reach the gateway too; its call listener (``UsageListener``) finds the runtime they
were made for through a context variable the runtime sets in its own tasks and in ``deliver``, and the
runtime appends a ``usage`` entry: ``{purpose, ref, model, input_tokens, output_tokens, estimated}``. Calls
made from the agent's model step are marked by ``TurnCallModel`` and skipped. ``usage_purpose("summarizer")``
labels the calls made inside it.

The variable holds a weak reference: a context is captured by whatever is created inside it (uvloop's
transports keep theirs, so a pooled keep-alive connection opened during one runtime's model call would keep
that runtime, and all it holds, alive after its eviction).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.model import LanguageModel, ModelRequest, ModelResult, StreamEvent
    from ishiki_host.gateway.gateway import ModelCallRecord

__all__ = [
    "CURRENT_RUNTIME",
    "TurnCallModel",
    "UsageListener",
    "UsageSink",
    "current_runtime",
    "in_runtime",
    "usage_entry",
    "usage_purpose",
]


class UsageSink(Protocol):
    """A runtime that records usage entries; its ``key`` says whose calls they are (the host's usage counts
    and metrics label calls by its profile and channel)."""

    @property
    def key(self) -> RuntimeKey:
        """The runtime's address."""
        ...

    def record_usage(self, data: dict[str, Json]) -> None:
        """Queue a ``usage`` entry (never blocks)."""
        ...


CURRENT_RUNTIME: ContextVar[weakref.ref[UsageSink] | None] = ContextVar("ishiki_current_runtime", default=None)
"""A weak reference to the runtime calls made here are attributed to (``in_runtime``, ``current_runtime``)."""
_IN_TURN_CALL: ContextVar[bool] = ContextVar("ishiki_in_turn_call", default=False)
_PURPOSE: ContextVar[str | None] = ContextVar("ishiki_usage_purpose", default=None)


@contextlib.contextmanager
def in_runtime(runtime: UsageSink) -> Iterator[None]:
    """Attribute model calls made inside to ``runtime``."""
    token = CURRENT_RUNTIME.set(weakref.ref(runtime))
    try:
        yield
    finally:
        CURRENT_RUNTIME.reset(token)


def current_runtime() -> UsageSink | None:
    """The runtime model calls made here are attributed to (``None`` outside one, or once it is gone)."""
    ref = CURRENT_RUNTIME.get()
    return None if ref is None else ref()


@contextlib.contextmanager
def usage_purpose(purpose: str) -> Iterator[None]:
    """Label the usage entries of calls made inside (``summarizer``, ``judge``...)."""
    token = _PURPOSE.set(purpose)
    try:
        yield
    finally:
        _PURPOSE.reset(token)


def usage_entry(record: ModelCallRecord) -> dict[str, Any] | None:
    """The ``usage`` entry data for a call record (``None`` for a failed call, which used nothing)."""
    if record.usage is None:
        return None
    return {
        "purpose": _PURPOSE.get() or record.priority,
        "ref": record.ref,
        "model": record.member,
        "input_tokens": record.usage.input_tokens,
        "output_tokens": record.usage.output_tokens,
        "estimated": record.usage.estimated,
    }


class UsageListener:
    """The gateway call listener that routes usage of out-of-turn calls to their runtime."""

    def __call__(self, record: ModelCallRecord) -> None:
        runtime = current_runtime()
        if runtime is None or _IN_TURN_CALL.get():
            return
        data = usage_entry(record)
        if data is not None:
            runtime.record_usage(data)


class TurnCallModel:
    """Wraps the model the agent calls so the usage listener knows those calls are logged already."""

    def __init__(self, inner: LanguageModel):
        self.inner = inner

    @property
    def name(self) -> str:
        """The inner model's name."""
        return self.inner.name

    async def generate(self, request: ModelRequest) -> ModelResult:
        """The inner model's answer, marked as a turn call."""
        token = _IN_TURN_CALL.set(True)
        try:
            return await self.inner.generate(request)
        finally:
            _IN_TURN_CALL.reset(token)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The inner model's events, marked as a turn call while each is produced."""
        iterator = self.inner.stream(request).__aiter__()
        while True:
            token = _IN_TURN_CALL.set(True)
            try:
                event = await iterator.__anext__()
            except StopAsyncIteration:
                return
            finally:
                _IN_TURN_CALL.reset(token)
            yield event
