"""Splitting outgoing text into messages that fit a channel's limit.

``split_message(text, limit)`` cuts where a reader expects a break: at a paragraph break, else a line break,
else a space (or after CJK sentence punctuation), and only as a last resort inside a word, then never inside a
grapheme cluster (combining marks, ZWJ emoji sequences, flags, skin tones) when a cluster boundary fits.
The whitespace at a cut is dropped. A fenced code block is never cut if it fits in one message; a block
longer than a whole message is cut at a line break inside it, closed at the end of one part and reopened
with the same fence and info string at the start of the next, so every part renders as code.

The length measure is a parameter: ``len`` (code points) by default; Telegram counts UTF-16 code units
(``utf16_len``). Any measure that never shrinks when text is appended works.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Measure", "cluster_cut", "split_message", "utf16_len"]

Measure = Callable[[str], int]

_OPENER = re.compile(r"^( {0,3})(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
_SPACE = re.compile(r"[ \t\r\n\f\v\u3000]+")
_CJK_STOP_RE = re.compile("[。！？]")
_PARAGRAPH, _LINE, _SPACE_CUT, _HARD = 3, 2, 1, 0


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (how Telegram counts): characters beyond U+FFFF count twice."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(frozen=True, slots=True)
class _Fence:
    start: int  # the opening marker (after its indentation)
    body: int  # the first line after the opening line
    close_line: int  # the start of the closing line (len(text) when unclosed)
    end: int  # just after the closing marker line, before its newline (len(text) when unclosed)
    opener: str  # the opening line from its marker on, e.g. "```python"
    marker: str  # the opening marker, e.g. "```"


def _fences(text: str) -> list[_Fence]:
    fences: list[_Fence] = []
    pos = 0
    while (match := _OPENER.search(text, pos)) is not None:
        marker, info = match.group(2), match.group(3)
        if marker[0] == "`" and "`" in info:
            pos = match.end() + 1
            continue
        body = min(match.end() + 1, len(text))
        closer = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$", re.MULTILINE)
        found = closer.search(text, body)
        close_line, end = (found.start(), found.end()) if found else (len(text), len(text))
        fences.append(_Fence(match.start(2), body, close_line, end, marker + info.rstrip(), marker))
        pos = end + 1
    return fences


def cluster_cut(text: str, floor: int, cut: int) -> int:
    """The nearest cut at or before ``cut`` (and after ``floor``) that keeps ``text``'s grapheme clusters whole;
    ``cut`` itself when none does (a cluster longer than the room left)."""
    safe = cut
    while safe > floor + 1 and not _cluster_boundary(text, safe):
        safe -= 1
    return safe if _cluster_boundary(text, safe) else cut


def _cluster_boundary(text: str, cut: int) -> bool:
    """Whether cutting before ``text[cut]`` keeps every grapheme cluster whole (a close approximation)."""
    if cut <= 0 or cut >= len(text):
        return True
    before, after = text[cut - 1], text[cut]
    if before == "\u200d" or (before == "\r" and after == "\n"):
        return False
    code = ord(after)
    if (
        after == "\u200d"
        or unicodedata.category(after) in ("Mn", "Me", "Mc")
        or 0xFE00 <= code <= 0xFE0F
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
    ):
        return False
    if _regional(after) and _regional(before):
        run = 0
        while cut - run - 1 >= 0 and _regional(text[cut - run - 1]):
            run += 1
        return run % 2 == 0
    return True


def _regional(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF


class _Splitter:
    def __init__(self, text: str, limit: int, measure: Measure):
        self.text, self.limit, self.measure = text, limit, measure
        self.fences = _fences(text)
        self.starts = [fence.start for fence in self.fences]
        self.big = {id(f) for f in self.fences if measure(text[f.start : f.end]) > limit}

    def fence_at(self, pos: int) -> _Fence | None:
        """The fence whose interior holds ``pos`` (strictly after its opening marker, before its end)."""
        index = bisect.bisect_left(self.starts, pos) - 1
        if index >= 0 and self.fences[index].start < pos < self.fences[index].end:
            return self.fences[index]
        return None

    def fits(self, head: str, start: int, cut: int, tail: str = "") -> bool:
        return self.measure(head + self.text[start:cut] + tail) <= self.limit

    def max_fit(self, head: str, start: int) -> int:
        """The largest ``cut`` with ``head + text[start:cut]`` within the limit (galloping, then bisecting)."""
        end, step, low = len(self.text), max(1, self.limit), start
        high = min(end, start + step)
        while high < end and self.fits(head, start, high):
            low, step = high, step * 2
            high = min(end, start + step)
        if self.fits(head, start, high):
            return high
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self.fits(head, start, middle) else (low, middle)
        return low

    def split(self) -> list[str]:
        parts: list[str] = []
        pos, reopen = 0, None
        while True:
            head = reopen.opener + "\n" if reopen else ""
            # Galloping from ``pos`` keeps each step proportional to one part, never to the rest of the text.
            high = self.max_fit(head, pos)
            if high >= len(self.text):
                last = head + self.text[pos:]
                if last.strip():
                    parts.append(last)
                return parts
            if high <= pos:
                raise ValueError(f"limit {self.limit} is too small to hold any text after {head!r}")
            part, pos, reopen = self.best_break(head, pos, high) or self.hard_cut(head, pos, high)
            if part.strip():
                parts.append(part)

    def best_break(self, head: str, pos: int, high: int) -> tuple[str, int, _Fence | None] | None:
        found: tuple[int, int] | None = None  # (priority, cut)
        for match in _SPACE.finditer(self.text, pos, high):
            start = match.start()
            if start <= pos or self.fence_at(start):
                continue
            run = _SPACE.match(self.text, start)
            newlines = run.group().count("\n") if run else 0
            priority = _PARAGRAPH if newlines >= 2 else _LINE if newlines else _SPACE_CUT
            found = max(found or (priority, start), (priority, start))
        for stop in _CJK_STOP_RE.finditer(self.text, pos, high):
            if not self.fence_at(stop.end()):
                found = max(found or (_SPACE_CUT, stop.end()), (_SPACE_CUT, stop.end()))
        inner = self.fence_line_break(head, pos, high)
        if inner is not None and (found is None or (_LINE, inner[1]) > found):
            return inner
        if found is None:
            return None
        cut = found[1]
        run = _SPACE.match(self.text, cut)
        return head + self.text[pos:cut], run.end() if run else cut, None

    def fence_line_break(self, head: str, pos: int, high: int) -> tuple[str, int, _Fence | None] | None:
        """The furthest line start inside a too-long fence where the closed part still fits."""
        fence = self.fence_at(high)
        if fence is None or id(fence) not in self.big:
            return None
        cut = self.text.rfind("\n", max(pos, fence.body), min(high, fence.close_line - 1)) + 1
        while cut > max(pos, fence.body):
            if self.fits(head, pos, cut, fence.marker):
                return head + self.text[pos:cut] + fence.marker, cut, fence
            cut = self.text.rfind("\n", max(pos, fence.body), cut - 1) + 1
        return None

    def hard_cut(self, head: str, pos: int, high: int) -> tuple[str, int, _Fence | None]:
        """A cut inside a word (or a code line); inside a too-long fence the part is closed and reopened."""
        fence = self.fence_at(high)
        if fence is None:
            cut = self.cluster_cut(pos, high)
            return head + self.text[pos:cut], cut, None
        floor, tail = max(pos, fence.body), "\n" + fence.marker
        # Leave at least the last code character for the next part, so it is never an empty block.
        cut = min(high, fence.close_line - 2)
        while cut > floor and not self.fits(head, pos, cut, tail):
            cut -= 1
        if id(fence) in self.big and cut > floor:
            cut = self.cluster_cut(floor, cut)
            return head + self.text[pos:cut] + tail, cut, fence
        if fence.start > pos:
            return head + self.text[pos : fence.start], fence.start, None
        raise ValueError(f"limit {self.limit} is too small to hold {fence.opener!r}, a closing fence and any text")

    def cluster_cut(self, floor: int, cut: int) -> int:
        """The nearest cut at or before ``cut`` (and after ``floor``) that keeps grapheme clusters whole."""
        return cluster_cut(self.text, floor, cut)


def split_message(text: str, limit: int, *, measure: Measure = len) -> list[str]:
    """Split ``text`` into parts each at most ``limit`` by ``measure`` (see the module docstring).

    Whitespace-only text gives no parts. ``ValueError`` when ``limit`` cannot hold a reopened fence.
    """
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    if not text.strip():
        return []
    return _Splitter(text, limit, measure).split()
