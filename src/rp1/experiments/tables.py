"""The paper's Tables 1–3 from the tidy metrics table: CSV (tidy) and Markdown (paper layout).

Each cell is the median best evaluation return at a timestep over seeds (SPEC §8), with its IQR,
the number of seeds, the paper's value, and — beyond the paper — the interquartile mean with a
95 % bootstrap confidence interval. Comparisons are Welch t-statistics, ``*`` where p < 0.05, and
the probability of improvement ``P(a > b)`` with its 95 % bootstrap interval.
A table has a row per (task, scale, timestep) and a column per method with runs there; cells
without runs are left out (CSV) or blank (``—``, Markdown).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from rp1.experiments import stats
from rp1.experiments.paper import PAPER_MEDIANS, PAPER_T
from rp1.experiments.runs_table import scale_order
from rp1.runs import write_atomically


class TableSpec(NamedTuple):
    """One report table.

    ``columns``: (method, header) per method column; ``comparisons``: (header, method a,
    method b) per t-test column, t > 0 when a is better; ``timesteps``: the paper's timesteps
    (real samples) — the table also has every budget of its runs (:func:`table_timesteps`).
    """

    name: str
    title: str
    timesteps: tuple[int, ...]
    columns: tuple[tuple[str, str], ...]
    comparisons: tuple[tuple[str, str, str], ...]


TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "table1",
        "Table 1: median best evaluation return, RP1 vs Greedy (T1) and vs V+R (T2)",
        (10_000, 100_000),
        (("greedy", "Greedy"), ("vr", "V+R"), ("rp1", "RP1")),
        (("T1", "rp1", "greedy"), ("T2", "rp1", "vr")),
    ),
    TableSpec(
        "table2",
        "Table 2: which variance the bonus uses (the paper's at 10⁵ samples)",
        (100_000,),
        (("rp1-statevar", "State"), ("rp1", "Reward")),
        (("t (Reward vs State)", "rp1", "rp1-statevar"),),
    ),
    TableSpec(
        "table3",
        "Table 3: ablations (the paper's at 10⁵ samples)",
        (100_000,),
        (("rp1-noadapt", "RP1 (λ = 0)"), ("rp1-nopca", "RP1 (No EarlyStop)"), ("rp1", "RP1")),
        (
            ("t (RP1 vs λ = 0)", "rp1", "rp1-noadapt"),
            ("t (RP1 vs No EarlyStop)", "rp1", "rp1-nopca"),
        ),
    ),
)

Row = tuple[str, str, int]
"""(task, scale, timestep): a row of a table; timestep in real samples."""

Bests = dict[tuple[str, str, int, str], np.ndarray]
"""(task, scale, timestep, method) -> per-seed best evaluation returns, only cells with runs."""

CELL_COLUMNS: tuple[str, ...] = (
    *("task", "scale", "samples", "method", "n_seeds", "median", "q25", "q75"),
    *("iqm", "iqm_ci_low", "iqm_ci_high", "paper_median"),
)
TTEST_COLUMNS: tuple[str, ...] = (
    *("task", "scale", "samples", "comparison", "method_a", "method_b", "n_a", "n_b"),
    *("t", "p", "significant", "prob_improvement", "pi_low", "pi_high", "paper_t", "paper_significant"),
)


def table_timesteps(runs: pd.DataFrame, spec: TableSpec) -> dict[tuple[str, str], set[int]]:
    """Per (task, scale) of ``runs``: the paper's timesteps of ``spec`` and every budget of those
    runs (real samples)."""
    budgets = runs.groupby(["task", "scale"])["budget"]
    return {key: set(spec.timesteps) | set(values.astype(int)) for key, values in budgets}


def collect_bests(metrics: pd.DataFrame, spec: TableSpec, tasks: tuple[str, ...]) -> Bests:
    """Per-seed best returns (see :func:`stats.best_at`) of every cell of ``spec`` with runs, at
    :func:`table_timesteps`, in table order: timestep, task (``tasks`` order), scale (paper
    first), method (``spec`` order)."""
    methods = [method for method, _ in spec.columns]
    runs = metrics[metrics["method"].isin(methods)]
    groups = dict(tuple(runs.groupby(["task", "scale", "method"])))
    timesteps = table_timesteps(runs, spec)
    scales = sorted(runs["scale"].unique(), key=scale_order)
    bests = {}
    for timestep, task, scale, method in itertools.product(
        sorted(set().union(*timesteps.values())), tasks, scales, methods
    ):
        if (task, scale, method) in groups and timestep in timesteps[task, scale]:
            best = stats.best_at(groups[task, scale, method], timestep).to_numpy(float)
            if len(best):
                bests[task, scale, timestep, method] = best
    return bests


def table_rows(bests: Bests) -> list[Row]:
    """The rows with at least one cell, in table order."""
    return list(dict.fromkeys(key[:3] for key in bests))


def cell_table(bests: Bests) -> pd.DataFrame:
    """One row per cell with runs: :data:`CELL_COLUMNS` (returns; paper_median NaN where the paper
    has none)."""
    rows = []
    for (task, scale, timestep, method), values in bests.items():
        cell = stats.summarise(values)
        paper = PAPER_MEDIANS.get((task, method, timestep), math.nan)
        rows.append((task, scale, timestep, method, *cell, paper))
    return pd.DataFrame(rows, columns=list(CELL_COLUMNS))


def ttest_table(bests: Bests, spec: TableSpec) -> pd.DataFrame:
    """One row per comparison whose two cells have runs: :data:`TTEST_COLUMNS` (Welch's t-test
    on per-seed bests, t and p NaN when a side has fewer than 2 seeds; the probability of
    improvement of a over b, :func:`~rp1.experiments.stats.probability_of_improvement`)."""
    rows = []
    for (task, scale, timestep), (header, method_a, method_b) in itertools.product(
        table_rows(bests), spec.comparisons
    ):
        a = bests.get((task, scale, timestep, method_a))
        b = bests.get((task, scale, timestep, method_b))
        if a is None or b is None:
            continue
        test = stats.welch(a, b)
        paper_t, paper_significant = PAPER_T.get(
            (task, timestep, method_a, method_b), (math.nan, None)
        )
        rows.append(
            (task, scale, timestep, header, method_a, method_b, len(a), len(b))
            + (test.t, test.p, test.significant, *stats.probability_of_improvement(a, b))
            + (paper_t, paper_significant)
        )
    return pd.DataFrame(rows, columns=list(TTEST_COLUMNS))


def number(value: float, decimals: int = 2) -> str:
    """A return or t-statistic for a Markdown cell (``decimals`` decimals; unicode minus)."""
    return f"{value:.{decimals}f}".replace("-", "−")


def seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def paper_note(value: float) -> str:
    return "" if math.isnan(value) else f"; paper {number(value)}"


BLANK = "—"
"""A Markdown cell without runs, in a row or column that has some."""


def median_text(cell: tuple) -> str:
    """``median [q25, q75] (n seeds; paper x)``."""
    note = f"({seeds(cell.n_seeds)}{paper_note(cell.paper_median)})"
    return f"{number(cell.median)} [{number(cell.q25)}, {number(cell.q75)}] {note}"


def iqm_text(cell: tuple) -> str:
    """``iqm [ci low, ci high] (n seeds)``; no interval below 2 seeds."""
    if cell.n_seeds == 1:
        return f"{number(cell.iqm)} (1 seed; no CI)"
    interval = f"[{number(cell.iqm_ci_low)}, {number(cell.iqm_ci_high)}]"
    return f"{number(cell.iqm)} {interval} ({seeds(cell.n_seeds)})"


def star(significant: bool | None) -> str:
    return "*" if significant else ""


def t_text(test: tuple) -> str:
    """``t*`` (``*`` where p < 0.05), p, the probability of improvement with its interval, and the
    paper's t; or why there is no test."""
    paper = (
        ""
        if math.isnan(test.paper_t)
        else f" (paper {number(test.paper_t)}{star(test.paper_significant)})"
    )
    if math.isnan(test.t):
        return f"— (n = {test.n_a} vs {test.n_b}; needs ≥ 2 each){paper}"
    improvement = f"PI {test.prob_improvement:.2f} [{test.pi_low:.2f}, {test.pi_high:.2f}]"
    return f"{number(test.t)}{star(test.significant)} (p = {test.p:.3g}; {improvement}){paper}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def row_texts(found: dict, row: Row, keys: list[str], text) -> list[str]:
    """``text`` of ``found[(*row, key)]`` for each key (a method or comparison), BLANK if none."""
    return [text(found[(*row, key)]) if (*row, key) in found else BLANK for key in keys]


def render(spec: TableSpec, bests: Bests, cells: pd.DataFrame, tests: pd.DataFrame) -> str:
    """The Markdown file: the paper-layout table, then the IQM table; only rows and method
    columns with runs, and the comparisons of two such columns."""
    cell = {tuple(row[:4]): row for row in cells.itertuples(index=False)}
    test = {tuple(row[:4]): row for row in tests.itertuples(index=False)}
    rows = table_rows(bests)
    shown = {key[3] for key in bests}
    methods = [method for method, _ in spec.columns if method in shown]
    comparisons = [header for header, a, b in spec.comparisons if {a, b} <= shown]
    medians = [
        [row[0], row[1], f"{row[2]:,}"]
        + row_texts(cell, row, methods, median_text)
        + row_texts(test, row, comparisons, t_text)
        for row in rows
    ]
    iqms = [
        [row[0], row[1], f"{row[2]:,}", *row_texts(cell, row, methods, iqm_text)] for row in rows
    ]
    headers = ["task", "scale", "samples", *(h for m, h in spec.columns if m in shown)]
    return "\n".join(
        [
            f"# {spec.title}",
            "",
            "Median over seeds of each seed's best evaluation return of a trained policy",
            "(iteration ≥ 1) among evaluations made with at most that many real samples,",
            "[25th, 75th percentile]; a run counts at a timestep only if it reached that many",
            "samples. Rows: the paper's sample counts and every budget of the task's runs, where",
            "some method has runs; `—`: no runs. t: Welch's t-statistic, `*` where p < 0.05;",
            "PI: probability of improvement P(a > b) = U / (n·m) of the Mann–Whitney test, with its",
            "95 % bootstrap interval (a: the first method the comparison names).",
            "See index.md for the definitions.",
            "",
            markdown_table([*headers, *comparisons], medians),
            "",
            "## Interquartile mean, 95 % percentile-bootstrap CI (beyond the paper)",
            "",
            markdown_table(headers, iqms),
            "",
        ]
    )


class TableFrames(NamedTuple):
    """What one table is made of: per-seed bests, cells (:func:`cell_table`) and comparisons
    (:func:`ttest_table`)."""

    spec: TableSpec
    bests: Bests
    cells: pd.DataFrame
    tests: pd.DataFrame


def table_frames(metrics: pd.DataFrame, spec: TableSpec, tasks: tuple[str, ...]) -> TableFrames | None:
    """The table ``spec`` of ``metrics``; None when no cell has runs."""
    bests = collect_bests(metrics, spec, tasks)
    if not bests:
        return None
    return TableFrames(spec, bests, cell_table(bests), ttest_table(bests, spec))


def write_table_frames(frames: TableFrames | None, out: Path) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` (cells) and ``<name>_ttests.csv``; return their paths
    (none for a table without runs)."""
    if frames is None:
        return []
    spec, bests, cells, tests = frames
    paths = [out / f"{spec.name}.md", out / f"{spec.name}.csv", out / f"{spec.name}_ttests.csv"]
    write_atomically(paths[0], render(spec, bests, cells, tests).encode(), "report file")
    write_atomically(paths[1], cells.to_csv(index=False).encode(), "report file")
    write_atomically(paths[2], tests.to_csv(index=False).encode(), "report file")
    return paths
