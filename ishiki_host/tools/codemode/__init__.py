"""codemode: the model writes a JavaScript program that composes tool calls; QuickJS runs it in a sandbox.

A program is the body of an async function: ``await tools.<name>(input)`` calls a host tool, ``Promise.all``
runs calls concurrently, and the value it ``return``s (as JSON) is the only thing the model sees. Each program
gets a fresh QuickJS context on its own worker thread, with no file system, network, process or host objects,
and within ``Limits``. ``render_signatures`` and ``codemode_description`` describe the callable tools to the
model as TypeScript-like signatures::

    from ishiki_host.tools.codemode import Limits, run_program


    async def run(code: str, get_weather) -> str:
        result = await run_program(code, {"get_weather": get_weather}, Limits(timeout_ms=10_000))
        if result.ok:
            return result.json  # what the model sees
        return result.error  # result.error_kind says which failure
"""

from __future__ import annotations

from ishiki_host.tools.codemode._limits import LIMIT_KEYS, Limits, ProgramErrorKind, ProgramResult, ToolFn
from ishiki_host.tools.codemode._runner import run_program
from ishiki_host.tools.codemode._signatures import (
    CODEMODE_PARAMETERS,
    codemode_description,
    render_signature,
    render_signatures,
)

__all__ = [
    "CODEMODE_PARAMETERS",
    "LIMIT_KEYS",
    "Limits",
    "ProgramErrorKind",
    "ProgramResult",
    "ToolFn",
    "codemode_description",
    "render_signature",
    "render_signatures",
    "run_program",
]
