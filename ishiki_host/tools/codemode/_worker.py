"""The worker thread that owns one QuickJS context from birth to death.

QuickJS contexts are not thread-safe, so everything that touches one (creating it, evaluating, running
microtasks, settling promises, freeing it) happens on this thread. The event loop talks to it through two
one-way channels: ``post`` (worker to loop: batches of tool requests, then the final ``ProgramResult``) and
``inbox`` (loop to worker: ``Settlement``s, or ``None`` to stop).

Time is enforced twice: between microtasks and while waiting for tools the worker checks the wall-clock
deadline itself, and before every call into QuickJS it arms QuickJS's interrupt with the wall-clock time that
remains. That interrupt counts the process's CPU time (C ``clock()``) from the start of the call, so a long
synchronous stretch may end early when other threads of the process are busy, or late when this thread gets
less than a whole CPU; it always ends. So ``while(true){}`` and ``while(true) await null`` both end.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# The extension module of the quickjs-ng distribution; its pure-Python wrapper ``quickjs`` starts an executor
# thread at import time, which a host that owns its threads does not want. It has no type stubs: the ignore
# keeps a plugin author's `mypy --strict`, which follows the host's imports, quiet without our config.
import _quickjs as quickjs  # type: ignore[import-not-found, unused-ignore]

from ishiki_host.tools.codemode._limits import ProgramErrorKind, ProgramResult
from ishiki_host.tools.codemode._prelude import PRELUDE, js_text, program_source, tool_label
from ishiki_host.tools.codemode._report import (
    exception_out_of_memory,
    format_js_error,
    format_syntax_error,
    is_out_of_memory,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ishiki_host.tools.codemode._limits import Limits

__all__ = ["ProgramWorker", "Settlement", "ToolRequest", "WorkerEvent"]

# Between two polls of the prelude at most this many microtasks run, so a tool call or the outcome is seen
# soon even while a background await loop keeps the job queue busy.
_POLL_EVERY = 64


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """A program called ``tools.<name>(input)``; ``input_json`` is the input as JSON text."""

    call_id: int
    name: str
    input_json: str


@dataclass(frozen=True, slots=True)
class Settlement:
    """A tool call finished: ``payload`` is its output as JSON text, or the error message when not ``ok``."""

    call_id: int
    ok: bool
    payload: str


WorkerEvent = tuple[ToolRequest, ...] | ProgramResult


class _Abort(Exception):
    """Ends the program from inside the worker with a failed result."""

    def __init__(self, kind: ProgramErrorKind, message: str):
        super().__init__(message)
        self.kind: ProgramErrorKind = kind
        self.message = message


class ProgramWorker:
    """Runs one program in a fresh context; ``run`` is the thread's target and always posts one result."""

    def __init__(
        self,
        code: str,
        tool_names: Sequence[str],
        limits: Limits,
        deadline: float,
        post: Callable[[WorkerEvent], bool],
    ):
        self.inbox: queue.SimpleQueue[Settlement | None] = queue.SimpleQueue()
        self._code = code
        self._names = frozenset(tool_names)
        self._names_json = json.dumps(sorted(self._names))
        self._limits = limits
        self._deadline = deadline
        self._post = post
        self._stop = threading.Event()
        self._requests: list[ToolRequest] = []
        self._calls = 0
        self._in_flight = 0
        self._jobs = 0
        self._finished: tuple[str, str] | None = None
        self._logs: list[str] = []
        self._log_bytes = 0

    def stop(self) -> None:
        """Ask the worker to end at its next step (thread-safe; a running synchronous stretch ends by its limit)."""
        self._stop.set()
        self.inbox.put(None)

    def run(self) -> None:
        """Thread target: run the program, free the context, post the result (unless the host left)."""
        result = self._run_guarded()
        if not self._stop.is_set():
            self._post(result)

    def _run_guarded(self) -> ProgramResult:
        # Every quickjs object lives in _run's frame, so it is freed here, on this thread, before the result
        # is posted (and the loop may join us).
        try:
            return self._result(*self._run())
        except _Abort as abort:
            return self._failure(abort.kind, abort.message)
        except Exception as exc:
            return self._failure("internal", f"the sandbox failed: {type(exc).__name__}: {exc}")

    def _run(self) -> tuple[str, str]:
        context = quickjs.Context()
        context.set_memory_limit(self._limits.memory_limit_bytes)
        init = self._call(context, context.eval, PRELUDE)
        program = self._compile(context)
        host = self._call(context, init, self._names_json, program, self._limits.max_log_bytes)
        return self._drive(context, host)

    def _compile(self, context: Any) -> Any:
        self._arm(context)
        try:
            return context.eval(program_source(self._code))
        except quickjs.JSException as exc:
            text = str(exc)
            if text.startswith("SyntaxError"):
                raise _Abort("syntax", format_syntax_error(text, self._code)) from None
            raise self._runtime_error(text) from None

    def _drive(self, context: Any, host: Any) -> tuple[str, str]:
        while True:
            self._run_jobs(context, host)
            # Calls made but not awaited still start: a program may fire a send and return.
            self._flush()
            if self._finished is not None:
                return self._finished
            if self._in_flight == 0:
                raise _Abort("stalled", "the program is waiting for a promise that nothing will ever settle")
            for item in self._next_settlements():
                self._in_flight -= 1
                self._call(context, host, "settle", item.call_id, item.ok, js_text(item.payload))

    def _run_jobs(self, context: Any, host: Any) -> None:
        """Run microtasks until none is left or the program has an outcome, polling the prelude on the way."""
        while self._finished is None:
            ran = self._call(context, context.execute_pending_job)
            if ran:
                self._jobs += 1
                if self._jobs > self._limits.max_jobs:
                    raise _Abort(
                        "jobs",
                        f"the program ran more than {self._limits.max_jobs} microtasks (max_jobs); "
                        "is an await loop spinning without calling a tool?",
                    )
            if not ran or self._jobs % _POLL_EVERY == 0:
                self._poll(context, host)
            if not ran:
                return

    def _poll(self, context: Any, host: Any) -> None:
        report = self._call(context, host, "poll")
        if report is None:
            return
        news = json.loads(report)
        for line in news["logs"]:
            self._log(line)
        for call_id, name, text in news["calls"]:
            self._request(call_id, name, text)
        if news["outcome"] is not None and self._finished is None:
            kind, text = news["outcome"]
            self._finished = (kind, text)

    def _next_settlements(self) -> list[Settlement]:
        """Block until at least one tool call finishes (or the deadline), then take every one that has."""
        try:
            first = self.inbox.get(timeout=max(0.0, self._deadline - time.monotonic()))
        except queue.Empty:
            raise self._timeout() from None
        items = [first]
        while True:
            try:
                items.append(self.inbox.get_nowait())
            except queue.Empty:
                break
        if None in items:
            raise _Abort("internal", "the program was stopped by the host")
        return [item for item in items if item is not None]

    def _flush(self) -> None:
        if self._requests:
            batch = tuple(self._requests)
            self._requests.clear()
            if not self._post(batch):
                raise _Abort("internal", "the host stopped listening to the program")

    def _arm(self, context: Any) -> None:
        """Before a call into QuickJS: stop if asked to, else give it the wall-clock time left as CPU limit."""
        if self._stop.is_set():
            raise _Abort("internal", "the program was stopped by the host")
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout()
        context.set_time_limit(remaining)

    def _call(self, context: Any, fn: Callable[..., Any], *args: Any) -> Any:
        """Call into QuickJS under the time limit; map its failures to ``_Abort``."""
        self._arm(context)
        try:
            return fn(*args)
        except quickjs.JSException as exc:
            raise self._runtime_error(str(exc)) from None

    def _timeout(self) -> _Abort:
        return _Abort("timeout", f"the program ran out of time ({self._limits.timeout_ms} ms, timeout_ms)")

    def _out_of_memory(self) -> _Abort:
        limit = self._limits.memory_limit_bytes
        return _Abort("memory", f"the program ran out of memory ({limit} bytes, memory_limit_bytes)")

    def _runtime_error(self, text: str) -> _Abort:
        if text.startswith("InternalError: interrupted"):
            return self._timeout() if not self._stop.is_set() else _Abort("internal", "stopped by the host")
        if exception_out_of_memory(text):
            return self._out_of_memory()
        name, _, rest = text.partition(": ")
        message, _, stack = rest.partition("\n")
        return _Abort("thrown", format_js_error(name, message, stack))

    def _request(self, call_id: int, name: str, text: str) -> None:
        """Queue a tool call for the loop, or refuse it at once (the refusal rejects the program's promise)."""
        self._in_flight += 1
        refusal = self._refusal(name, text)
        if refusal is not None:
            self.inbox.put(Settlement(call_id, False, refusal))
            return
        self._calls += 1
        self._requests.append(ToolRequest(call_id, name, text))

    def _refusal(self, name: str, text: str) -> str | None:
        label = tool_label(name)
        if name not in self._names:
            return f"{label} is not a tool of this program"
        size, limit = len(text.encode("utf-8", "surrogatepass")), self._limits.max_tool_input_bytes
        if size > limit:
            return f"{label}: input is {size} bytes, more than max_tool_input_bytes ({limit})"
        if self._calls >= self._limits.max_tool_calls:
            return f"{label}: the program already made {self._calls} tool calls (max_tool_calls)"
        return None

    def _log(self, line: str) -> None:
        size = len(line.encode("utf-8", "surrogatepass"))
        if self._log_bytes + size <= self._limits.max_log_bytes:
            self._logs.append(line)
        elif self._log_bytes <= self._limits.max_log_bytes:
            self._logs.append(f"[logs truncated at {self._limits.max_log_bytes} bytes, max_log_bytes]")
        self._log_bytes += size

    # -- results --

    def _result(self, kind: str, text: str) -> ProgramResult:
        if kind == "ok":
            return self._success(text)
        error = json.loads(text)
        name, message = error["name"], error["message"]
        if kind == "result" and message == "result is undefined":
            return self._failure("result_not_json", "the program returned undefined: end it with `return <value>`")
        if kind == "result":
            return self._failure("result_not_json", f"the program's result is not JSON: {message}")
        if is_out_of_memory(name, message):
            return self._failure("memory", self._out_of_memory().message)
        if name == "Uncaught" and message == "null":
            # QuickJS throws a bare null when memory is so short that not even the error object fits.
            limit = self._limits.memory_limit_bytes
            return self._failure(
                "memory",
                f"the program threw null: it most likely ran out of memory ({limit} bytes, memory_limit_bytes)",
            )
        return self._failure("thrown", format_js_error(name, message, error["stack"]))

    def _success(self, text: str) -> ProgramResult:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self._limits.max_result_bytes:
            return self._failure(
                "result_too_large",
                f"the program's result is {size} bytes, more than max_result_bytes ({self._limits.max_result_bytes});"
                " return less: filter or summarize inside the program",
            )
        return ProgramResult(
            ok=True, value=json.loads(text), json=text, logs=tuple(self._logs), tool_calls=self._calls, jobs=self._jobs
        )

    def _failure(self, kind: ProgramErrorKind, message: str) -> ProgramResult:
        return ProgramResult(
            ok=False,
            error=message,
            error_kind=kind,
            logs=tuple(self._logs),
            tool_calls=self._calls,
            jobs=self._jobs,
        )
