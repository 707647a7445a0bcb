"""The SVG charts: pure functions, escaped labels, no inline style, empty and one-point series."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from ishiki_dashboard.charts import Series, bar_chart, format_value, line_chart

CHARTS = (line_chart, bar_chart)


@pytest.mark.parametrize("chart", CHARTS)
def test_an_empty_chart_says_no_data(chart: object) -> None:
    for svg in (chart([], labels=[], title="Calls"), chart([Series("a", ())], labels=[], title="Calls")):  # type: ignore[operator]
        assert "no data" in svg
        ET.fromstring(svg)


@pytest.mark.parametrize("chart", CHARTS)
def test_a_single_point_is_drawn_in_the_middle(chart: object) -> None:
    svg = chart([Series("fake:m", (3.0,))], labels=["12:00"], title="Calls", width=400)  # type: ignore[operator]
    root = ET.fromstring(svg)
    shapes = [e for e in root.iter() if e.tag.endswith(("circle", "rect")) and e.find("{*}title") is not None]
    assert len(shapes) == 1
    assert "fake:m, 12:00: 3" in "".join(shapes[0].itertext())


@pytest.mark.parametrize("chart", CHARTS)
def test_labels_and_names_are_escaped_and_there_is_no_inline_style(chart: object) -> None:
    svg = chart([Series("<script>", (1.0, 2.0))], labels=["a&b", "<i>"], title="T<", unit="tok")  # type: ignore[operator]
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert "a&amp;b" in svg
    assert "style=" not in svg
    ET.fromstring(svg)


def test_a_line_has_one_point_per_label_and_values_must_match_labels() -> None:
    svg = line_chart([Series("x", (1.0, 5.0, 2.0))], labels=["a", "b", "c"], title="t")
    assert svg.count("<circle") == 3
    assert "<polyline" in svg
    with pytest.raises(ValueError, match="2 values for 3 labels"):
        line_chart([Series("x", (1.0, 2.0))], labels=["a", "b", "c"], title="t")


def test_values_are_short() -> None:
    assert [format_value(v) for v in (0, 7, 2.25, 12.5, 1234, 2_000_000, 0.0042)] == [
        "0", "7", "2.25", "12.5", "1.2k", "2M", "0.0042",
    ]  # fmt: skip
    assert format_value(3, "USD") == "3 USD"
