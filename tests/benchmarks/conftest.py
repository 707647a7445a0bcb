"""Fixtures for the bench/ tests: the shared modules imported as the scripts import them, and scratch bench dirs."""

from __future__ import annotations

import importlib
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SHARED = ("_report.py", "_table.py")

WriteScript = Callable[[str, str], Path]


@pytest.fixture
def bench_dir() -> Path:
    """The repository's bench/ folder."""
    return BENCH


def _shared(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))  # the scripts' own view: ``import _report`` from their folder
    return importlib.import_module(name)


@pytest.fixture
def report(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``bench/_report.py``."""
    return _shared("_report", monkeypatch)


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``bench/_table.py``."""
    return _shared("_table", monkeypatch)


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``bench/_runner.py`` (what ``python -m bench`` runs)."""
    return _shared("_runner", monkeypatch)


@pytest.fixture
def scratch_bench(tmp_path: Path) -> Path:
    """An empty bench folder holding only the shared modules, for scripts a test writes."""
    folder = tmp_path / "bench"
    folder.mkdir()
    for name in SHARED:
        shutil.copy(BENCH / name, folder / name)
    return folder


@pytest.fixture
def write_script(scratch_bench: Path) -> WriteScript:
    """Write ``bench/<name>.py`` in the scratch folder from dedented source."""

    def write(name: str, source: str) -> Path:
        path = scratch_bench / f"{name}.py"
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return path

    return write
