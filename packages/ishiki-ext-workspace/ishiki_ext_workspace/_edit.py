"""edit_file: exact-match replacement in a UTF-8 text file, refusing ambiguous or missing matches.

Without ``count`` the old text must occur exactly once; with ``count`` it must occur exactly that many times,
and every occurrence is replaced. A refusal says how many occurrences there are and on which lines, so the
model can add context or pass ``count``. When the file uses CRLF line ends and the old text (written with
``\\n``) only matches once they are CRLF, both texts are taken with CRLF. The BOM of a file is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_ext_workspace._confine import open_checked
from ishiki_ext_workspace._fileops import decode_utf8, file_key, read_limited, refreshed, replace_file, resolve_location
from ishiki_ext_workspace._locks import file_locks
from ishiki_host.errors import ResourceError

if TYPE_CHECKING:
    from ishiki_ext_workspace._paths import Location

__all__ = ["EditOutcome", "apply_edit", "edit_file"]

_SHOWN_LINES = 10


@dataclass(frozen=True, slots=True)
class EditOutcome:
    """What an edit did: how many replacements, the lines (1-based, in the new text) they start on, the size."""

    replacements: int
    lines: tuple[int, ...]
    size: int


def _line_numbers(text: str, needle: str) -> list[int]:
    lines: list[int] = []
    start = text.find(needle)
    line, counted = 1, 0
    while start != -1:
        line += text.count("\n", counted, start)
        counted = start
        lines.append(line)
        start = text.find(needle, start + len(needle))
    return lines


def _on_lines(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:_SHOWN_LINES])
    more = f" and {len(lines) - _SHOWN_LINES} more" if len(lines) > _SHOWN_LINES else ""
    return f"line{'s' if len(lines) > 1 else ''} {shown}{more}"


def _crlf(text: str, old: str, new: str) -> tuple[str, str]:
    if "\n" in old and "\r\n" in text and "\r\n" not in old and old not in text:
        return old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    return old, new


def apply_edit(text: str, old: str, new: str, count: int | None, shown: str) -> tuple[str, EditOutcome]:
    """Replace ``old`` with ``new`` in ``text`` (see the module docstring); ``ResourceError`` on a refusal."""
    if old == "":
        raise ResourceError("invalid_selector", "old is empty; give the exact text to replace")
    if old == new:
        raise ResourceError("invalid_selector", "old and new are the same; nothing would change")
    old, new = _crlf(text, old, new)
    found = _line_numbers(text, old)
    if not found:
        raise ResourceError(
            "not_found", f"old text not found in {shown}; read the file to copy the exact text (whitespace counts)"
        )
    if count is None and len(found) > 1:
        raise ResourceError(
            "ambiguous",
            f"old text occurs {len(found)} times in {shown} ({_on_lines(found)}); include more surrounding "
            f"text to pick one, or pass count={len(found)} to replace them all",
        )
    if count is not None and count != len(found):
        raise ResourceError(
            "ambiguous",
            f"count={count}, but old text occurs {len(found)} time{'s' if len(found) > 1 else ''} in {shown} "
            f"({_on_lines(found)}); nothing was changed",
        )
    shift = new.count("\n") - old.count("\n")
    lines = tuple(line + i * shift for i, line in enumerate(found))
    return text.replace(old, new), EditOutcome(len(found), lines, 0)


def edit_file(location: Location, old: str, new: str, count: int | None, limit: int) -> EditOutcome:
    """Edit a file in place, atomically, holding its lock from the read to the rename."""
    shown = location.shown
    with resolve_location(location) as resolved:
        if resolved.name is None:
            raise ResourceError("not_found", f"{shown} is a directory, not a file")
        with file_locks.hold(file_key(resolved)):
            target = refreshed(resolved)
            fd = open_checked(target, shown)
            assert target.info is not None
            assert target.name is not None
            text, bom = decode_utf8(read_limited(fd, target.info, limit, shown), shown)
            updated, outcome = apply_edit(text, old, new, count, shown)
            data = bom + updated.encode("utf-8")
            if len(data) > limit:
                raise ResourceError("too_large", f"the edit would make {shown} {len(data):,} bytes (max_file_bytes)")
            replace_file(target.dir_fd, target.name, data, target.info.st_mode)
    return EditOutcome(outcome.replacements, outcome.lines, len(data))
