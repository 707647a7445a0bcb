"""Cutting marked text (``ishiki_host.channels.markup.Marked``) into parts that each fit a platform's limit.

``cut_marked(marked, limit, measure)`` returns the ``(start, end)`` ranges of the parts, where ``measure(start,
end)`` is what the platform counts of that range once rendered (Telegram: the UTF-16 units of the visible
text; it must never shrink as ``end`` grows). Each part ends where a reader expects a break: at a paragraph
break, else a line break, else a space, and only as a last resort inside a word (never inside a grapheme
cluster when a cluster boundary fits). A cut outside every mark always wins over one inside a mark, so a code
block, a link or a bold span that fits in one part is never cut; one longer than a whole part is cut (a code
block at a line break inside it) and the renderer closes its marks at the end of one part and reopens them at
the start of the next. The whitespace at a cut is dropped, except inside code, whose indentation is kept.
"""

from __future__ import annotations

from collections.abc import Callable

from ishiki_host.channels.markup import ENTITY_KINDS, Marked
from ishiki_host.channels.split import cluster_cut

__all__ = ["RangeMeasure", "cut_marked"]

RangeMeasure = Callable[[int, int], int]
"""What a platform counts of ``marked.text[start:end]`` once rendered (``measure(start, end)``)."""

_PARAGRAPH, _LINE, _SPACE, _HARD = 3, 2, 1, 0


def cut_marked(marked: Marked, limit: int, measure: RangeMeasure) -> list[tuple[int, int]]:
    """The ranges of ``marked.text`` that make the parts, in order (see the module docstring).

    ``ValueError`` when ``limit`` cannot hold a single character.
    """
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    return _Cutter(marked, limit, measure).parts()


class _Cutter:
    def __init__(self, marked: Marked, limit: int, measure: RangeMeasure):
        self.marked, self.text, self.limit, self.measure = marked, marked.text, limit, measure

    def in_code(self, pos: int) -> bool:
        return any(mark.kind == "pre" for mark in self.marked.stack_at(pos))

    def loose_space(self, pos: int) -> bool:
        """Whitespace a cut may drop (not inside a code block)."""
        return self.text[pos].isspace() and not self.in_code(pos)

    def parts(self) -> list[tuple[int, int]]:
        parts: list[tuple[int, int]] = []
        pos, size = self.skip(0), len(self.text)
        while pos < size:
            end = self.max_fit(pos)
            if end <= pos:
                raise ValueError(f"limit {self.limit} is too small to hold {self.text[pos]!r}")
            cut, after = (end, end) if end >= size else self.best_cut(pos, end)
            start, stop = pos, cut
            while stop > start and self.text[stop - 1].isspace():
                stop -= 1
            if stop > start:
                parts.append((start, stop))
            pos = self.skip(after)
        return parts

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.loose_space(pos):
            pos += 1
        return pos

    def max_fit(self, start: int) -> int:
        """The largest ``end`` with ``measure(start, end)`` within the limit (galloping, then bisecting)."""
        size, low, step = len(self.text), start, max(1, self.limit)
        high = min(size, start + step)
        while high < size and self.measure(start, high) <= self.limit:
            low, step = high, step * 2
            high = min(size, start + step)
        if self.measure(start, high) <= self.limit:
            return high
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self.measure(start, middle) <= self.limit else (low, middle)
        return low

    def best_cut(self, pos: int, end: int) -> tuple[int, int]:
        """Where the part from ``pos`` ends (``cut``) and the next begins (``after``), cutting at or before ``end``."""
        text, best = self.text, (False, _HARD, 0, 0, 0)
        hard = cluster_cut(text, pos, end)
        best = (not self.inside(hard - 1, hard), _HARD, hard, hard, hard)
        for cut in range(pos + 1, end + 1):
            if cut < len(text) and self.loose_space(cut) and not self.loose_space(cut - 1):
                after = cut
                while after < len(text) and self.loose_space(after):
                    after += 1
                newlines = text.count("\n", cut, after)
                kind = _PARAGRAPH if newlines >= 2 else _LINE if newlines else _SPACE
                outside = not any(mark.kind in ENTITY_KINDS for mark in self.marked.stack_at(cut))
                best = max(best, (outside, kind, cut, cut, after))
            elif text[cut - 1] == "\n" and cut - 1 > pos and self.in_code(cut - 1):
                best = max(best, (False, _LINE, cut, cut - 1, cut))
        return best[3], best[4]

    def inside(self, left: int, right: int) -> bool:
        """Whether a cut between ``text[left]`` and ``text[right]`` falls inside a mark both share."""
        if right >= len(self.text):
            return False
        shared = set(self.marked.stack_at(left)) & set(self.marked.stack_at(right))
        return any(mark.kind in ENTITY_KINDS for mark in shared)
