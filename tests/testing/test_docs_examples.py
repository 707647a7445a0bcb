"""The test modules docs/testing.md shows (its ``py`` blocks) pass under pytest, importing only the face.

They are fenced ``py``, not ``python``: ``python`` blocks are run as scripts by tests/test_docs.py, and a test
module needs pytest to run it (the page keeps one ``python`` block with a test, which
tests/gateway/test_docs_testing.py runs in a session of its own).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCKS = re.findall(r"^```py\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
IMPORT = re.compile(r"^\s*(?:from\s+(ishiki_host[\w.]*)\s+import|import\s+(ishiki_host[\w.]*))", re.MULTILINE)


def test_the_page_has_test_modules() -> None:
    assert len(BLOCKS) >= 1


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.splitlines()[0])
def test_the_test_module_passes(pytester: pytest.Pytester, block: str) -> None:
    imported = {first or second for first, second in IMPORT.findall(block)}
    assert imported <= {"ishiki_host", "ishiki_host.testing", "ishiki_host.errors"}
    pytester.makepyfile(test_example=block)
    result = pytester.runpytest("--strict-markers", "--strict-config", "-W", "error")
    result.assert_outcomes(passed=block.count("\ndef test_") + block.count("\nasync def test_"))
