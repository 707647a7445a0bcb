"""Every bench script reports through bench/_report.py, takes the common options and has its docs section.

Running the scripts is ``make bench``'s job (they take seconds to minutes); here each is imported and asked for
its ``--help``, which is fast and deterministic.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
DOCS = BENCH.parent / "docs" / "benchmarks.md"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def load(path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import a script by path under a name of its own, as ``python bench/<name>.py`` would find its imports."""
    name = f"bench_script_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_there_are_scripts() -> None:
    assert len(SCRIPTS) >= 15


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_script_reports_through_report_and_takes_the_common_options(
    path: Path, report: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load(path, monkeypatch)
    assert callable(module.main)
    assert module.run is report.run, f"{path.name} must report through _report.run"
    with pytest.raises(SystemExit) as exc:
        module.main(["--help"])
    assert exc.value.code == 0
    usage = capsys.readouterr().out
    for option in ("--quick", "--runs N", "--json PATH"):
        assert option in usage, f"{path.name} --help lacks {option}"


def section_titles() -> list[str]:
    return re.findall(r"^### `bench/(\w+)\.py`", DOCS.read_text(encoding="utf-8"), flags=re.MULTILINE)


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_script_has_a_section_in_the_docs(path: Path) -> None:
    assert path.stem in section_titles(), f"docs/benchmarks.md has no '### `bench/{path.name}`' section"


def test_every_docs_section_has_its_script() -> None:
    assert set(section_titles()) <= {p.stem for p in SCRIPTS}


def test_the_docs_template_runs_as_a_bench_script(scratch_bench: Path) -> None:
    """The skeleton in "Adding a benchmark" is a working script: run it for real with --quick --json."""
    match = re.search(r"^```py\n(.*?)^```", DOCS.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    assert match is not None, "docs/benchmarks.md lost its ```py script template"
    script = scratch_bench / "example.py"
    script.write_text(match.group(1), encoding="utf-8")
    out = scratch_bench / "out.json"
    command = [sys.executable, str(script), "--quick", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["script"] == "example"
    assert data["figures"]
    assert all(f["baseline"] is not None for f in data["figures"])
