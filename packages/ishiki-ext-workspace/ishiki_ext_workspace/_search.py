"""search_files: a regular expression over the text files under a place, with capped results.

Patterns use Python's syntax, run by the ``regex`` engine in its ``re``-compatible mode with ``MULTILINE``
(``^`` and ``$`` match at line ends). Each file is matched as a whole and a match is reported on the line
where it starts, once per line. The engine takes a timeout, so a pattern that backtracks catastrophically is
stopped at the search's deadline, with the results found so far; nothing keeps running after the call.

Skipped, and counted: binary files (a NUL byte, or not UTF-8), files over the size limit, files with more
than one hard link (see ``_confine``), symlinks (never followed) and unreadable files. Version-control
directories are not entered (see ``_tree``).
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import regex

from ishiki_ext_workspace._confine import FILE_FLAGS, open_checked, open_dir
from ishiki_ext_workspace._fileops import resolve_location
from ishiki_ext_workspace._tree import glob_matcher, walk_tree
from ishiki_host.errors import ResourceError

if TYPE_CHECKING:
    from ishiki_ext_workspace._paths import Location

__all__ = ["MAX_LINE_CHARS", "Match", "SearchOutcome", "compile_pattern", "search"]

MAX_LINE_CHARS = 300
_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Match:
    """A matching line: the file's path from the searched place, the line number and the line (clipped)."""

    rel: tuple[str, ...]
    line: int
    text: str


@dataclass(slots=True)
class SearchOutcome:
    """Matches in walk order; ``truncated`` when more were found than the limit.

    Paths (``Match.rel``, ``timed_out``: the file the deadline hit) are relative to the searched directory, or
    to the parent of the searched file when ``single_file``.
    """

    matches: list[Match] = field(default_factory=list)
    files: int = 0
    truncated: bool = False
    timed_out: tuple[str, ...] | None = None
    single_file: bool = False
    skipped: Counter[str] = field(default_factory=Counter)


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """The compiled pattern; ``invalid_selector`` says what is wrong with it."""
    try:
        return regex.compile(pattern, regex.MULTILINE | regex.VERSION0)
    except (regex.error, ValueError, OverflowError) as exc:
        why = f"pattern {pattern!r} is not a valid regular expression: {exc}"
        raise ResourceError("invalid_selector", why) from None


def _read_upto(fd: int, size: int, expected: int) -> bytes:
    # Sized by the file's status: asking os.read for the whole limit would allocate it for every small file.
    # One read is the rule for a regular file; loop only on a short read before the promised end.
    data = os.read(fd, size)
    while len(data) < min(expected, size):
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _clip(text: str, start: int, end: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line = text[line_start : line_end if line_end != -1 else len(text)].rstrip("\r")
    if len(line) <= MAX_LINE_CHARS:
        return line
    column = start - line_start
    left = max(0, min(column - MAX_LINE_CHARS // 3, len(line) - MAX_LINE_CHARS))
    return ("…" if left else "") + line[left : left + MAX_LINE_CHARS] + "…"


class _Search:
    def __init__(self, pattern: regex.Pattern[str], limit: int, max_bytes: int, deadline: float):
        self.pattern = pattern
        self.limit = limit
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.outcome = SearchOutcome()

    @property
    def done(self) -> bool:
        """Whether the search stops (the cap or the deadline was reached)."""
        return self.outcome.truncated or self.outcome.timed_out is not None

    def text_of(self, fd: int, info: os.stat_result) -> str | None:
        """The text of an open file, or ``None`` (counted as skipped, with the reason)."""
        if not stat.S_ISREG(info.st_mode):
            self.outcome.skipped["special"] += 1
        elif info.st_nlink > 1:
            self.outcome.skipped["hard-linked"] += 1
        elif info.st_size > self.max_bytes:
            self.outcome.skipped["too large"] += 1
        else:
            data = _read_upto(fd, min(info.st_size, self.max_bytes) + 1, info.st_size)
            if len(data) <= self.max_bytes and b"\x00" not in data:
                try:
                    return data.decode("utf-8").removeprefix("\ufeff")
                except UnicodeDecodeError:
                    pass
            self.outcome.skipped["binary" if len(data) <= self.max_bytes else "too large"] += 1
        return None

    def scan(self, text: str, rel: tuple[str, ...]) -> None:
        """Collect the matching lines of one file's text."""
        self.outcome.files += 1
        line, counted, last = 1, 0, 0
        remaining = self.deadline - time.monotonic()
        try:
            for found in self.pattern.finditer(text, timeout=max(remaining, 0.001), concurrent=True):
                line += text.count("\n", counted, found.start())
                counted = found.start()
                if line == last:
                    continue
                if len(self.outcome.matches) == self.limit:
                    self.outcome.truncated = True
                    return
                last = line
                self.outcome.matches.append(Match(rel, line, _clip(text, found.start(), found.end())))
        except TimeoutError:
            self.outcome.timed_out = rel

    def file(self, dir_fd: int, name: str, rel: tuple[str, ...]) -> None:
        """Search the regular file ``name`` of the directory ``dir_fd``."""
        if time.monotonic() >= self.deadline:
            self.outcome.timed_out = rel
            return
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
        except OSError:
            self.outcome.skipped["unreadable"] += 1
            return
        try:
            text = self.text_of(fd, os.fstat(fd))
        except OSError:
            self.outcome.skipped["unreadable"] += 1
            text = None
        finally:
            os.close(fd)
        if text is not None:
            self.scan(text, rel)


def search(
    location: Location,
    pattern: regex.Pattern[str],
    *,
    glob: str | None,
    limit: int,
    max_file_bytes: int,
    timeout: float,
) -> SearchOutcome:
    """Search the file or the tree ``location`` names; stops at ``limit`` matches or after ``timeout`` seconds."""
    matches = glob_matcher(glob)
    run = _Search(pattern, limit, max_file_bytes, time.monotonic() + timeout)
    with resolve_location(location) as target:
        if target.info is not None and not stat.S_ISDIR(target.info.st_mode):
            fd = open_checked(target, location.shown)
            name = location.segments[-1] if location.segments else "."
            try:
                text = run.text_of(fd, os.fstat(fd))
            finally:
                os.close(fd)
            run.outcome.single_file = True
            if text is not None:
                run.scan(text, (name,))
            return run.outcome
        root = open_dir(target, location.shown)
        try:
            for node in walk_tree(root, _DEPTH):
                if run.done:
                    break
                kind = node.kind
                if kind == "dir" or not matches(node.rel):
                    continue
                if kind == "file":
                    run.file(node.dir_fd, node.entry.name, node.rel)
                else:  # a device, FIFO or socket is never opened; a symlink never followed
                    run.outcome.skipped["symlink" if kind == "symlink" else "special"] += 1
        finally:
            os.close(root)
    return run.outcome
