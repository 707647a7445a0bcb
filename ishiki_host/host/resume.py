"""Nothing lost across a crash: what a runtime's log tail says about input it has not decided on.

A runtime that stops cleanly appends ``{"name": "runtime.stop", "reason"}`` as its last entry. So at start:

- inbound messages appended after the last turn ended **and** after the last clean stop were never decided
  on (the host died between making them durable and the wakeup engine's decision): the runtime passes them
  to its wakeup engine's ``reconsider``, like the messages a crashed turn left unanswered;
- a log whose newest entry is not ``runtime.stop``, or whose last turn was aborted to be resumed, belongs to
  a runtime that needs attention: the host spawns it at start (``unfinished_runtimes``) instead of waiting
  for new input in that channel. So does a log whose last line is torn or unparseable (a write cut by a
  power loss, a damaged disk): opening it sets the tail aside into ``facts.jsonl.corrupt`` with a warning,
  at start, rather than whenever (if ever) that channel speaks again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ishiki_host.addresses.keys import RuntimeKey, escape_segment, unescape_segment
from ishiki_host.core.entries import Entry
from ishiki_host.runtime.tail import STOP_EVENT

__all__ = ["needs_attention", "resume_routes", "unfinished_runtimes"]

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ishiki_host.host.routes import ProfileRoute

logger = logging.getLogger(__name__)

_TAIL_BYTES = 64 * 1024


def _tail_entries(path: Path) -> tuple[list[Entry], bool]:
    """The parseable entries of the last 64 KiB of ``path``, newest first, and whether its tail is torn (the
    file does not end with a newline, or its last line is not an entry)."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _TAIL_BYTES))
            data = handle.read()
    except OSError:
        return [], False
    torn = bool(data) and not data.endswith(b"\n")
    lines = data.split(b"\n")
    if size > _TAIL_BYTES:
        lines = lines[1:]  # the first line is probably cut
    entries = []
    for line in reversed(lines):
        if not line.strip():
            continue
        try:
            entries.append(Entry.from_json(line))
        except (ValueError, KeyError, TypeError):
            torn = torn or not entries  # a bad line with no good one after it
            continue
    return entries, torn


def needs_attention(path: Path) -> bool:
    """Whether the runtime of the log at ``path`` did not stop cleanly, stopped inside a turn, or left a torn
    tail (which only opening the log sets aside)."""
    entries, torn = _tail_entries(path)
    if torn:
        return True
    if not entries:
        return False
    if entries[0].type != "event" or entries[0].name != STOP_EVENT:
        return True
    for entry in entries[1:]:
        if entry.type == "event" and (entry.name or "").startswith("turn."):
            return (entry.name == "turn.aborted" and bool(entry.data.get("resume"))) or entry.name == "turn.start"
    return False


def unfinished_runtimes(data_dir: Path, profile_id: str, escaped_profile: str) -> list[RuntimeKey]:
    """The keys of the profile's runtimes whose logs need attention (see ``needs_attention``)."""
    root = Path(data_dir, "runtimes", escaped_profile)
    keys: list[RuntimeKey] = []
    for log in sorted(root.glob("*/*/facts.jsonl")) + sorted(root.glob("main/facts.jsonl")):
        if not needs_attention(log):
            continue
        segments = log.parent.relative_to(root).parts
        try:
            if segments == ("main",):
                keys.append(RuntimeKey.for_cross(profile_id))
            else:
                sid, channel = (unescape_segment(s) for s in segments)
                keys.append(RuntimeKey.for_channel(profile_id, sid, channel))
        except ValueError as exc:
            logger.warning("cannot tell which runtime %s belongs to: %s", log, exc)
    return keys


async def resume_routes(
    routes: Sequence[ProfileRoute], data_dir: Path, owns: Callable[[RuntimeKey], bool] = lambda key: True
) -> None:
    """Spawn every runtime of ``routes`` whose log needs attention (the host starts them so they decide now);
    only those this process ``owns`` (a worker resumes its own keys; the others resume theirs)."""
    for route in routes:
        pid = route.profile.id
        try:
            found = await anyio.to_thread.run_sync(unfinished_runtimes, data_dir, pid, escape_segment(pid))
        except BaseException:
            route.scanned, route.ran = True, set()  # no scan will look again: stop counting
            raise
        # Input that came in meanwhile spawned (and so recovered) some of them: their logs are this host's, live or
        # stopped by it since (a stop that left decisions owed is answered at their next start), not what the last
        # host left. The scan may run late on a busy machine, so ``route.ran`` counts stopped runtimes too.
        keys = [key for key in found if key not in route.ran and owns(key)]
        route.scanned, route.ran = True, set()
        for key in keys:
            if key.mode != route.profile.mode:
                logger.warning("runtime %s was left unfinished; profile %s now runs in another mode", key, pid)
                continue
            try:
                await route.runtime(key)
            except Exception:
                logger.exception("runtime %s could not resume", key)
        if keys:
            logging.getLogger("ishiki_host.host").info(
                "profile %s: %d runtime(s) resumed after an unclean stop", pid, len(keys)
            )
