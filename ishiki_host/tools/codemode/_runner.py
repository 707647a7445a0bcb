"""``run_program``: the event-loop side of a codemode program.

The loop starts one worker thread per program and never blocks on it: the worker posts tool requests and
its final result through ``anyio.from_thread.run_sync`` (with the loop's token) into a memory stream; the
loop runs each requested tool as a task, at most ``max_concurrent_tool_calls`` at once, and hands the
outcome back through the worker's inbox. A tool that raises becomes a rejected promise in the program.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from ishiki_host.tools.codemode._limits import Limits, ProgramResult, ToolFn
from ishiki_host.tools.codemode._prelude import tool_label
from ishiki_host.tools.codemode._worker import ProgramWorker, Settlement, ToolRequest, WorkerEvent

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from anyio.abc import TaskGroup
    from anyio.lowlevel import EventLoopToken
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["run_program"]

# The worker always reports: it checks the wall-clock deadline between steps, and each call into QuickJS is
# interrupted after the wall time left, counted as process CPU time. Under heavy CPU contention that CPU time
# can lag the wall clock, so the loop waits for the worker's own report (no thread outlives the program) and
# only gives up after this much more than the timeout, as a guard against a worker that hangs.
_SAFETY_NET_S = 5.0
# The worker has posted its result as its last act; joining it only waits for the thread to unwind.
_JOIN_S = 1.0
_thread_ids = itertools.count(1)


async def run_program(code: str, tools: Mapping[str, ToolFn], limits: Limits | None = None) -> ProgramResult:
    """Run ``code`` (the body of an async JavaScript function) with ``tools`` reachable as ``tools.<name>``.

    Returns a ``ProgramResult``; every failure of the program (syntax, a throw, a limit, a bad result) is a
    result with ``ok=False``, never an exception. Cancelling the caller stops the program.
    """
    limits = limits or Limits()
    started = time.monotonic()
    deadline = started + limits.timeout_ms / 1000
    send, receive = anyio.create_memory_object_stream[WorkerEvent](max_buffer_size=math.inf)
    worker = ProgramWorker(code, list(tools), limits, deadline, _poster(send, anyio.lowlevel.current_token()))
    thread = threading.Thread(target=worker.run, name=f"ishiki-codemode-{next(_thread_ids)}", daemon=True)
    thread.start()
    result: ProgramResult | None = None
    try:
        with anyio.move_on_after(2 * (deadline - started) + _SAFETY_NET_S):
            result = await _Session(tools, limits, worker, deadline).serve(receive)
    finally:
        worker.stop()
        send.close()
        receive.close()
    if result is None:
        result = ProgramResult(ok=False, error_kind="timeout", error=_timeout_message(limits))
    else:
        thread.join(_JOIN_S)
    return replace(result, elapsed_ms=(time.monotonic() - started) * 1000)


def _timeout_message(limits: Limits) -> str:
    return f"the program ran out of time ({limits.timeout_ms} ms, timeout_ms)"


def _poster(send: MemoryObjectSendStream[WorkerEvent], token: EventLoopToken) -> Callable[[WorkerEvent], bool]:
    """What the worker calls to reach the loop; ``False`` once the loop stopped listening."""

    def post(event: WorkerEvent) -> bool:
        try:
            anyio.from_thread.run_sync(send.send_nowait, event, token=token)
        except Exception:
            # The stream is closed or the loop is gone: the program's caller has left.
            return False
        return True

    return post


class _Session:
    """One program's tool calls on the event loop."""

    def __init__(self, tools: Mapping[str, ToolFn], limits: Limits, worker: ProgramWorker, deadline: float):
        self._tools = tools
        self._limits = limits
        self._worker = worker
        self._deadline = deadline
        self._slots = anyio.CapacityLimiter(limits.max_concurrent_tool_calls)

    async def serve(self, receive: MemoryObjectReceiveStream[WorkerEvent]) -> ProgramResult | None:
        """Run requested tools until the worker posts the result; calls still running then may finish until
        the program's deadline (they are cancelled at once when the program timed out)."""
        result: ProgramResult | None = None
        async with anyio.create_task_group() as tg:
            async for event in receive:
                if isinstance(event, ProgramResult):
                    result = event
                    self._bound_stragglers(tg, result)
                    break
                for request in event:
                    tg.start_soon(self._call, request)
        return result

    def _bound_stragglers(self, tg: TaskGroup, result: ProgramResult) -> None:
        if result.error_kind == "timeout":
            tg.cancel_scope.cancel()
        else:
            tg.cancel_scope.deadline = anyio.current_time() + max(0.0, self._deadline - time.monotonic())

    async def _call(self, request: ToolRequest) -> None:
        async with self._slots:
            ok, payload = await self._run_tool(request)
        self._worker.inbox.put(Settlement(request.call_id, ok, payload))

    async def _run_tool(self, request: ToolRequest) -> tuple[bool, str]:
        label = tool_label(request.name)
        try:
            arguments = json.loads(request.input_json)
        except ValueError as exc:
            return False, f"{label}: input is not JSON ({exc})"
        if not isinstance(arguments, dict):
            return False, f"{label}: input must be an object"
        try:
            value = await self._tools[request.name](arguments)
        except Exception as exc:
            return False, f"{label} failed: {_describe(exc)}"
        return self._encode(label, value)

    def _encode(self, label: str, value: Any) -> tuple[bool, str]:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return False, f"{label} returned a value that is not JSON ({exc})"
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self._limits.max_tool_output_bytes:
            limit = self._limits.max_tool_output_bytes
            return False, f"{label} returned {size} bytes, more than max_tool_output_bytes ({limit})"
        return True, text


def _describe(exc: Exception) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
