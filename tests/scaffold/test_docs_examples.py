"""The worked examples of ``docs/plugins/`` show what ``ishiki new plugin`` writes, and stay current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ishiki_host.errors import ScaffoldError
from ishiki_host.scaffold import KINDS, plugin_names, render_plugin
from ishiki_host.scaffold.docs import main, sync_page, write_examples

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXAMPLES = {
    "context": "recent",
    "wakeup": "chance",
    "toolcall": "sampling",
    "extension": "greeter",
    "channel": "chatroom",
    "provider": "jsonapi",
    "host": "board",
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_has_a_current_worked_example(kind: str) -> None:
    page = (DOCS / "plugins" / f"{kind}.md").read_text(encoding="utf-8")
    assert sync_page(page) == page, f"docs/plugins/{kind}.md is stale: run `make docs`"
    names = plugin_names(kind, EXAMPLES[kind])
    shown = set(re.findall(rf"<!-- scaffold: {kind} {names.name} (\S+) -->", page))
    assert shown == {"pyproject.toml", f"{names.package}/{names.kind.module}.py", f"tests/test_{names.identifier}.py"}
    assert f"$ ishiki new plugin {kind} {names.name}\nwrote {names.distribution}: {names.service}" in page
    assert f"[{kind}](plugins/{kind}.md)" in (DOCS / "plugins.md").read_text(encoding="utf-8")


def test_stale_blocks_are_rewritten(tmp_path: Path) -> None:
    page = tmp_path / "x.md"
    page.write_text("intro\n<!-- scaffold: extension greeter pyproject.toml -->\n```toml\nold\n```\nend\n")
    assert main([str(tmp_path)]) == 0
    pyproject = render_plugin("extension", "greeter")["pyproject.toml"]
    assert (
        page.read_text()
        == f"intro\n<!-- scaffold: extension greeter pyproject.toml -->\n```toml\n{pyproject}```\nend\n"
    )
    assert write_examples(tmp_path) == []


def test_a_marker_naming_no_file_is_an_error() -> None:
    with pytest.raises(ScaffoldError, match=r"writes no nowhere\.py"):
        sync_page("<!-- scaffold: extension greeter nowhere.py -->\n```python\n```\n")
