"""Keep the option tables of ``docs/engines/*.md`` in step with the engines' config schemas.

Each page holds its table between two marker lines; the table is generated from the schema, the one source of
every default. ``python -m ishiki_host.engines.docs [DOCS_DIR]`` rewrites the tables; with ``--check`` it
changes nothing and exits 1 when a page is stale (the test suite runs the check).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ishiki_host.engines._options import options_table
from ishiki_host.engines.wakeup.jev_model import JEV_CONFIG_SCHEMA
from ishiki_host.engines.wakeup.willingness_model import WILLINGNESS_CONFIG_SCHEMA

__all__ = ["BEGIN", "END", "PAGES", "main", "render_page", "stale_pages"]

BEGIN = "<!-- options: generated from the config schema by `python -m ishiki_host.engines.docs`; do not edit -->"
END = "<!-- end of options -->"
PAGES: Mapping[str, Mapping[str, Any]] = {
    "willingness.md": WILLINGNESS_CONFIG_SCHEMA,
    "jev.md": JEV_CONFIG_SCHEMA,
}


def render_page(text: str, schema: Mapping[str, Any]) -> str:
    """``text`` with the table between the markers regenerated; ``ValueError`` if the markers are missing."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the page has no {BEGIN!r} ... {END!r} markers")
    return f"{text[: start + len(BEGIN)]}\n{options_table(schema)}\n{text[end:]}"


def stale_pages(docs_dir: Path) -> list[str]:
    """The pages under ``docs_dir`` whose table differs from their schema's."""
    stale = []
    for name, schema in PAGES.items():
        text = (docs_dir / name).read_text(encoding="utf-8")
        if render_page(text, schema) != text:
            stale.append(name)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite (or ``--check``) the option tables; the exit code."""
    parser = argparse.ArgumentParser(prog="python -m ishiki_host.engines.docs", description=__doc__)
    parser.add_argument("docs_dir", nargs="?", default="docs/engines", type=Path)
    parser.add_argument("--check", action="store_true", help="exit 1 when a table is stale; change nothing")
    args = parser.parse_args(argv)
    try:
        stale = stale_pages(args.docs_dir)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        for name in stale:
            print(f"{args.docs_dir / name}: the options table is stale", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        page = args.docs_dir / name
        page.write_text(render_page(page.read_text(encoding="utf-8"), PAGES[name]), encoding="utf-8")
        print(f"updated {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
