"""The engine docs list every option with the schema's default, and their tables are not stale."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ishiki_host.engines import docs

DOCS = Path(__file__).resolve().parents[2] / "docs" / "engines"


def test_every_engine_page_exists() -> None:
    for name in ("toolcall-json.md", "toolcall-xml.md", "willingness.md", "jev.md", "standard.md"):
        assert (DOCS / name).read_text(encoding="utf-8").startswith("# ")


@pytest.mark.parametrize("page", sorted(docs.PAGES))
def test_page_lists_every_option_with_its_default(page: str) -> None:
    text = (DOCS / docs.page_file(page)).read_text(encoding="utf-8")
    for key, prop in docs.PAGES[page]["properties"].items():
        default = json.dumps(prop["default"], ensure_ascii=False)
        assert f"| `{key}` |" in text
        row = next(line for line in text.splitlines() if line.startswith(f"| `{key}` |"))
        assert f"`{default}`" in row


def test_tables_are_fresh() -> None:
    assert docs.stale_pages(DOCS) == []
    assert docs.main(["--check", str(DOCS)]) == 0


def test_a_stale_table_is_found_and_rewritten(tmp_path: Path) -> None:
    for page in docs.PAGES:
        shutil.copy(DOCS / docs.page_file(page), tmp_path / docs.page_file(page))
    page = tmp_path / "jev.md"
    page.write_text(page.read_text(encoding="utf-8").replace("| `30000` |", "| `5000` |"), encoding="utf-8")
    assert docs.stale_pages(tmp_path) == ["jev.md"]
    check = subprocess.run(
        [sys.executable, "-m", "ishiki_host.engines.docs", "--check", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 1
    assert "jev.md: the options table is stale" in check.stderr
    assert docs.main([str(tmp_path)]) == 0
    assert docs.stale_pages(tmp_path) == []


def test_one_table_of_a_page_with_several_is_found_stale_and_rewritten(tmp_path: Path) -> None:
    for page in docs.PAGES:
        shutil.copy(DOCS / docs.page_file(page), tmp_path / docs.page_file(page))
    page = tmp_path / "standard.md"
    page.write_text(page.read_text(encoding="utf-8").replace("| `0.75` |", "| `0.9` |"), encoding="utf-8")
    assert docs.stale_pages(tmp_path) == ["standard.md#context"]
    check = subprocess.run(
        [sys.executable, "-m", "ishiki_host.engines.docs", "--check", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "standard.md: the context options table is stale" in check.stderr
    assert docs.main([str(tmp_path)]) == 0
    assert page.read_text(encoding="utf-8") == (DOCS / "standard.md").read_text(encoding="utf-8")


def test_a_page_without_markers_is_an_error(tmp_path: Path) -> None:
    for page in docs.PAGES:
        (tmp_path / docs.page_file(page)).write_text("# no table here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="markers"):
        docs.render_page("# nothing\n", docs.PAGES["jev.md"])
    assert docs.main(["--check", str(tmp_path)]) == 2
