"""bench/_report.py and bench/_table.py: figures, ratios, targets, the common command line, the table."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def test_ratio_of_medians_when_runs_are_not_paired(report: ModuleType) -> None:
    figure = report.Figure("x", "s", [1, 2, 3, 10], baseline="b", baseline_samples=[1, 1, 2])
    assert figure.median == 2.5
    assert figure.spread == (1, 10)
    assert figure.baseline_median == 1
    assert figure.ratio == 2.5
    assert figure.ratio_spread is None


def test_paired_runs_give_the_median_and_spread_of_per_run_ratios(report: ModuleType) -> None:
    figure = report.Figure("x", "s", [2, 4, 9], baseline="b", baseline_samples=[1, 2, 3], paired=True)
    assert figure.run_ratios == (2, 2, 3)
    assert figure.ratio == 2
    assert figure.ratio_spread == (2, 3)


def test_a_figure_without_baseline_has_no_ratio(report: ModuleType) -> None:
    figure = report.Figure("x", "s", [5])
    assert figure.ratio is None
    assert figure.baseline_median is None
    assert figure.spread == (5, 5)


@pytest.mark.parametrize(
    ("target", "ratio", "met"),
    [("<= 2", 2.0, True), ("<= 2", 2.1, False), ("< 3", 3.0, False), (">= 0.8", 0.8, True), ("> 1", 1.0, False),
     ("~1", 5.0, None), ("<=1.25", 1.2, True), ("<= 2e0", 1.0, True)],
)  # fmt: skip
def test_targets_judge_the_ratio(report: ModuleType, target: str, ratio: float, met: bool | None) -> None:
    figure = report.Figure("x", "s", [ratio], baseline="b", baseline_samples=[1.0], target=target)
    assert figure.met is met


def test_without_baseline_a_target_judges_the_median(report: ModuleType) -> None:
    assert report.Figure("x", "s", [0.001, 0.003, 0.002], target="<= 0.0025").met is True
    assert report.Figure("x", "s", [0.001], target="> 0.5").met is False
    assert report.Figure("x", "s", [0.001]).met is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"samples": []}, "no samples"),
        ({"samples": [float("nan")]}, "finite"),
        ({"baseline": "b"}, "both a name and samples"),
        ({"baseline_samples": [1.0]}, "both a name and samples"),
        ({"baseline": "b", "baseline_samples": [1.0, 2.0], "paired": True}, "as many baseline samples"),
        ({"baseline": "b", "baseline_samples": [0.0]}, "median is 0"),
        ({"direction": "sideways"}, "direction"),
        ({"target": "about 2"}, "target 'about 2'"),
    ],
)
def test_bad_figures_are_refused_with_the_reason(report: ModuleType, options: dict, message: str) -> None:
    arguments = {"name": "fig", "unit": "s", "samples": [1.0], **options}
    with pytest.raises(ValueError, match=message):
        report.Figure(**arguments)


def test_a_figure_survives_its_json_form(report: ModuleType) -> None:
    figure = report.Figure("x", "appends/s", [3, 1, 2], baseline="b", baseline_samples=[4, 4, 5], paired=True,
                           direction="higher", target=">= 0.3", notes="n")  # fmt: skip
    data = json.loads(json.dumps(figure.to_dict()))
    assert report.Figure.from_dict(data) == figure
    assert data["median"] == 2
    assert data["ratio"] == figure.ratio
    assert (data["ratio_min"], data["ratio_max"]) == figure.ratio_spread
    assert data["baseline"]["median"] == 4
    assert data["met"] is True


def test_time_calls_runs_warmup_then_runs_of_number_calls(report: ModuleType) -> None:
    calls = []
    samples = report.time_calls(lambda: calls.append(1), 4, number=3, warmup=2)
    assert len(calls) == 2 + 4 * 3
    assert len(samples) == 4
    assert all(s >= 0 for s in samples)


@pytest.mark.anyio
async def test_time_calls_async_awaits_every_call(report: ModuleType) -> None:
    calls = []

    async def call() -> None:
        calls.append(1)

    samples = await report.time_calls_async(call, 3, number=2, warmup=1)
    assert len(calls) == 1 + 3 * 2
    assert len(samples) == 3


def _measure(bench: Any) -> None:
    bench.note("context line")
    bench.add("fast", "s", [0.002, 0.001, 0.003], baseline="slow", baseline_samples=[0.001] * 3, target="<= 1.5")
    bench.add("rate", "items/s", [900.0, 1100.0, 1000.0], direction="higher")


def test_run_prints_the_table_and_writes_json(
    report: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "deep" / "out.json"
    assert report.run(_measure, "Doc line.\n\nMore.", ["--quick", "--json", str(out)], name="demo") == 0
    printed = capsys.readouterr().out
    assert "demo (quick run" in printed
    assert "context line" in printed
    assert "2.00 ms" in printed
    assert "1.00k items/s" in printed
    assert "MISSED  demo: fast: ratio 2.00x, target <= 1.5" in printed
    data = json.loads(out.read_text())
    assert data["script"] == "demo"
    assert data["quick"] is True
    assert data["notes"] == ["context line"]
    assert [f["name"] for f in data["figures"]] == ["fast", "rate"]
    assert data["figures"][0]["ratio"] == 2.0
    assert data["figures"][0]["met"] is False


def test_runs_come_from_the_mode_or_from_the_option(report: ModuleType) -> None:
    seen = []

    def measure(bench: Any) -> None:
        seen.append(bench.runs(quick=3, full=7))
        bench.add("x", "s", [1.0])

    for argv in ([], ["--quick"], ["--runs", "4"], ["--quick", "--runs", "5"]):
        assert report.run(measure, None, argv, name="n") == 0
    assert seen == [7, 3, 4, 5]


def test_runs_must_be_positive(report: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        report.run(_measure, None, ["--runs", "0"], name="n")
    assert exc.value.code == 2
    assert "expected a positive whole number, got '0'" in capsys.readouterr().err


def test_script_options_join_the_common_ones(report: ModuleType) -> None:
    seen = []

    def measure(bench: Any) -> None:
        seen.append(bench.args.dir)
        bench.add("x", "s", [1.0])

    assert report.run(measure, None, ["--dir", "/x"], arguments=lambda p: p.add_argument("--dir"), name="n") == 0
    assert seen == ["/x"]


def test_an_async_measure_runs_under_anyio(report: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    async def measure(bench: Any) -> None:
        samples = await report.time_calls_async(_noop, 2)
        bench.add("awaited", "s", samples)

    assert report.run(measure, None, [], name="n") == 0
    assert "awaited" in capsys.readouterr().out


async def _noop() -> None:
    return None


def test_a_measure_that_reports_nothing_fails(report: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert report.run(lambda bench: None, None, [], name="empty") == 2
    assert "empty: reported no figures" in capsys.readouterr().err


def test_a_figure_is_reported_once_per_baseline(report: ModuleType) -> None:
    def measure(bench: Any) -> None:
        bench.add("x", "s", [2.0], baseline="a", baseline_samples=[1.0])
        bench.add("x", "s", [2.0], baseline="b", baseline_samples=[1.0])
        bench.add("x", "s", [2.0], baseline="a", baseline_samples=[1.0])

    with pytest.raises(ValueError, match="figure 'x' against 'a' reported twice"):
        report.run(measure, None, [], name="n")


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [(0.0012, "s", "1.20 ms"), (3.5e-8, "s", "35.0 ns"), (12.0, "s", "12.0 s"), (41_000, "/s", "41.0k/s"),
     (12_700, "appends/s", "12.7k appends/s"), (950, "appends/s", "950 appends/s"), (3 * 1024**2, "B", "3.00 MiB"),
     (2792.1, "tokens", "2,792 tokens"), (0.5, "", "0.500"), (0.0747, "", "0.0747")],
)  # fmt: skip
def test_quantities_scale_to_the_unit(table: ModuleType, value: float, unit: str, text: str) -> None:
    assert table.quantity(value, unit) == text


def test_the_table_names_a_script_once_and_aligns_columns(report: ModuleType, table: ModuleType) -> None:
    one = report.Figure("a", "s", [0.001, 0.002], baseline="base", baseline_samples=[0.001, 0.001], paired=True,
                        target="<= 3")  # fmt: skip
    two = report.Figure("bb", "s", [0.5], target="~1")
    lines = table.render_table([("s1", one), ("s1", two), ("s2", two)]).splitlines()
    assert lines[0].split() == ["script", "figure", "median", "min–max", "baseline", "ratio", "ratio", "min–max",
                                "target", "result"]  # fmt: skip
    assert lines[2].split() == ["s1", "a", "1.50", "ms", "1.00–2.00", "base:", "1.00", "ms", "1.50x", "1.00–2.00",
                                "<=", "3", "ok"]  # fmt: skip
    assert lines[3].split() == ["bb", "500", "ms", "1", "run", "~1", "(info)"]
    assert lines[4].startswith("s2")
    assert len({len(line) for line in lines[:2]}) == 1
