"""The model's Markdown, parsed by markdown-it-py (CommonMark, plus tables and ``~~strike~~``) into marked text.

``parse_markdown(text)`` gives a ``Marked``: the text a reader sees, and for every character the stack of marks
it is shown with (bold, italic, strike, inline code, a code block with its language, a link with its URL, a
quote). A channel's renderer turns marks into its platform's formatting (Telegram's HTML tags, WhatsApp's
``*bold*``); ``cut_marked`` (``ishiki_host.channels.layout``) cuts the marked text into parts without cutting a
mark when a part can end outside it.

Block layout is decided here, once: a heading is a bold line; bullet items start with ``• ``, numbered ones
with ``1. `` (from the list's own start), continuation lines are indented, nested lists by two more spaces; a
table becomes preformatted text with aligned columns; a rule is a line of ``─``; raw HTML is text. Marks nest
the way the strictest platform (Telegram) allows: nothing inside code, no code or link inside a link, no quote
inside a quote, and a mark is never opened twice (``**a **b** c**``). Links keep only ``http``, ``https``,
``tg`` and ``mailto`` targets; any other link shows its text alone, and an image shows its alt text linked to
its source.

Two choices differ by platform (``MarkdownStyle``): a quote is a ``quote`` mark (Telegram's blockquote) or
``> `` before each of its lines outside code (WhatsApp's quote); a bare URL (a link whose text is its target)
is a link, or plain text the platform links itself (WhatsApp, which would otherwise show the URL twice).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.tree import SyntaxTreeNode

__all__ = ["ENTITY_KINDS", "Mark", "MarkKind", "MarkdownStyle", "Marked", "parse_markdown"]

MarkKind = Literal["b", "i", "s", "code", "pre", "a", "quote"]

ENTITY_KINDS = frozenset({"b", "i", "s", "code", "pre", "a"})
"""Marks a cut should stay out of (a quote may be cut and reopened like a paragraph)."""

_SCHEMES = ("http://", "https://", "tg://", "mailto:")
_LANGUAGE = re.compile(r"[\w#+.-]{1,64}")
_RULE = "─" * 12

Stack = tuple["Mark", ...]


@dataclass(frozen=True, slots=True)
class MarkdownStyle:
    """How ``parse_markdown`` writes what platforms show differently (see the module docstring): ``quote``
    ``mark`` or ``prefix``; ``bare_links`` ``link`` or ``text``."""

    quote: Literal["mark", "prefix"] = "mark"
    bare_links: Literal["link", "text"] = "link"


_DEFAULT_STYLE = MarkdownStyle()


@dataclass(frozen=True, slots=True)
class Mark:
    """One mark: ``kind``, and ``value`` for the kinds that carry one (a link's URL, a code block's language)."""

    kind: MarkKind
    value: str = ""


@dataclass(frozen=True, slots=True)
class Marked:
    """Text with a mark stack per character: ``stacks[ids[i]]`` marks ``text[i]`` (outermost first)."""

    text: str = ""
    ids: tuple[int, ...] = ()
    stacks: tuple[Stack, ...] = ()

    @classmethod
    def of(cls, spans: list[tuple[str, Stack]]) -> Marked:
        """The marked text of ``spans`` (each a piece of text and the marks it is shown with), in order."""
        index: dict[Stack, int] = {}
        ids: list[int] = []
        for piece, stack in spans:
            ids.extend([index.setdefault(stack, len(index))] * len(piece))
        return cls("".join(piece for piece, _ in spans), tuple(ids), tuple(index))

    def stack_at(self, pos: int) -> Stack:
        """The marks of ``text[pos]``."""
        return self.stacks[self.ids[pos]]

    def runs(self, start: int, end: int) -> list[tuple[str, Stack]]:
        """``text[start:end]`` as runs of equally marked characters."""
        runs: list[tuple[str, Stack]] = []
        pos = start
        while pos < end:
            index, run_end = self.ids[pos], pos + 1
            while run_end < end and self.ids[run_end] == index:
                run_end += 1
            runs.append((self.text[pos:run_end], self.stacks[index]))
            pos = run_end
        return runs


Span = tuple[str, Stack]


def parse_markdown(text: str, style: MarkdownStyle = _DEFAULT_STYLE) -> Marked:
    """``text`` (the model's Markdown) as marked text (see the module docstring)."""
    parser, tree = _parser()
    root = tree(parser.parse(text.replace("\x00", "\ufffd")))
    return Marked.of(_blocks(root.children, (), "\n\n", style))


@functools.cache
def _parser() -> tuple[MarkdownIt, type[SyntaxTreeNode]]:
    # Imported on first use: markdown-it-py costs ~15 ms of start-up that a host without a formatting channel
    # (the console alone) never needs, and this module is part of the public face.
    from markdown_it import MarkdownIt
    from markdown_it.tree import SyntaxTreeNode

    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]), SyntaxTreeNode


def _blocks(nodes: list[SyntaxTreeNode], ctx: Stack, gap: str, style: MarkdownStyle) -> list[Span]:
    out: list[Span] = []
    for node in nodes:
        spans = _block(node, ctx, style)
        if not spans:
            continue
        if out:
            out.append((gap, ctx))
        out.extend(spans)
    return out


def _block(node: SyntaxTreeNode, ctx: Stack, style: MarkdownStyle) -> list[Span]:
    kind = node.type
    if kind == "paragraph":
        return _inline(node.children, ctx, style)
    if kind == "heading":
        return _inline(node.children, _push(ctx, Mark("b")), style)
    if kind == "blockquote":
        return _quote(node, ctx, style)
    if kind in ("bullet_list", "ordered_list"):
        return _list(node, ctx, style)
    if kind in ("fence", "code_block"):
        return _code(node.content, node.info if kind == "fence" else "", ctx)
    if kind == "table":
        return _code(_table(node), "", ctx)
    if kind == "hr":
        return [(_RULE, ctx)]
    if kind == "inline":
        return _inline(node.children, ctx, style)
    if node.children:
        return _blocks(node.children, ctx, "\n", style)
    return [(node.content.rstrip("\n"), ctx)] if node.content.strip() else []


def _quote(node: SyntaxTreeNode, ctx: Stack, style: MarkdownStyle) -> list[Span]:
    if style.quote == "prefix":
        body = _blocks(node.children, ctx, "\n", style)
        return [("> ", ctx), *_indented(body, "> ", ctx)] if body else []
    inner = ctx if any(mark.kind == "quote" for mark in ctx) else (*ctx, Mark("quote"))
    return _blocks(node.children, inner, "\n", style)


def _code(content: str, info: str, ctx: Stack) -> list[Span]:
    body = content.rstrip("\n")
    if not body.strip():
        return []
    words = info.split()
    language = words[0] if words and _LANGUAGE.fullmatch(words[0]) else ""
    outer = tuple(mark for mark in ctx if mark.kind == "quote")  # a code block is never inside emphasis
    return [(body, (*outer, Mark("pre", language)))]


def _list(node: SyntaxTreeNode, ctx: Stack, style: MarkdownStyle) -> list[Span]:
    ordered = node.type == "ordered_list"
    start = node.attrs.get("start", 1) if ordered else 1
    number = int(start) if isinstance(start, int | str) and str(start).isdigit() else 1
    out: list[Span] = []
    for offset, item in enumerate(node.children):
        marker = f"{number + offset}. " if ordered else "• "
        body = _blocks(item.children, ctx, "\n", style)
        if out:
            out.append(("\n", ctx))
        out.append((marker, ctx))
        out.extend(_indented(body, " " * len(marker), ctx))
    return out


def _indented(spans: list[Span], indent: str, ctx: Stack) -> list[Span]:
    """``spans`` with ``indent`` after each line break outside a code block (code keeps its own layout)."""
    out: list[Span] = []
    for piece, stack in spans:
        if "\n" not in piece or any(mark.kind == "pre" for mark in stack):
            out.append((piece, stack))
            continue
        lines = piece.split("\n")
        out.append((lines[0], stack))
        for line in lines[1:]:
            out.append(("\n", stack))
            out.append((indent, ctx))
            out.append((line, stack))
    return [(piece, stack) for piece, stack in out if piece]


def _inline(nodes: list[SyntaxTreeNode], ctx: Stack, style: MarkdownStyle = _DEFAULT_STYLE) -> list[Span]:
    out: list[Span] = []
    for node in nodes:
        kind = node.type
        if kind == "text":
            out.append((node.content, ctx))
        elif kind in ("softbreak", "hardbreak"):
            out.append(("\n", ctx))
        elif kind in ("strong", "em", "s"):
            mark: MarkKind = {"strong": "b", "em": "i", "s": "s"}[kind]  # type: ignore[assignment]
            out.extend(_inline(node.children, _push(ctx, Mark(mark)), style))
        elif kind == "code_inline":
            inside_link = any(mark.kind == "a" for mark in ctx)
            out.append((node.content, ctx if inside_link else _push(ctx, Mark("code"))))
        elif kind in ("link", "image"):
            out.extend(_link(node, ctx, style))
        elif node.children:
            out.extend(_inline(node.children, ctx, style))
        else:
            out.append((node.content, ctx))
    return [(piece, stack) for piece, stack in out if piece]


def _link(node: SyntaxTreeNode, ctx: Stack, style: MarkdownStyle) -> list[Span]:
    target = str(node.attrs.get("src" if node.type == "image" else "href", ""))
    usable = target.startswith(_SCHEMES) and not any(mark.kind == "a" for mark in ctx)
    inner = _push(ctx, Mark("a", target)) if usable else ctx
    spans = _inline(node.children, inner, style)
    if usable and style.bare_links == "text" and "".join(piece for piece, _ in spans) == target:
        return _inline(node.children, ctx, style)  # a bare URL: shown once, the platform links it
    if not "".join(piece for piece, _ in spans).strip():
        spans = [(target, inner)] if usable else []
    return spans


def _push(ctx: Stack, mark: Mark) -> Stack:
    if any(existing.kind in ("code", "pre") or existing.kind == mark.kind for existing in ctx):
        return ctx
    return (*ctx, mark)


def _table(node: SyntaxTreeNode) -> str:
    rows: list[list[str]] = []
    header = 0
    for section in node.children:
        for row in section.children:
            rows.append([_plain(cell).replace("\n", " ") for cell in row.children])
        if section.type == "thead":
            header = len(rows)
    if not rows:
        return ""
    columns = max(len(row) for row in rows)
    widths = [max((len(row[col]) if col < len(row) else 0) for row in rows) for col in range(columns)]
    lines = [" | ".join(_cell(row, col).ljust(widths[col]) for col in range(columns)).rstrip() for row in rows]
    if header:
        lines.insert(header, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def _cell(row: list[str], col: int) -> str:
    return row[col] if col < len(row) else ""


def _plain(node: SyntaxTreeNode) -> str:
    return "".join(piece for piece, _ in _inline(node.children[0].children if node.children else [], ()))
