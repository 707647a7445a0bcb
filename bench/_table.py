"""Text rendering of bench figures: scaled numbers, the aligned table, the missed-target markers.

Times print in s/ms/µs/ns, bytes in B/KiB/MiB/GiB and rates (a unit ending in ``/s``) with k/M/G, each scaled to
the figure's median; other units print as they are. Numbers keep about three significant digits.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _report import Figure

SCALES = {
    "s": ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")),
    "B": ((1024.0**3, "GiB"), (1024.0**2, "MiB"), (1024.0, "KiB"), (1.0, "B")),
}
RATE_SCALES = ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def _pick(scales: Sequence[tuple[float, str]], reference: float) -> tuple[float, str]:
    """The largest scale that ``reference`` reaches (the smallest one for tiny values)."""
    return next((scale for scale in scales if abs(reference) >= scale[0]), scales[-1])


def _scale(unit: str, reference: float) -> tuple[float, str]:
    """The divisor and the suffix printed after numbers of ``unit`` near ``reference``."""
    if unit in SCALES:
        factor, label = _pick(SCALES[unit], reference)
        return factor, f" {label}"
    if unit.endswith("/s"):  # a rate: "41.0k/s", "12.7k appends/s"
        factor, prefix = _pick(RATE_SCALES, reference)
        return factor, prefix + (unit if unit.startswith("/") else f" {unit}")
    return 1.0, f" {unit}" if unit else ""


def number(value: float) -> str:
    """About three significant digits, thousands separated."""
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1 or size == 0:
        return f"{value:.2f}"
    return f"{value:.3f}" if size >= 0.1 else f"{value:.3g}"


def quantity(value: float, unit: str) -> str:
    """``value`` in ``unit``, scaled (``0.0012`` s is ``1.20 ms``, ``41000`` /s is ``41.0k/s``)."""
    factor, suffix = _scale(unit, value)
    return f"{number(value / factor)}{suffix}"


def _span(low: float, high: float, factor: float = 1.0) -> str:
    return f"{number(low / factor)}–{number(high / factor)}"


HEADER = ("script", "figure", "median", "min–max", "baseline", "ratio", "ratio min–max", "target", "result")
NUMERIC = {2, 3, 5, 6}


def _row(script: str, figure: Figure) -> list[str]:
    factor, _ = _scale(figure.unit, figure.median)
    spread = _span(*figure.spread, factor) if len(figure.samples) > 1 else "1 run"
    base = figure.baseline_median
    baseline = "" if base is None else f"{figure.baseline}: {quantity(base, figure.unit)}"
    ratio = "" if figure.ratio is None else f"{number(figure.ratio)}x"
    ratio_spread = "" if figure.ratio_spread is None or len(figure.samples) == 1 else _span(*figure.ratio_spread)
    verdict = {None: "", True: "ok", False: "MISSED"}[figure.met]
    if figure.met is None and figure.target is not None:
        verdict = "(info)"
    return [script, figure.name, quantity(figure.median, figure.unit), spread, baseline, ratio, ratio_spread,
            figure.target or "", verdict]  # fmt: skip


def render_table(rows: Sequence[tuple[str, Figure]], *, with_script: bool = True) -> str:
    """One aligned table of ``(script, figure)`` rows; a script is named on its first row only."""
    cells, previous = [], None
    for script, figure in rows:
        cells.append(_row(script if script != previous else "", figure))
        previous = script
    if not with_script:
        return aligned(HEADER[1:], [row[1:] for row in cells], {n - 1 for n in NUMERIC})
    return aligned(HEADER, cells, NUMERIC)


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Collection[int]) -> str:
    """Columns padded to their widest cell (``numeric`` ones right-aligned), the header underlined."""
    table = [list(header), *(list(row) for row in rows)]
    widths = [max(len(row[c]) for row in table) for c in range(len(header))]
    lines = []
    for row in table:
        padded = (row[c].rjust(w) if c in numeric else row[c].ljust(w) for c, w in enumerate(widths))
        lines.append("  ".join(padded).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def missed_line(script: str, figure: Figure) -> str:
    """The marker printed under the table for a figure that missed its target."""
    if figure.ratio is not None:
        value = f"ratio {number(figure.ratio)}x"
    else:
        value = f"median {quantity(figure.median, figure.unit)}"
    return f"MISSED  {script}: {figure.name}: {value}, target {figure.target}"
