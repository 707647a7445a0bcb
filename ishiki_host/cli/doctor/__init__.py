"""``ishiki doctor [DIR] [--json] [--timeout S]``: check what a config directory needs around it, and say how to
fix what is wrong.

In order: the config (``ishiki check``'s problems, summarised: ``doctor.config``), each model (the probe of
``ishiki models --probe``: ``doctor.models``), each channel account (its plugin's ``Channel.diagnose``:
``doctor.channels``), the HTTP ingress and public URL (``doctor.ingress``), a PostgreSQL ``store`` (psycopg
installed, the database answering, its schema not newer than this host's: ``doctor.store``; nothing with
``store: file``), the data directory's permissions and free space and a host already running on it
(``doctor.local``), and the clock (the ``Date`` of the answers the other checks received: ``doctor.clock``).
The network checks run concurrently, each call cut at ``--timeout`` seconds (10 by default), so the doctor
takes about as long as its slowest answer.

Each finding is one line, ``✓`` ok, ``!`` warning, ``✗`` error, with its fix indented below; a summary line
ends the report. ``--json`` prints ``{"ok", "dir", "findings": [{"level", "what", "detail", "fix"}],
"summary": {"ok", "warning", "error"}}`` instead. Exit status: 0 without an error (warnings allowed), 1 with
one, 2 when DIR is not a config directory (one line on stderr, as ``ishiki check`` says it).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ishiki_host.cli._args import add_dir_argument, timeout_seconds
from ishiki_host.cli.models import PROBE_TIMEOUT

if TYPE_CHECKING:
    from ishiki_host.channels.base import Finding

__all__ = ["MARKS", "register", "render", "run"]

MARKS = {"ok": "✓", "warning": "!", "error": "✗"}
"""The mark that starts a finding's line, by level."""


def register(subparsers: Any) -> None:
    """Add the ``doctor`` command."""
    parser = subparsers.add_parser(
        "doctor",
        help="check the config, models, channels, ingress, store, data dir and clock, with fixes",
        description="Check that a config directory can run here: the config loads, each model answers, each "
        "channel account passes its own check, http.listen is free and the public URL fits webhooks, a PostgreSQL "
        "store answers with a schema this host can use, the data dir is writable with free space, no other host "
        "holds it, the clock is right. Each problem comes with its fix. Exit 0 without errors, 1 with one, 2 "
        "when DIR is not a config directory.",
    )
    add_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument(
        "--timeout",
        type=timeout_seconds,
        default=PROBE_TIMEOUT,
        metavar="S",
        help=f"seconds each network check may take (default {PROBE_TIMEOUT:g})",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Examine ``args.dir``; print the findings; return the exit status."""
    from ishiki_host.cli._output import print_json
    from ishiki_host.cli.doctor.examine import examine
    from ishiki_host.errors import ConfigDirError

    # What the gateway and plugins would log about a failing check is in its finding; the report stays the output.
    logging.getLogger().addHandler(logging.NullHandler())
    root = Path(args.dir)
    try:
        findings = examine(root, args.timeout)
    except ConfigDirError as exc:
        if args.json:
            print_json({"ok": False, "error": exc.message})
        print(f"ishiki doctor: {exc.message}", file=sys.stderr)
        return 2
    ok = not any(f.level == "error" for f in findings)
    if args.json:
        print_json(
            {
                "ok": ok,
                "dir": str(root),
                "findings": [{"level": f.level, "what": f.what, "detail": f.detail, "fix": f.fix} for f in findings],
                "summary": _summary(findings),
            }
        )
    else:
        print("\n".join(render(findings)))
    return 0 if ok else 1


def _summary(findings: Sequence[Finding]) -> dict[str, int]:
    counts = Counter[str](f.level for f in findings)
    return {level: counts[level] for level in MARKS}


def render(findings: Sequence[Finding]) -> list[str]:
    """The text report: a line per finding, its fix indented below, and the summary line."""
    lines: list[str] = []
    for finding in findings:
        lines.append(f"{MARKS[finding.level]} {finding.what}: {finding.detail}")
        if finding.fix and finding.level != "ok":
            lines.append(f"    fix: {finding.fix}")
    counts = _summary(findings)
    parts = [f"{counts['ok']} ok", _count(counts["warning"], "warning"), _count(counts["error"], "error")]
    lines.append(f"{'not ok' if counts['error'] else 'ok'}: {', '.join(parts)}")
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"
