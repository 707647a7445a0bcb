"""The model's Markdown as OneBot messages: plain text with ``at`` and ``image`` segments, cut to a length.

QQ shows no Markdown in a v11 message, so the text is what a reader would see of it (``ishiki_host.
parse_markdown``): emphasis marks dropped, a heading a line of its own, list items with ``• `` or ``1. ``, a
quote with ``> `` before each line, code as it is written, a link as ``text (url)`` (the URL alone when it is
its own text). Then:

- ``@<qq>`` (5 to 12 digits, not inside a word or an e-mail address) becomes an ``at`` segment of that QQ
  number: the model mentions people the way the inbound text shows them (``shaping``);
- a Markdown image ``![alt](http(s)://...)`` becomes an ``image`` segment (the implementation downloads it),
  in the message where it stands;
- the text is cut into messages of at most ``limit`` characters (``ishiki_host.cut_marked``: at a paragraph,
  a line, a space), and the first message replies to ``reply_to`` (a ``reply`` segment first).
"""

from __future__ import annotations

import re

from ishiki_host import MarkdownStyle, Marked, cut_marked, parse_markdown

from ishiki_channel_onebot.segments import Segment, at, image, reply, text

__all__ = ["render_messages", "render_plain"]

_STYLE = MarkdownStyle(quote="prefix", bare_links="text")
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\((https?://[^\s)]+)\)")
_MENTION = re.compile(r"(?<![\w@.])@([0-9]{5,12})(?![\w@])")


def render_plain(markdown: str) -> str:
    """All of ``markdown`` as the plain text QQ shows (no limit, no segments)."""
    marked = parse_markdown(markdown, _STYLE)
    return _render(marked, 0, len(marked.text))


def render_messages(markdown: str, limit: int, *, reply_to: str | None = None) -> list[list[Segment]]:
    """``markdown`` as the messages to send, each a list of segments (see the module docstring); none when
    nothing would show."""
    messages: list[list[Segment]] = [[]]
    used = 0
    for piece, is_image in _pieces(markdown):
        if is_image:
            messages[-1].append(image(piece))
            continue
        for part in _parts(piece, limit):
            if used and used + len(part) + 1 > limit:
                messages.append([])
                used = 0
            if used:
                part = "\n" + part
            messages[-1].extend(_mentions(part))
            used += len(part)
    sent = [message for message in messages if message]
    if sent and reply_to is not None:
        sent[0].insert(0, reply(reply_to))
    return sent


def _pieces(markdown: str) -> list[tuple[str, bool]]:
    """The text between images and each image's URL, in order (``True`` marks an image)."""
    pieces: list[tuple[str, bool]] = []
    position = 0
    for match in _IMAGE.finditer(markdown):
        pieces.append((markdown[position : match.start()], False))
        pieces.append((match.group(2), True))
        position = match.end()
    pieces.append((markdown[position:], False))
    return [(piece, is_image) for piece, is_image in pieces if is_image or piece.strip()]


def _parts(markdown: str, limit: int) -> list[str]:
    marked = parse_markdown(markdown, _STYLE)
    ranges = cut_marked(marked, limit, lambda start, end: len(_render(marked, start, end)))
    return [rendered for start, end in ranges if (rendered := _render(marked, start, end))]


def _render(marked: Marked, start: int, end: int) -> str:
    out: list[str] = []
    link: str | None = None
    shown = ""
    for piece, stack in marked.runs(start, end):
        url = next((mark.value for mark in stack if mark.kind == "a"), None)
        if link is not None and url != link:
            out.append(_link_tail(shown, link))
            shown = ""
        link = url
        if url is not None:
            shown += piece
        out.append(piece)
    if link is not None:
        out.append(_link_tail(shown, link))
    return "".join(out)


def _link_tail(shown: str, url: str) -> str:
    return "" if shown.strip() == url else f" ({url})"


def _mentions(part: str) -> list[Segment]:
    segments: list[Segment] = []
    position = 0
    for match in _MENTION.finditer(part):
        if match.start() > position:
            segments.append(text(part[position : match.start()]))
        segments.append(at(match.group(1)))
        position = match.end()
    if position < len(part):
        segments.append(text(part[position:]))
    return segments
