"""Keep the option tables of ``docs/engines/*.md`` in step with the engines' config schemas.

Each page holds its table between two marker lines; the table is generated from the schema, the one source of
every default. A page with several tables names each one: the key ``standard.md#wakeup`` is the table between
``begin_marker("wakeup")`` and ``END`` on ``standard.md``. ``python -m ishiki_host.engines.docs [DOCS_DIR]``
rewrites the tables; with ``--check`` it changes nothing and exits 1 when a page is stale (the test suite runs
the check; ``make docs`` rewrites them).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ishiki_host.engines._options import options_table
from ishiki_host.engines.context.standard import StandardContextEngine
from ishiki_host.engines.toolcall.native import NativeToolcallEngine
from ishiki_host.engines.toolcall.text import TEXT_TOOLCALL_CONFIG_SCHEMA
from ishiki_host.engines.wakeup.jev_model import JEV_CONFIG_SCHEMA
from ishiki_host.engines.wakeup.standard import StandardWakeupEngine
from ishiki_host.engines.wakeup.willingness_model import WILLINGNESS_CONFIG_SCHEMA

__all__ = ["BEGIN", "END", "PAGES", "begin_marker", "main", "page_file", "render_page", "stale_pages"]

BEGIN = "<!-- options: generated from the config schema by `python -m ishiki_host.engines.docs`; do not edit -->"
END = "<!-- end of options -->"
PAGES: Mapping[str, Mapping[str, Any]] = {
    "willingness.md": WILLINGNESS_CONFIG_SCHEMA,
    "jev.md": JEV_CONFIG_SCHEMA,
    "toolcall-json.md": TEXT_TOOLCALL_CONFIG_SCHEMA,
    "toolcall-xml.md": TEXT_TOOLCALL_CONFIG_SCHEMA,
    "standard.md#wakeup": StandardWakeupEngine.config_schema,
    "standard.md#context": StandardContextEngine.config_schema,
    "standard.md#toolcall": NativeToolcallEngine.config_schema,
}


def begin_marker(table: str | None = None) -> str:
    """The line that opens a table: ``BEGIN``, or for a named table of a page with several its own line."""
    return BEGIN if not table else BEGIN.replace("<!-- options:", f"<!-- options of {table}:", 1)


def page_file(key: str) -> str:
    """The file a ``PAGES`` key is on (``standard.md#wakeup`` -> ``standard.md``)."""
    return key.partition("#")[0]


def render_page(text: str, schema: Mapping[str, Any], table: str | None = None) -> str:
    """``text`` with the table between the markers regenerated; ``ValueError`` if the markers are missing."""
    begin = begin_marker(table)
    start = text.find(begin)
    end = text.find(END, start) if start >= 0 else -1
    if start < 0 or end < start:
        raise ValueError(f"the page has no {begin!r} ... {END!r} markers")
    table_text = options_table(schema) if schema.get("properties") else "No options."
    return f"{text[: start + len(begin)]}\n{table_text}\n{text[end:]}"


def _render(key: str, text: str) -> str:
    return render_page(text, PAGES[key], key.partition("#")[2] or None)


def stale_pages(docs_dir: Path) -> list[str]:
    """The ``PAGES`` keys under ``docs_dir`` whose table differs from their schema's."""
    stale = []
    for key in PAGES:
        text = (docs_dir / page_file(key)).read_text(encoding="utf-8")
        if _render(key, text) != text:
            stale.append(key)
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
        for key in stale:
            table = f"{key.partition('#')[2]} options table" if "#" in key else "options table"
            print(f"{args.docs_dir / page_file(key)}: the {table} is stale", file=sys.stderr)
        return 1 if stale else 0
    for key in stale:
        page = args.docs_dir / page_file(key)
        page.write_text(_render(key, page.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"updated {page}" + (f" ({key.partition('#')[2]} options)" if "#" in key else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
