"""Paging a text resource: line selectors and pages of bounded size (pure functions, no I/O).

A selector picks lines, counted from 1: ``"10-20"``, ``"42"``, ``"100-"`` (to the end), ``"-50"`` (the last
50); a URL fragment ``#L10-L20`` / ``#L42`` says the same. A page shows at most ``max_lines`` lines and
``max_chars`` characters of the selection, starting at ``offset`` (a line number) and, for a line longer than a
whole page, at ``column``; it says where the next page starts so nothing is ever unreachable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ishiki_host.errors import ResourceError

__all__ = [
    "DEFAULT_PAGE_CHARS",
    "DEFAULT_PAGE_LINES",
    "LineSelector",
    "Page",
    "page_lines",
    "parse_line_fragment",
    "parse_line_selector",
    "split_lines",
]

DEFAULT_PAGE_LINES = 2000
DEFAULT_PAGE_CHARS = 30_000

_RANGE = re.compile(r"L?(\d+)?(?:(-|\.\.)L?(\d+)?)?", re.IGNORECASE)
_FRAGMENT = re.compile(r"L\d+(?:-L?\d*)?", re.IGNORECASE)
_HELP = "expected 'A-B', 'A', 'A-' (to the end) or '-N' (the last N lines), counting from 1"


@dataclass(frozen=True, slots=True)
class LineSelector:
    """Which lines to read: ``start``..``end`` (1-based, inclusive, either open), or the ``last`` N."""

    start: int | None = None
    end: int | None = None
    last: int | None = None

    def resolve(self, total: int) -> tuple[int, int]:
        """The 1-based inclusive ``(first, last)`` lines this selects in a text of ``total`` lines."""
        if self.last is not None:
            return max(1, total - self.last + 1), total
        first = self.start or 1
        if first > total:
            raise ResourceError("out_of_range", f"line {first} is past the end ({_lines(total)})")
        return first, min(self.end or total, total)

    def __str__(self) -> str:
        if self.last is not None:
            return f"-{self.last}"
        if self.start is not None and self.start == self.end:
            return str(self.start)
        return f"{self.start or 1}-{self.end or ''}"


def _lines(total: int) -> str:
    return "the resource is empty" if total == 0 else f"{total} line{'s' if total != 1 else ''}"


def parse_line_selector(value: str | int) -> LineSelector:
    """Parse a ``lines`` argument; ``ResourceError("invalid_selector")`` explains the accepted forms."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ResourceError("invalid_selector", f"lines={value!r}: {_HELP}")
    text = re.sub(r"\s+", "", str(value))
    match = _RANGE.fullmatch(text)
    if not text or match is None or match.group(0) in ("-", ".."):
        raise ResourceError("invalid_selector", f"lines={value!r}: {_HELP}")
    start_text, sep, end_text = match.groups()
    start = int(start_text) if start_text else None
    end = int(end_text) if end_text else None
    if start is None and end is None:
        raise ResourceError("invalid_selector", f"lines={value!r}: {_HELP}")
    if 0 in (start, end):
        raise ResourceError("invalid_selector", f"lines={value!r}: lines count from 1")
    if start is None:
        return LineSelector(last=end)
    if not sep:
        return LineSelector(start, start)
    if end is not None and end < start:
        raise ResourceError("invalid_selector", f"lines={value!r}: the range ends before it starts")
    return LineSelector(start, end)


def parse_line_fragment(fragment: str | None) -> LineSelector | None:
    """The selector of a ``#L10-L20`` / ``#L42`` / ``#L100-`` fragment; ``None`` for any other fragment."""
    if not fragment or not _FRAGMENT.fullmatch(fragment):
        return None
    return parse_line_selector(fragment)


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (a final newline ends the last line; a ``\\r`` before it is dropped)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a selection. Lines are 1-based; ``first_line == 0`` for an empty resource.

    ``next_offset``/``next_column`` say where the next page starts (``None`` when this page ends the
    selection; ``next_column`` only when the next page starts inside a line). ``remaining_lines`` counts the
    selected lines not shown in full yet.
    """

    text: str
    first_line: int
    last_line: int
    total_lines: int
    first_column: int = 1
    next_offset: int | None = None
    next_column: int | None = None
    remaining_lines: int = 0


def page_lines(
    lines: Sequence[str],
    *,
    selector: LineSelector | None = None,
    offset: int | None = None,
    column: int | None = None,
    max_lines: int = DEFAULT_PAGE_LINES,
    max_chars: int = DEFAULT_PAGE_CHARS,
) -> Page:
    """The page of ``lines`` starting at ``offset`` (default: the selection's first line) and ``column``."""
    total = len(lines)
    if total == 0:
        if (selector is None or selector.last is not None) and offset in (None, 1) and column in (None, 1):
            return Page("", 0, 0, 0)
        raise ResourceError("out_of_range", "the resource is empty")
    first, last = (selector or LineSelector()).resolve(total)
    start = max(first, offset or first)
    if start > last:
        raise ResourceError("out_of_range", f"offset {offset} is past the end of the selection (line {last})")
    col = (column or 1) - 1
    if col < 0 or (col > 0 and col >= len(lines[start - 1])):
        raise ResourceError("out_of_range", f"column {column} is outside line {start}")
    head = lines[start - 1][col:]
    if len(head) > max_chars:
        return Page(head[:max_chars], start, start, total, col + 1, start, col + 1 + max_chars, last - start + 1)
    shown = [head]
    used = len(head)
    index = start  # 0-based index of the next line to consider
    while index < last and len(shown) < max_lines and used + 1 + len(lines[index]) <= max_chars:
        shown.append(lines[index])
        used += 1 + len(lines[index])
        index += 1
    more = last - index
    return Page("\n".join(shown), start, index, total, col + 1, index + 1 if more else None, None, more)
