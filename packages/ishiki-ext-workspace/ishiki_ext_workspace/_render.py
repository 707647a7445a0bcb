"""What the model reads from the workspace tools: short text results, capped at ``max_output_bytes``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_ext_workspace._fileops import Listing
    from ishiki_ext_workspace._paths import Location
    from ishiki_ext_workspace._search import SearchOutcome
    from ishiki_ext_workspace._shell import ShellOutcome

__all__ = ["cap_text", "plural", "render_listing", "render_search", "render_shell"]

_SUFFIX = {"dir": "/", "symlink": "@", "other": "|"}


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"


def cap_text(text: str, limit: int) -> str:
    """``text`` cut at a line end so its UTF-8 form stays within ``limit`` bytes, saying so."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    kept = kept[: kept.rfind("\n")] if "\n" in kept else kept
    return f"{kept}\n… output cut at {limit:,} bytes (max_output_bytes); narrow the request"


def render_listing(location: Location, listing: Listing, limit: int, max_results: int) -> tuple[str, dict[str, Any]]:
    """The text and data of a list_files result; paths are given so they can be passed back as they are."""
    entries: list[dict[str, Any]] = []
    lines: list[str] = []
    for entry in listing.entries:
        shown = location.child(*entry.rel).shown
        entries.append({"path": shown, "kind": entry.kind, **({"size": entry.size} if entry.size is not None else {})})
        size = f"  {plural(entry.size, 'byte')}" if entry.size is not None else ""
        lines.append(shown + _SUFFIX.get(entry.kind, "") + size)
    where = location.shown + (" (the workspace root)" if location.shown == "." else "")
    head = f"{where}: {plural(len(entries), 'entry', 'entries')}"
    if listing.truncated:
        head += f", more not shown (max_results={max_results}); narrow with glob or depth"
    elif not entries:
        head += " (empty, or nothing matches)"
    data = {"path": location.shown, "entries": entries, "truncated": listing.truncated}
    return cap_text("\n".join([head, *lines]), limit), data


def _notes(location: Location, outcome: SearchOutcome, base: Location, max_results: int) -> list[str]:
    notes: list[str] = []
    if outcome.truncated:
        notes.append(f"more matches not shown (max_results={max_results}); narrow the pattern, path or glob")
    if outcome.timed_out is not None:
        where = base.child(*outcome.timed_out).shown
        notes.append(f"stopped at the time limit while searching {where}; the results above are partial")
    if outcome.skipped:
        skipped = ", ".join(f"{count:,} {why}" for why, count in sorted(outcome.skipped.items()))
        notes.append(f"skipped: {skipped}")
    return notes


def render_search(
    location: Location, pattern: str, outcome: SearchOutcome, limit: int, max_results: int
) -> tuple[str, dict[str, Any]]:
    """The text and data of a search_files result: ``path:line: text`` per match, then notes."""
    base = location.parent if outcome.single_file else location
    matches = [{"path": base.child(*m.rel).shown, "line": m.line, "text": m.text} for m in outcome.matches]
    files = len({m["path"] for m in matches})
    head = f"{plural(len(matches), 'match', 'matches')} in {plural(files, 'file')} for {pattern!r}"
    head += f" ({plural(outcome.files, 'file')} searched under {location.shown})"
    lines = [head, *(f"{m['path']}:{m['line']}: {m['text']}" for m in matches)]
    notes = _notes(location, outcome, base, max_results)
    data: dict[str, Any] = {"matches": matches, "filesSearched": outcome.files, "truncated": outcome.truncated}
    data["timedOut"] = outcome.timed_out is not None
    data["skipped"] = dict(outcome.skipped)
    text = cap_text("\n".join(lines), max(limit - 512, limit // 2))  # room for the notes
    return "\n".join([text, *(f"… {note}" for note in notes)]), data


def render_shell(outcome: ShellOutcome, timeout: float) -> tuple[str, dict[str, Any]]:
    """The text and data of a shell result: how it ended, then its output (head and tail when cut)."""
    output = outcome.output.decode("utf-8", "replace")
    if outcome.omitted:
        half = len(outcome.output) // 2
        head = outcome.output[:half].decode("utf-8", "replace")
        tail = outcome.output[half:].decode("utf-8", "replace")
        output = f"{head}\n… {plural(outcome.omitted, 'byte')} of output omitted (max_output_bytes) …\n{tail}"
    if outcome.timed_out:
        status = f"timed out after {timeout:g} s: the command and every process it started were killed"
    elif outcome.exit_code is not None and outcome.exit_code < 0:
        status = f"killed by signal {-outcome.exit_code}"
    else:
        status = f"exit code {outcome.exit_code}"
    data = {"exitCode": outcome.exit_code, "timedOut": outcome.timed_out, "omittedBytes": outcome.omitted}
    return f"[{status}]\n{output}" if output else f"[{status}, no output]", data
