"""A report table as Markdown (``<name>.md``), in the paper's layout: per measure, a table of
medians with the comparisons' columns, then one of interquartile means; only rows and method
columns with runs (``—`` for a cell without runs in a row that has some).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

from rp1.report.learning import Row
from rp1.report.markdown import BLANK, FrameRow, markdown_table, p_text
from rp1.report.measures import Measure, number
from rp1.report.significance import SIGNIFICANCE_LEVEL, rejected
from rp1.report.tables.cells import table_rows
from rp1.report.tables.results import TableFrames
from rp1.report.tables.specs import table_measures


def seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def paper_note(value: float) -> str:
    return "" if math.isnan(value) else f"; paper {number(value)}"


def median_text(cell: FrameRow, digits: Callable[[float], str] = number) -> str:
    """``median [q25, q75] (n seeds; paper x)``, values written by ``digits``."""
    note = f"({seeds(cell.n_seeds)}{paper_note(cell.paper_median)})"
    return f"{digits(cell.median)} [{digits(cell.q25)}, {digits(cell.q75)}] {note}"


def iqm_text(cell: FrameRow, digits: Callable[[float], str] = number) -> str:
    """``iqm [ci low, ci high] (n seeds)``, values written by ``digits``; no interval below 2 seeds."""
    if cell.n_seeds == 1:
        return f"{digits(cell.iqm)} (1 seed; no CI)"
    interval = f"[{digits(cell.iqm_ci_low)}, {digits(cell.iqm_ci_high)}]"
    return f"{digits(cell.iqm)} {interval} ({seeds(cell.n_seeds)})"


def star(significant: bool | None) -> str:
    return "*" if significant else ""


def t_text(test: FrameRow, digits: Callable[[float], str] = number) -> str:
    """``t*`` (``*`` where the Holm-adjusted p is below the level), p and the adjusted p, the
    difference of means with its interval (written by ``digits``), the probability of improvement
    with its interval, and the paper's t; or why there is no test; and ``nothing learned`` on a
    task where nothing was."""
    paper = (
        ""
        if math.isnan(test.paper_t)
        else f" (paper {number(test.paper_t)}{star(test.paper_significant)})"
    )
    learned = "" if test.learned else "; nothing learned"
    if math.isnan(test.t):
        return f"— (n = {test.n_a} vs {test.n_b}; needs ≥ 2 each){paper}{learned}"
    difference = f"Δ {digits(test.diff)} [{digits(test.diff_low)}, {digits(test.diff_high)}]"
    improvement = f"PI {test.prob_improvement:.2f} [{test.pi_low:.2f}, {test.pi_high:.2f}]"
    ps = f"p = {test.p:.3g}, Holm {p_text(test.p_holm)}"
    return (
        f"{number(test.t)}{star(rejected(test.p_holm))} ({ps}; {difference}; {improvement})"
        f"{paper}{learned}"
    )


def row_texts(
    found: dict[tuple, FrameRow], row: Row, keys: list[str], text: Callable[[FrameRow], str]
) -> list[str]:
    """``text`` of ``found[(*row, key)]`` for each key (a method or comparison), BLANK if none."""
    return [text(found[(*row, key)]) if (*row, key) in found else BLANK for key in keys]


IQM_HEADING = "95 % percentile-bootstrap CI (beyond the paper)"


def heading(measure: Measure) -> str:
    """A measure's label as a heading (first letter capital)."""
    return measure.label[0].upper() + measure.label[1:]


def measure_section(frames: TableFrames, measure: Measure) -> str:
    """The Markdown of one measure of a table: its definition, the paper-layout table of medians
    and comparisons, then the IQM table; only rows and method columns with runs, and the
    comparisons of two such columns."""
    spec, bests = frames.spec, {k: v for k, v in frames.bests.items() if k[0] == measure.name}
    cell = {tuple(row[1:5]): row for row in frames.cells.itertuples(index=False)
            if row.metric == measure.name}  # fmt: skip
    test = {tuple(row[1:5]): row for row in frames.tests.itertuples(index=False)
            if row.metric == measure.name}  # fmt: skip
    rows = table_rows(bests)
    shown = {key[4] for key in bests}
    columns = [(method, header) for method, header in spec.columns() if method in shown]
    methods = [method for method, _ in columns]
    comparisons = [c.header for c in spec.comparisons if {c.a, c.b} <= shown]
    medians = [
        [row[0], row[1], f"{row[2]:,}"]
        + row_texts(cell, row, methods, partial(median_text, digits=measure.digits))
        + row_texts(test, row, comparisons, partial(t_text, digits=measure.digits))
        for row in rows
    ]
    iqms = [
        [row[0], row[1], f"{row[2]:,}"]
        + row_texts(cell, row, methods, partial(iqm_text, digits=measure.digits))
        for row in rows
    ]
    headers = ["task", "scale", "samples", *(header for _, header in columns)]
    return "\n".join(
        [
            f"## {heading(measure)}",
            "",
            measure.description,
            "",
            markdown_table([*headers, *comparisons], medians),
            "",
            f"### {heading(measure)}: interquartile mean, {IQM_HEADING}",
            "",
            markdown_table(headers, iqms),
            "",
        ]
    )


PREAMBLE = (
    "Cells: median [25th, 75th percentile] over seeds; a run counts at a timestep only if it "
    "reached that many samples. Rows: the paper's sample counts and every budget of the task's "
    "runs, where some method has runs; `—`: no runs. t: Welch's t-statistic, `*` where the "
    "Holm-adjusted p of its family (this table's comparisons at that measure, scale and sample "
    f"count, on every task that learned) is below {SIGNIFICANCE_LEVEL}; Δ: the difference of means "
    "a − b with its 95 % bootstrap interval; PI: probability of improvement P(a > b) = U / (n·m) of "
    "the Mann–Whitney test, with its 95 % bootstrap interval (a: the first method the comparison "
    "names); nothing learned: no method's policy in force at N was shown to beat its own untrained "
    "policy. Verdicts: claims.md. See index.md for the definitions."
)
"""The paragraph under a table's title."""


def render(frames: TableFrames) -> str:
    """The Markdown file: what its numbers are, then a section per measure
    (:func:`measure_section`)."""
    measures = [m for m in table_measures(frames.spec) if any(k[0] == m.name for k in frames.bests)]
    return "\n".join(
        [
            f"# {frames.spec.title}",
            "",
            PREAMBLE,
            "",
            *(measure_section(frames, measure) for measure in measures),
        ]
    )
