"""Telegram's HTML parse mode, as strict as the real one where a client can go wrong.

``parse_html`` turns ``parse_mode=HTML`` text into the plain text Telegram shows and its entities (UTF-16
offsets). It refuses what Telegram refuses, with Telegram's kind of message: an unsupported tag, an end tag
that does not match the open one, a tag left open, a ``<`` that starts no tag. Entities ``&lt; &gt; &amp;
&quot;`` and numeric references are decoded.
"""

from __future__ import annotations

import re
from typing import Any

from ishiki_host import utf16_len

__all__ = ["HtmlRejected", "parse_html"]

_TAGS = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))*)\s*>")
_ATTR = re.compile(r"([a-zA-Z-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))")
_REFERENCE = re.compile(r"&(lt|gt|amp|quot|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}


class HtmlRejected(ValueError):
    """Telegram would answer ``Bad Request: can't parse entities: <this message>``."""


def parse_html(source: str) -> tuple[str, list[dict[str, Any]]]:
    """The shown text and its entities; ``HtmlRejected`` when Telegram would refuse ``source``."""
    out: list[str] = []
    entities: list[dict[str, Any]] = []
    stack: list[tuple[str, int, dict[str, str]]] = []  # (tag, utf-16 start, attributes)
    pos = 0
    while pos < len(source):
        char = source[pos]
        if char == "<":
            match = _TAG.match(source, pos)
            if match is None:
                raise HtmlRejected(f"Unexpected end of name token at byte offset {_byte(source, pos)}")
            _tag(match, source, pos, out, stack, entities)
            pos = match.end()
        elif char == "&" and (ref := _REFERENCE.match(source, pos)) is not None:
            out.append(_decode(ref.group(1)))
            pos = ref.end()
        else:
            out.append(char)
            pos += 1
    if stack:
        raise HtmlRejected(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    return "".join(out), sorted(entities, key=lambda e: (e["offset"], -e["length"]))


def _tag(
    match: re.Match[str],
    source: str,
    pos: int,
    out: list[str],
    stack: list[tuple[str, int, dict[str, str]]],
    entities: list[dict[str, Any]],
) -> None:
    closing, name = match.group(1) == "/", match.group(2).lower()
    if name not in _TAGS:
        what = "end" if closing else "start"
        raise HtmlRejected(f'Unsupported {what} tag "{name}" at byte offset {_byte(source, pos)}')
    here = utf16_len("".join(out))
    if not closing:
        attrs = {
            m.group(1).lower(): _unescape(next(g for g in m.groups()[1:] if g is not None))
            for m in _ATTR.finditer(match.group(3))
        }
        stack.append((name, here, attrs))
        return
    if not stack or stack[-1][0] != name:
        expected = f'"</{stack[-1][0]}>"' if stack else "no end tag"
        raise HtmlRejected(
            f'Unmatched end tag at byte offset {_byte(source, pos)}, expected {expected}, found "</{name}>"'
        )
    _, start, attrs = stack.pop()
    language = attrs.get("class", "")
    if name == "code" and stack and stack[-1][0] == "pre" and language.startswith("language-"):
        stack[-1][2]["language"] = language.removeprefix("language-")  # one pre entity, with its language
        return
    if here > start:
        entity: dict[str, Any] = {"type": _TAGS[name], "offset": start, "length": here - start}
        if name == "a":
            entity["url"] = attrs.get("href", "")
        if name == "pre" and "language" in attrs:
            entity["language"] = attrs["language"]
        entities.append(entity)


def _unescape(value: str) -> str:
    return _REFERENCE.sub(lambda m: _decode(m.group(1)), value)


def _decode(reference: str) -> str:
    if reference in _NAMED:
        return _NAMED[reference]
    code = int(reference[2:], 16) if reference.startswith("#x") else int(reference[1:])
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"


def _byte(source: str, pos: int) -> int:
    return len(source[:pos].encode("utf-8"))
