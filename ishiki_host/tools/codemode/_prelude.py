"""The JavaScript the sandbox runs before a program, and the wrapper that turns the program into a function.

JavaScript never calls into Python (the binding refuses callbacks while a CPU-time limit is armed, and the
limit is always armed). Instead the prelude keeps what the host must see in its closure (tool requests,
console lines, the outcome) and the worker polls for it. The prelude installs ``console`` and evaluates to
``init(namesJson, program, maxLogChars)``, which builds the frozen ``tools`` object, starts the program and
returns ``host(op, ...)``: ``host("poll")`` returns ``null`` when nothing is new, else JSON text
``{"calls": [[id, name, inputJson], ...], "logs": [...], "outcome": [kind, text] | null}``;
``host("settle", id, ok, payload)`` resolves or rejects the call ``id``. ``kind`` is ``ok`` (``text`` is the
result as JSON), ``thrown`` or ``result`` (``text`` is ``{"name", "message", "stack"}`` of the error).

The prelude lives in ``prelude.js`` beside this module. It is squeezed onto one line and the program starts
on line 2 of its own source, so every stack frame on line 1 belongs to the host and is hidden from the model,
and program line N is source line N + 1.
"""

from __future__ import annotations

import json
import re
from importlib import resources

__all__ = ["PRELUDE", "PROGRAM_LINE_OFFSET", "js_text", "program_source", "tool_label"]

PROGRAM_LINE_OFFSET = 1


def _one_line(source: str) -> str:
    lines = (line.strip() for line in source.splitlines())
    return " ".join(line for line in lines if line and not line.startswith("//"))


PRELUDE = _one_line(resources.files(__package__).joinpath("prelude.js").read_text(encoding="utf-8"))
"""The prelude as one line; evaluating it yields ``init(namesJson, program, maxLogChars)``."""

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def program_source(code: str) -> str:
    """The program as an async function expression whose first body line is source line 2."""
    return "(async function program(tools) {\n" + js_text(code) + "\n})"


def js_text(text: str) -> str:
    """``text`` made safe to hand to QuickJS: a lone surrogate (valid in JS and Python strings, but not UTF-8,
    which the binding needs) becomes its ``\\uXXXX`` escape, which JSON and string literals read back as itself.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


def tool_label(name: str) -> str:
    """How a program refers to a tool: ``tools.name``, or ``tools["odd-name"]`` when not an identifier."""
    return f"tools.{name}" if _IDENTIFIER.match(name) else f"tools[{json.dumps(name, ensure_ascii=False)}]"
