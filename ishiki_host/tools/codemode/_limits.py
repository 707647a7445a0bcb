"""What a codemode program may use (``Limits``) and what it produced (``ProgramResult``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from ishiki_host.errors import SandboxError

__all__ = ["LIMIT_KEYS", "Limits", "ProgramErrorKind", "ProgramResult", "ToolFn"]

ToolFn = Callable[[dict[str, Any]], Awaitable[Any]]
"""A tool a program may call: takes the JSON object the program passed, returns a JSON-able value or raises."""

ProgramErrorKind = Literal[
    "syntax",
    "thrown",
    "timeout",
    "memory",
    "jobs",
    "stalled",
    "result_not_json",
    "result_too_large",
    "internal",
]
"""Why a program failed: it did not parse, threw, ran out of time / memory / jobs, awaited a promise nothing
could settle, returned something that is not JSON or is too large, or the sandbox itself broke."""

MiB = 1 << 20
KiB = 1 << 10


@dataclass(frozen=True, slots=True)
class Limits:
    """The budget of one program. Defaults follow the profile's ``codemode`` defaults.

    ``timeout_ms`` is wall-clock time for the whole program, tool calls and microtask loops included.
    ``max_jobs`` caps the microtasks (promise reactions) one program may run, so an ``await`` loop that never
    yields to a tool is stopped early. Tool calls beyond ``max_concurrent_tool_calls`` wait for a free slot;
    calls beyond ``max_tool_calls`` are rejected. ``max_log_bytes`` bounds what ``console.log`` keeps.
    """

    timeout_ms: int = 30_000
    memory_limit_bytes: int = 256 * MiB
    max_jobs: int = 1_000_000
    max_tool_input_bytes: int = 1 * MiB
    max_tool_output_bytes: int = 4 * MiB
    max_result_bytes: int = 64 * KiB
    max_concurrent_tool_calls: int = 16
    max_tool_calls: int = 1_000
    max_log_bytes: int = 16 * KiB

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"codemode limit {f.name} must be a positive integer, got {value!r}")

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> Limits:
        """Limits from the profile's ``codemode`` keys (``timeout_ms``, ``memory_limit_bytes``, ...); others are
        ignored."""
        return cls(**{key: config[key] for key in LIMIT_KEYS if key in config})


LIMIT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Limits))
"""The config keys ``Limits.from_mapping`` reads (the field names), in field order."""


@dataclass(frozen=True, slots=True)
class ProgramResult:
    """The outcome of one program.

    On success ``json`` is the returned value serialized (what the model sees) and ``value`` the same value as
    Python data. On failure ``error`` says what went wrong, in words meant for the model, and ``error_kind``
    classifies it. ``logs`` holds what ``console.log`` printed, in order.
    """

    ok: bool
    value: Any = None
    json: str = ""
    error: str | None = None
    error_kind: ProgramErrorKind | None = None
    logs: tuple[str, ...] = ()
    tool_calls: int = 0
    jobs: int = 0
    elapsed_ms: float = 0.0

    def raise_for_error(self) -> ProgramResult:
        """Return self when the program succeeded; raise ``SandboxError`` with the error message otherwise."""
        if not self.ok:
            raise SandboxError(self.error or "codemode program failed")
        return self
