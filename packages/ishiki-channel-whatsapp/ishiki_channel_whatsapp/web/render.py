"""Markdown as models write it, turned into WhatsApp's own marks (``*bold*``, ``~strike~``).

WhatsApp shows ``**bold**`` with its stars, and has no headings or links with labels, so: ``**x**`` and
``__x__`` become ``*x*``, ``~~x~~`` becomes ``~x~``, a ``# heading`` line becomes ``*heading*``, and
``[label](url)`` becomes ``label (url)``. Code is left as written (WhatsApp shows ```` ``` ```` blocks and
`` `code` `` as monospace), and so is everything inside it; single-star italics are left too (a ``* item``
list would be mistaken for them).
"""

from __future__ import annotations

import re

__all__ = ["render_whatsapp"]

_CODE = re.compile(r"(```.*?(?:```|\Z)|`[^`\n]+`)", re.DOTALL)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")


def render_whatsapp(text: str) -> str:
    """``text`` with its Markdown marks replaced by WhatsApp's (see the module docstring)."""
    parts = _CODE.split(text)
    return "".join(part if index % 2 else _prose(part) for index, part in enumerate(parts))


def _prose(text: str) -> str:
    text = _HEADING.sub(lambda m: f"*{m.group(1).strip('*')}*", text)
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _STRIKE.sub(r"~\1~", text)
    return _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m.group(1)} ({m.group(2)})", text)
