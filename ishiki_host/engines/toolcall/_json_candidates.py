"""Where the JSON blocks of an answer are: fenced code blocks and bare objects in the prose.

A fenced block is a Markdown fence (three or more backticks, language ``json``, ``json5``, ``jsonc`` or none)
whose content starts with ``{`` or ``[``. Its end is found string-aware, so a fence written inside a string
value (code in a message the model wants to send) does not end it. A bare object is a ``{`` followed by a
quote or ``}``, outside any fence. Fences in other languages (```` ```python ````) are skipped whole.

``find_candidates`` hands each candidate to a callback that says whether it was usable, because that decides
where the search goes on: past a usable bare object, or one character after an unusable one (so a real
object swallowed by a stray ``{`` in the prose is still found).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ishiki_host.engines.toolcall._jsonscan import JsonScanner

__all__ = ["Candidate", "find_candidates"]

_FENCE_OPEN = re.compile(r"^[ \t]*`{3,}[ \t]*([A-Za-z0-9_+.-]*)[^\n`]*\n", re.M)
_FENCE_CLOSE = re.compile(r"^[ \t]*`{3,}[ \t]*\r?$", re.M)
_BARE_OPEN = re.compile(r"\{\s*[\"'}]")
_JSON_LANGS = frozenset({"", "json", "json5", "jsonc"})


@dataclass(frozen=True, slots=True)
class Candidate:
    """One JSON block of an answer.

    ``start``/``end`` delimit the whole block in the answer (fence lines included), ``raw`` is the JSON text.
    ``fallback`` is the fenced content up to the first closing fence line, when that differs from ``raw``
    (tried when ``raw`` cannot be read: a string that never closes makes ``raw`` run too far).
    """

    start: int
    end: int
    raw: str
    fenced: bool
    fallback: str | None = None


def find_candidates(text: str, accept: Callable[[Candidate], bool]) -> None:
    """Offer every JSON block of ``text`` to ``accept``, in order of position."""
    pos = 0
    while pos < len(text):
        fence = _FENCE_OPEN.search(text, pos)
        bare = _BARE_OPEN.search(text, pos, fence.start() if fence else len(text))
        if bare is not None:
            pos = _offer_bare(text, bare.start(), accept)
        elif fence is not None:
            pos = _offer_fenced(text, fence, accept)
        else:
            return


def _offer_bare(text: str, start: int, accept: Callable[[Candidate], bool]) -> int:
    scanner = JsonScanner(start, stop_at_fence=True)
    end = scanner.scan(text)
    complete = end is not None and not scanner.fenced
    stop = end if end is not None else len(text)
    if accept(Candidate(start, stop, text[start:stop], fenced=False)) or complete:
        return max(stop, start + 1)
    return start + 1


def _offer_fenced(text: str, fence: re.Match[str], accept: Callable[[Candidate], bool]) -> int:
    lang = fence.group(1).lower()
    body = fence.end()
    first = body + len(text[body:]) - len(text[body:].lstrip())
    first_close = _FENCE_CLOSE.search(text, body)
    if lang not in _JSON_LANGS or first >= len(text) or text[first] not in "{[":
        block_end = first_close.end() if first_close else len(text)
        if lang in _JSON_LANGS - {""}:
            content = text[body : first_close.start() if first_close else len(text)]
            accept(Candidate(fence.start(), block_end, content, fenced=True))
        return block_end
    scanner = JsonScanner(first, stop_at_fence=True)
    end = scanner.scan(text)
    if end is None:
        raw, block_end = text[first:], len(text)
    elif scanner.fenced:
        raw, block_end = text[first:end], _line_end(text, end)
    else:
        raw, block_end = text[first:end], _closing_fence_end(text, end)
    fallback = None
    if first_close is not None and first_close.start() < first + len(raw):
        fallback = text[first : first_close.start()]
    accept(Candidate(fence.start(), block_end, raw, fenced=True, fallback=fallback))
    return block_end


def _line_end(text: str, index: int) -> int:
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline + 1


def _closing_fence_end(text: str, index: int) -> int:
    """Past the closing fence when only whitespace (or stray closers) separate it from ``index``; else ``index``."""
    close = _FENCE_CLOSE.search(text, index)
    if close is not None and not text[index : close.start()].strip(" \t\r\n}]"):
        return min(len(text), close.end() + (1 if text[close.end() : close.end() + 1] == "\n" else 0))
    return index
