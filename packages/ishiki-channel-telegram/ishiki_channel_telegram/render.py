"""Markdown-ish model text rendered as Telegram HTML, for a small safe subset.

Converted: fenced code blocks (``<pre><code class="language-x">``), inline code, ``**bold**``/``__bold__``,
``*italic*``/``_italic_``, ``~~strike~~`` and ``[text](http://url)`` links. Everything else is escaped and
shown as written. The output is balanced by construction: code and links become opaque placeholders first,
and an emphasis span may hold whole placeholders but no bare tag, so tags never overlap (emphasis nested in
emphasis is left as text).

Rendering only removes visible characters (markers, fence lines, link targets), so a part that fits the
limit before rendering still fits after Telegram parses the HTML. A part is rendered on its own, after
splitting: an emphasis cut in two by the split stays as literal markers.
"""

from __future__ import annotations

import html
import re

__all__ = ["render_html"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n`]*)\n(.*?)(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)(?=[^`])(.+?)(?<=[^`])\1(?!`)", re.DOTALL)
_LINK = re.compile(r"\[([^\[\]\n]+)\]\((https?://[^\s()<>\x00]+)\)")
_SLOT = re.compile("\x00(\\d+)\x00")
_EMPHASIS = (
    (re.compile(r"\*\*(?=\S)([^<>]+?)(?<=\S)\*\*"), "b"),
    (re.compile(r"(?<![\w_])__(?=\S)([^<>]+?)(?<=\S)__(?![\w_])"), "b"),
    (re.compile(r"~~(?=\S)([^<>~]+?)(?<=\S)~~"), "s"),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])([^<>*\n]+?)(?<=[^\s*])\*(?![\w*])"), "i"),
    (re.compile(r"(?<![\w_])_(?=[^\s_])([^<>_\n]+?)(?<=[^\s_])_(?![\w_])"), "i"),
)


def render_html(text: str) -> str:
    """``text`` as Telegram HTML (see the module docstring)."""
    slots: list[str] = []

    def keep(rendered: str) -> str:
        slots.append(rendered)
        return f"\x00{len(slots) - 1}\x00"

    text = text.replace("\x00", "\ufffd")
    text = _FENCE.sub(lambda m: keep(_pre(m.group(2).strip(), m.group(3))), text)
    text = _INLINE_CODE.sub(lambda m: keep(f"<code>{_escape(m.group(2))}</code>"), text)
    text = _LINK.sub(lambda m: keep(f'<a href="{html.escape(m.group(2))}">{_inline(m.group(1))}</a>'), text)
    out = _inline(text)
    # A placeholder may hold another (a link's text is inline-rendered before it is stored), so resolve inward.
    while _SLOT.search(out):
        out = _SLOT.sub(lambda m: slots[int(m.group(1))], out)
    return out


def _pre(info: str, body: str) -> str:
    language = info.split()[0] if info.split() else ""
    code = _escape(body[:-1] if body.endswith("\n") else body)
    if language and re.fullmatch(r"[\w#+.-]+", language):
        return f'<pre><code class="language-{language}">{code}</code></pre>'
    return f"<pre>{code}</pre>"


def _inline(text: str) -> str:
    out = _escape(text)
    for pattern, tag in _EMPHASIS:
        out = pattern.sub(rf"<{tag}>\1</{tag}>", out)
    return out


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
