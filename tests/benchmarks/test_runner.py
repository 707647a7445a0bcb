"""``python -m bench`` (bench/_runner.py): real script subprocesses, one table, results files, exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

WriteScript = Callable[[str, str], Path]

GOOD = """
    import sys
    from _report import run

    def measure(bench):
        bench.note("a good script")
        runs = bench.runs(quick=3, full=5)
        bench.add("fast path", "s", [0.002, 0.001, 0.003][:runs], baseline="slow path",
                  baseline_samples=[0.001, 0.001, 0.001][:runs], paired=True, target="<= 1.5")
        bench.add("fixed cost", "s", [0.5] * runs, target="<= 1")

    def main(argv=None):
        return run(measure, "A good script.", argv)

    if __name__ == "__main__":
        sys.exit(main())
"""
CRASH = """
    raise RuntimeError("boom in the measurement")
"""
SILENT = """
    print("an old-style script: prints, writes no report")
"""
HANG = """
    import signal
    signal.pause()
"""


def run_bench(runner: ModuleType, folder: Path, results: Path, *options: str) -> int:
    code: int = runner.main(["--dir", str(folder), "--results", str(results), *options])
    return code


def test_discover_skips_private_modules_and_checks_names(runner: ModuleType, write_script: WriteScript) -> None:
    a = write_script("a", GOOD)
    b = write_script("b", GOOD)
    assert runner.discover(a.parent) == [a, b]
    assert runner.discover(a.parent, ["b.py"]) == [b]
    with pytest.raises(ValueError, match=r"no bench script named nope in .* \(have: a, b\)"):
        runner.discover(a.parent, ["a", "nope"])


def test_one_table_results_files_and_failure_on_a_crash(
    runner: ModuleType, write_script: WriteScript, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_script("good", GOOD)
    folder = write_script("crash", CRASH).parent
    assert run_bench(runner, folder, tmp_path / "results", "--quick") == 1
    out = capsys.readouterr().out
    assert ["good", "fast", "path"] in [line.split()[:3] for line in out.splitlines()]
    assert "slow path: 1.00 ms" in out
    assert "MISSED  good: fast path: ratio 2.00x, target <= 1.5" in out
    assert "CRASHED crash: exited 1" in out
    assert "RuntimeError: boom in the measurement" in out
    saved = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert len(saved) == 2
    assert "latest.json" in saved
    latest = json.loads((tmp_path / "results" / "latest.json").read_text())
    assert latest == json.loads((tmp_path / "results" / saved[0]).read_text())
    assert latest["quick"] is True
    assert latest["scripts"]["crash"]["status"] == "failed"
    assert latest["scripts"]["good"]["status"] == "ok"
    assert [f["name"] for f in latest["scripts"]["good"]["report"]["figures"]] == ["fast path", "fixed cost"]
    assert latest["machine"]["cpus"] >= 1


def test_a_missed_target_does_not_fail_the_run(
    runner: ModuleType, write_script: WriteScript, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_script("crash", CRASH)
    folder = write_script("good", GOOD).parent
    assert run_bench(runner, folder, tmp_path, "--only", "good") == 0
    out = capsys.readouterr().out
    assert "1 target(s) missed: informative, the exit status stays 0" in out
    assert "crash" not in out


def test_runs_are_passed_to_every_script(runner: ModuleType, write_script: WriteScript, tmp_path: Path) -> None:
    folder = write_script("good", GOOD).parent
    assert run_bench(runner, folder, tmp_path, "--runs", "2") == 0
    figures = json.loads((tmp_path / "latest.json").read_text())["scripts"]["good"]["report"]["figures"]
    assert [len(f["samples"]) for f in figures] == [2, 2]


def test_a_script_without_a_report_is_a_failure_with_a_hint(
    runner: ModuleType, write_script: WriteScript, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_script("old_style", SILENT).parent
    assert run_bench(runner, folder, tmp_path) == 1
    assert "without writing its --json report (does it report through bench/_report.py?)" in capsys.readouterr().out


def test_a_hung_script_is_ended_at_its_timeout(
    runner: ModuleType, write_script: WriteScript, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_script("hang", HANG).parent
    assert run_bench(runner, folder, tmp_path, "--timeout", "1") == 1
    assert "CRASHED hang: timed out" in capsys.readouterr().out
    assert json.loads((tmp_path / "latest.json").read_text())["scripts"]["hang"]["status"] == "timeout"


def test_compare_prints_the_change_per_figure(
    runner: ModuleType, write_script: WriteScript, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_script("good", GOOD).parent
    assert run_bench(runner, folder, tmp_path / "before") == 0
    previous = tmp_path / "before" / "latest.json"
    assert run_bench(runner, folder, tmp_path / "after", "--compare", str(previous)) == 0
    out = capsys.readouterr().out
    assert f"change against {previous}" in out
    rows = out.split(f"change against {previous}")[1].splitlines()
    assert ["good", "fast", "path", "slow", "path", "2.00x", "2.00x", "+0.0%", "within", "previous", "spread"] in [
        row.split() for row in rows
    ]


def test_compare_reads_better_and_worse_by_direction(runner: ModuleType, report: ModuleType) -> None:
    def results(samples: list[float]) -> dict:
        figures = [
            report.Figure("t", "s", samples, baseline="b", baseline_samples=[1.0, 1.0, 1.0]).to_dict(),
            report.Figure("r", "/s", samples, direction="higher").to_dict(),
        ]
        return {"scripts": {"x": {"status": "ok", "report": {"figures": figures}}}}

    before = results([2.0, 2.1, 1.9])
    before["scripts"]["not_run_now"] = before["scripts"]["x"]
    table = runner.compare(before, results([3.0, 3.1, 2.9])).splitlines()
    assert [line.split()[-1] for line in table[2:]] == ["worse", "better"]
    assert "+50.0%" in table[2]


def test_bad_options_exit_2_with_a_clear_message(
    runner: ModuleType, write_script: WriteScript, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_script("good", GOOD).parent
    assert run_bench(runner, folder, tmp_path, "--only", "nope") == 2
    assert "bench: no bench script named nope" in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("[1, 2]")
    assert run_bench(runner, folder, tmp_path, "--compare", str(tmp_path / "junk.json")) == 2
    assert "not a bench results file" in capsys.readouterr().err
    assert not (tmp_path / "latest.json").exists()


def test_python_dash_m_bench_runs_the_runner(bench_dir: Path, write_script: WriteScript, tmp_path: Path) -> None:
    folder = write_script("good", GOOD).parent
    command = [sys.executable, "-m", "bench", "--dir", str(folder), "--results", str(tmp_path), "--quick"]
    done = subprocess.run(command, cwd=bench_dir.parent, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "fast path" in done.stdout
    assert "[ 1/1] good ... ok" in done.stderr
