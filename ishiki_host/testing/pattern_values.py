"""A string matching a simple regular expression, for the arguments ``TestModel`` makes up.

``pattern_example(pattern, extra)`` walks the pattern once and writes the shortest text it describes: literals
as they are, ``\\d`` as ``0``, ``\\w`` and ``.`` as ``a``, a character class as its first member among a few
candidates (negated classes too), a group's first alternative, and each quantified atom repeated its minimum
number of times (``extra`` more where the quantifier allows, to reach a ``minLength``). Anchors and word
boundaries write nothing. It gives up (``None``) on what it does not know: lookarounds, backreferences,
conditionals, Unicode property escapes. The caller checks the result with ``re.search`` anyway, since a
pattern can mean more than this walk sees (``a{2}(?!a)``...).
"""

from __future__ import annotations

import re

__all__ = ["pattern_example"]

_ESCAPES = {"d": "0", "D": "a", "w": "a", "W": "-", "s": " ", "S": "a", "n": "\n", "t": "\t", "r": "\r"}
_ZERO_WIDTH = frozenset("bBAZz")
_CLASS_CANDIDATES = "a0A_-. x@/:+,;=!~*'()"
_QUANTIFIER = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")


class _GiveUp(Exception):
    """The pattern uses something this walk does not write."""


class _Walk:
    """One pass over ``pattern`` (see the module docstring)."""

    def __init__(self, pattern: str, extra: int):
        self.pattern = pattern
        self.extra = extra
        self.at = 0

    def peek(self) -> str:
        """The next character, ``""`` at the end."""
        return self.pattern[self.at] if self.at < len(self.pattern) else ""

    def alternatives(self) -> str:
        """Until the end or a closing ``)``: the first alternative's text (the others are read and dropped)."""
        first = self.sequence()
        while self.peek() == "|":
            self.at += 1
            self.sequence()
        return first

    def sequence(self) -> str:
        out = []
        while self.peek() not in ("", "|", ")"):
            atom = self.atom()
            low, high = self.quantifier()
            count = low if high == low else min(low + self.extra, high) if high is not None else low + self.extra
            out.append(atom * count)
        return "".join(out)

    def atom(self) -> str:
        char = self.peek()
        self.at += 1
        if char in "^$":
            return ""
        if char == ".":
            return "a"
        if char == "\\":
            return self.escape()
        if char == "[":
            return self.char_class()
        if char == "(":
            return self.group()
        if char in "*+?{":
            raise _GiveUp(f"a quantifier with nothing before it at {self.at - 1}")
        return char

    def escape(self) -> str:
        char = self.peek()
        self.at += 1
        if char == "":
            raise _GiveUp("a trailing backslash")
        if char in _ZERO_WIDTH:
            return ""
        if char in _ESCAPES:
            return _ESCAPES[char]
        if char.isalnum():
            raise _GiveUp(f"the escape \\{char}")
        return char

    def char_class(self) -> str:
        start = self.at - 1
        end = self.at + (1 if self.peek() == "^" else 0)
        end += 1 if self.pattern[end : end + 1] == "]" else 0  # a leading ] is a member
        while end < len(self.pattern) and self.pattern[end] != "]":
            end += 2 if self.pattern[end] == "\\" else 1
        if end >= len(self.pattern):
            raise _GiveUp("an unclosed character class")
        self.at = end + 1
        klass = re.compile(self.pattern[start : self.at])
        for candidate in _CLASS_CANDIDATES:
            if klass.fullmatch(candidate):
                return candidate
        inner = self.pattern[start + 1 : end].lstrip("^")
        if inner and klass.fullmatch(inner[0]):
            return inner[0]
        raise _GiveUp(f"no candidate member of {self.pattern[start : self.at]}")

    def group(self) -> str:
        if self.peek() == "?":
            prefix = self.pattern[self.at : self.at + 3]
            if prefix.startswith("?:"):
                self.at += 2
            elif prefix.startswith(("?P<", "?<")) and prefix[:3] not in ("?<=", "?<!"):
                self.at = self.pattern.index(">", self.at) + 1
            else:
                raise _GiveUp(f"the group ({prefix}...")
        text = self.alternatives()
        if self.peek() != ")":
            raise _GiveUp("an unclosed group")
        self.at += 1
        return text

    def quantifier(self) -> tuple[int, int | None]:
        char = self.peek()
        bounds: tuple[int, int | None] = (1, 1)
        if char and char in "*+?":
            self.at += 1
            bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        elif char == "{" and (match := _QUANTIFIER.match(self.pattern, self.at)):
            self.at = match.end()
            low = int(match.group(1))
            high = low if match.group(2) is None else (int(match.group(3)) if match.group(3) else None)
            bounds = (low, high)
        if bounds != (1, 1) and self.peek() in ("?", "+"):  # lazy or possessive: the same texts match
            self.at += 1
        return bounds


def pattern_example(pattern: str, extra: int = 0) -> str | None:
    """The shortest text the walk writes for ``pattern`` (``extra`` more repeats where allowed), or ``None``
    when the pattern uses something the walk does not know; check the result with ``re.search``."""
    walk = _Walk(pattern, extra)
    try:
        text = walk.alternatives()
    except (_GiveUp, re.error, ValueError):
        return None
    return text if walk.at == len(pattern) else None
