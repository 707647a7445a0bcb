"""The worked examples of ``docs/plugins/``: their code blocks are what ``ishiki new plugin`` writes, verbatim.

A page marks a block with ``<!-- scaffold: KIND NAME PATH -->`` on the line before its fence; ``sync_page``
replaces the block's content with the file PATH of ``render_plugin(KIND, NAME)``. Run
``python -m ishiki_host.scaffold.docs docs/plugins`` (``make docs``); a test fails when a page is stale, and
the scaffolds themselves are built, linted and their tests run by the test suite.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from ishiki_host.errors import ScaffoldError
from ishiki_host.scaffold._plugin import render_plugin

__all__ = ["COMMAND", "main", "sync_page", "write_examples"]

COMMAND = "python -m ishiki_host.scaffold.docs docs/plugins"
_BLOCK = re.compile(r"^<!-- scaffold: (\w+) ([a-z0-9_-]+) (\S+) -->\n```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def sync_page(text: str) -> str:
    """``text`` with every marked block set to the scaffold file it names."""

    def block(match: re.Match[str]) -> str:
        kind, name, path, language = match.group(1, 2, 3, 4)
        files = render_plugin(kind, name)
        if path not in files:
            raise ScaffoldError(f"`ishiki new plugin {kind} {name}` writes no {path} (it writes {', '.join(files)})")
        return f"<!-- scaffold: {kind} {name} {path} -->\n```{language}\n{files[path]}```"

    return _BLOCK.sub(block, text)


def write_examples(directory: Path) -> list[Path]:
    """Bring every page of ``directory`` up to date; returns the pages that changed."""
    changed = []
    for page in sorted(directory.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        synced = sync_page(text)
        if synced != text:
            page.write_text(synced, encoding="utf-8")
            changed.append(page)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ishiki_host.scaffold.docs DIR``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: {COMMAND}", file=sys.stderr)
        return 2
    for page in write_examples(Path(args[0])):
        print(f"updated {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
