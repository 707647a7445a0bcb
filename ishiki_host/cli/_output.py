"""Helpers shared by the CLI commands: printing JSON and aligned tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["print_json", "table"]


def print_json(value: Any, stream: TextIO | None = None) -> None:
    """Print ``value`` as one JSON document (UTF-8 kept readable)."""
    out = stream or sys.stdout
    out.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def table(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as lines with columns aligned (the last column is not padded)."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        indent + "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip() for row in rows
    ]
