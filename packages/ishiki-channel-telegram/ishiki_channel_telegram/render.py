"""The model's Markdown as Telegram HTML, cut into parts that each fit a message.

The Markdown is parsed by markdown-it-py (``ishiki_host.parse_markdown``): bold, italic, ``~~strike~~``,
inline code, fenced and indented code blocks (``<pre><code class="language-x">``), links (``http``, ``https``,
``tg``, ``mailto``), headings as bold lines, bullet and numbered lists, quotes (``<blockquote>``), tables as
preformatted text. Everything else is text, with ``<``, ``>`` and ``&`` escaped, so the markup is always one
Telegram accepts: only its tags, balanced, nested as it allows.

``render_parts(text, limit)`` cuts the rendered text with ``ishiki_host.cut_marked``, measured as Telegram measures
(the UTF-16 units of the text once the markup is parsed), so each part fits ``limit``; a mark cut by a part's
end is closed there and reopened at the start of the next part (a long code block stays code in every part).
Each part also comes as the plain text it shows, for when Telegram refuses the markup anyway.
"""

from __future__ import annotations

import html
import itertools
from dataclasses import dataclass

from ishiki_host import Mark, Marked, cut_marked, parse_markdown, utf16_len

__all__ = ["RenderedPart", "render_html", "render_parts"]


@dataclass(frozen=True, slots=True)
class RenderedPart:
    """One message: ``html`` to send with ``parse_mode=HTML``, and ``plain``, the text it shows."""

    html: str
    plain: str


def render_html(text: str) -> str:
    """All of ``text`` as one piece of Telegram HTML (no limit; see ``render_parts`` for messages)."""
    marked = parse_markdown(text)
    return _html(marked, 0, len(marked.text))


def render_parts(text: str, limit: int = 4096) -> list[RenderedPart]:
    """``text`` rendered and cut into messages of at most ``limit`` UTF-16 units each once Telegram parses
    them (see the module docstring); no parts for text that shows nothing."""
    marked = parse_markdown(text)
    units = [0, *itertools.accumulate(utf16_len(char) for char in marked.text)]
    ranges = cut_marked(marked, limit, lambda start, end: units[end] - units[start])
    return [RenderedPart(_html(marked, start, end), marked.text[start:end]) for start, end in ranges]


def _html(marked: Marked, start: int, end: int) -> str:
    out: list[str] = []
    open_marks: list[Mark] = []
    for piece, stack in marked.runs(start, end):
        keep = 0
        while keep < len(open_marks) and keep < len(stack) and open_marks[keep] == stack[keep]:
            keep += 1
        out.extend(_close(mark) for mark in reversed(open_marks[keep:]))
        out.extend(_open(mark) for mark in stack[keep:])
        open_marks[keep:] = stack[keep:]
        out.append(_escape(piece))
    out.extend(_close(mark) for mark in reversed(open_marks))
    return "".join(out)


def _open(mark: Mark) -> str:
    if mark.kind == "a":
        return f'<a href="{html.escape(mark.value, quote=True)}">'
    if mark.kind == "pre":
        return f'<pre><code class="language-{mark.value}">' if mark.value else "<pre>"
    return {"quote": "<blockquote>"}.get(mark.kind, f"<{mark.kind}>")


def _close(mark: Mark) -> str:
    if mark.kind == "pre":
        return "</code></pre>" if mark.value else "</pre>"
    return {"quote": "</blockquote>"}.get(mark.kind, f"</{mark.kind}>")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
