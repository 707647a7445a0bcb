"""Turning what QuickJS reports into messages about the model's program (its own line numbers, no host frames)."""

from __future__ import annotations

import re

from ishiki_host.tools.codemode._prelude import PROGRAM_LINE_OFFSET

__all__ = [
    "MAX_FRAMES",
    "exception_out_of_memory",
    "format_js_error",
    "format_syntax_error",
    "is_out_of_memory",
    "program_frames",
]

MAX_FRAMES = 5
_FRAME = re.compile(r"^\s*at (?:(?P<fn>.*?) \()?<input>:(?P<line>\d+):(?P<col>\d+)\)?\s*$")
_FIRST_POSITION = re.compile(r"<input>:(?P<line>\d+):(?P<col>\d+)")


def program_frames(stack: str) -> list[str]:
    """The stack frames that lie in the program, as ``at fn (line L, column C)``, innermost first."""
    frames = []
    for raw in stack.splitlines():
        match = _FRAME.match(raw)
        if match is None or int(match["line"]) <= PROGRAM_LINE_OFFSET:
            continue
        where = f"line {int(match['line']) - PROGRAM_LINE_OFFSET}, column {match['col']}"
        fn = match["fn"]
        frames.append(f"at {where}" if fn in (None, "program") else f"at {fn} ({where})")
    return frames[:MAX_FRAMES]


def format_js_error(name: str, message: str, stack: str) -> str:
    """``Name: message`` followed by the program's stack frames, one per indented line."""
    head = f"the program threw a non-Error value: {message}" if name == "Uncaught" else f"{name}: {message}"
    return "\n".join([head, *(f"    {frame}" for frame in program_frames(stack))])


def format_syntax_error(text: str, code: str) -> str:
    """A compile error with the program's line and column (or "at the end of the program")."""
    first, _, rest = text.partition("\n")
    match = _FIRST_POSITION.search(rest)
    if match is None:
        return first
    line = int(match["line"]) - PROGRAM_LINE_OFFSET
    if line > len(code.splitlines()) or line < 1:
        return f"{first} (at the end of the program)"
    return f"{first} (line {line}, column {match['col']})"


def is_out_of_memory(name: str, message: str) -> bool:
    """Whether a JS error (name and message) is QuickJS saying the memory limit was hit."""
    return name == "InternalError" and "out of memory" in message


def exception_out_of_memory(text: str) -> bool:
    """Whether an exception QuickJS raised into Python is the memory limit (a bare ``null`` when even the
    error object could not be allocated)."""
    first = text.partition("\n")[0].strip()
    return "out of memory" in first or first in ("null", "")
