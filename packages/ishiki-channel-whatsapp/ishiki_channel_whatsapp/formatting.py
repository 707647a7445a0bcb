"""The model's Markdown in WhatsApp's own formatting, cut into messages that fit.

Parsed by markdown-it-py (``ishiki_host.parse_markdown``), then written with WhatsApp's marks: ``*bold*``, ``_italic_``,
``~strike~``, `` `inline code` `` and ```` ``` ```` code blocks (tables too, as preformatted text); a heading
is a bold line, list items start with ``• `` or ``1. ``, a quote is ``> `` before each line, and a link is
``text (url)`` (the URL alone when it is its own text). A mark hugs its text: WhatsApp ignores ``* bold*``, so
whitespace at either end of a marked span goes outside the marks.

``render_parts(text, limit, measure)`` cuts the result so each part, marks included, is at most ``limit`` by
``measure`` (``len``, or ``utf16_len`` for the Cloud API); a cut never falls inside a mark that fits in one
part, and a longer one (a long code block) is closed at the end of a part and reopened at the start of the
next (``ishiki_host.cut_marked``).
"""

from __future__ import annotations

from collections.abc import Callable

from ishiki_host import Mark, MarkdownStyle, Marked, cut_marked, parse_markdown

__all__ = ["render_parts", "render_whatsapp"]

_STYLE = MarkdownStyle(quote="prefix", bare_links="text")  # WhatsApp's quote is "> "; it links URLs itself
_MARKERS = {"b": "*", "i": "_", "s": "~", "code": "`"}


def render_whatsapp(text: str) -> str:
    """All of ``text`` in WhatsApp's formatting (no limit; see ``render_parts`` for messages)."""
    marked = parse_markdown(text, _STYLE)
    return _render(marked, 0, len(marked.text))


def render_parts(text: str, limit: int, measure: Callable[[str], int] = len) -> list[str]:
    """``text`` formatted and cut into messages of at most ``limit`` by ``measure``; none when nothing shows."""
    marked = parse_markdown(text, _STYLE)
    ranges = cut_marked(marked, limit, lambda start, end: measure(_render(marked, start, end)))
    return [_render(marked, start, end) for start, end in ranges]


def _render(marked: Marked, start: int, end: int) -> str:
    tokens: list[tuple[str, str]] = []  # ("open" | "close" | "text", text)
    open_marks: list[Mark] = []
    for piece, stack in marked.runs(start, end):
        keep = 0
        while keep < len(open_marks) and keep < len(stack) and open_marks[keep] == stack[keep]:
            keep += 1
        tokens.extend(("close", _close(mark)) for mark in reversed(open_marks[keep:]))
        tokens.extend(("open", _open(mark)) for mark in stack[keep:])
        open_marks[keep:] = stack[keep:]
        tokens.append(("text", piece))
    tokens.extend(("close", _close(mark)) for mark in reversed(open_marks))
    return "".join(text for _, text in _hug(tokens))


def _open(mark: Mark) -> str:
    if mark.kind == "pre":
        return "```\n"
    return _MARKERS.get(mark.kind, "")


def _close(mark: Mark) -> str:
    if mark.kind == "pre":
        return "\n```"
    if mark.kind == "a":
        return f" ({mark.value})"
    return _MARKERS.get(mark.kind, "")


def _hug(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Move whitespace out of inline marks (``* x *`` → `` *x* ``) and drop marks around nothing."""
    out: list[tuple[str, str]] = []
    for kind, text in tokens:
        if kind == "text" and out and out[-1][0] == "open" and out[-1][1] in _MARKERS.values():
            stripped = text.lstrip()
            if stripped != text:
                opens = []
                while out and out[-1][0] == "open" and out[-1][1] in _MARKERS.values():
                    opens.append(out.pop())
                out.append(("text", text[: len(text) - len(stripped)]))
                out.extend(reversed(opens))
                text = stripped
            if not text:
                continue
        if kind == "close" and text in _MARKERS.values():
            if out and out[-1][0] == "open" and out[-1][1] == text:
                out.pop()  # a mark around nothing
                continue
            if out and out[-1][0] == "text" and out[-1][1] != out[-1][1].rstrip():
                body = out.pop()[1]
                stripped = body.rstrip()
                if stripped:
                    out.append(("text", stripped))
                if out and out[-1][0] == "open" and out[-1][1] == text:
                    out.pop()
                    out.append(("text", body[len(stripped) :]))
                    continue
                out.append((kind, text))
                out.append(("text", body[len(stripped) :]))
                continue
        out.append((kind, text))
    return out
