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
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from rp1.experiments import stats
from rp1.experiments.paper import PAPER_MEDIANS, PAPER_T
from rp1.experiments.runs_table import scale_order
from rp1.rundir.files import write_atomically

RETURN = "eval_return"
MODEL_ERROR = "test_model_error_common"
"""The world models' error on their task's test set that the report compares (rp1.dynamics.testset)."""


class TableSpec(NamedTuple):
    """One report table.

    ``columns``: (method, header) per method column; ``comparisons``: (header, method a,
    method b) per t-test column, t > 0 when a is better; ``timesteps``: the paper's timesteps
    (real samples) — the table also has every budget of its runs (:func:`table_timesteps`);
    ``quantity``: what a cell holds per seed, :data:`RETURN` (the best evaluation return at the
    timestep, higher is better) or :data:`MODEL_ERROR` (the test-set error of the last fit by the
    timestep, lower is better; see :data:`QUANTITIES`).
    """

    name: str
    title: str
    timesteps: tuple[int, ...]
    columns: tuple[tuple[str, str], ...]
    comparisons: tuple[tuple[str, str, str], ...]
    quantity: str = RETURN


class Quantity(NamedTuple):
    """What a table's cells hold: ``per_seed(runs, timestep) -> Series by run``, whether lower is
    better, and the sentence that says so in the table's file."""

    per_seed: Callable[[pd.DataFrame, float], pd.Series]
    lower_is_better: bool
    description: str
    digits: Callable[[float], str] = lambda value: number(value)


QUANTITIES: dict[str, Quantity] = {
    RETURN: Quantity(
        stats.best_at,
        False,
        "Median over seeds of each seed's best evaluation return of a trained policy\n"
        "(iteration ≥ 1) among evaluations made with at most that many real samples,",
    ),
    MODEL_ERROR: Quantity(
        lambda runs, timestep: stats.last_at(runs, timestep, MODEL_ERROR),
        True,
        "Median over seeds of the one-step error on the task's fixed test set (`test_model_error_common`;\n"
        "lower is better, and t > 0 when a's error is lower) of each seed's last fit made with at most that many real samples,",
        lambda value: f"{value:.3g}",
    ),
}


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
    TableSpec(
        "table4",
        "Table 4: controls beyond the paper — PCA early stopping against fixed phases of the same length, and the bonus at λ = 0.5",
        (10_000, 100_000),
        (
            ("greedy-matched", "Greedy (matched)"),
            ("rp1-noadapt", "RP1 (λ = 0)"),
            ("rp1-fixed05", "RP1 (λ = 0.5)"),
            ("rp1-nopca-matched", "No EarlyStop (matched)"),
            ("rp1", "RP1"),
        ),
        (
            ("t (λ = 0 vs matched Greedy)", "rp1-noadapt", "greedy-matched"),
            ("t (RP1 vs matched No EarlyStop)", "rp1", "rp1-nopca-matched"),
            ("t (λ = 0.5 vs λ = 0)", "rp1-fixed05", "rp1-noadapt"),
        ),
    ),
    TableSpec(
        "table5",
        "Table 5: controls beyond the paper — phases of the task's matched length against the paper's 3,000 samples, without early stopping",
        (10_000, 100_000),
        (
            ("greedy", "Greedy"),
            ("greedy-matched", "Greedy (matched)"),
            ("rp1-nopca", "No EarlyStop"),
            ("rp1-nopca-matched", "No EarlyStop (matched)"),
        ),
        (
            ("t (matched Greedy vs Greedy)", "greedy-matched", "greedy"),
            ("t (matched No EarlyStop vs No EarlyStop)", "rp1-nopca-matched", "rp1-nopca"),
        ),
    ),
    TableSpec(
        "table_model",
        "World models on common data: one-step error on the task's test set (beyond the paper)",
        (10_000, 100_000),
        (
            ("greedy-matched", "Greedy (matched)"),
            ("rp1-noadapt", "RP1 (λ = 0)"),
            ("rp1-nopca-matched", "No EarlyStop (matched)"),
            ("rp1-fixed05", "RP1 (λ = 0.5)"),
            ("rp1", "RP1"),
        ),
        (
            ("t (RP1 vs λ = 0)", "rp1", "rp1-noadapt"),
            ("t (RP1 vs matched Greedy)", "rp1", "greedy-matched"),
            ("t (λ = 0.5 vs λ = 0)", "rp1-fixed05", "rp1-noadapt"),
            ("t (λ = 0.5 vs matched Greedy)", "rp1-fixed05", "greedy-matched"),
            ("t (No EarlyStop vs Greedy, matched)", "rp1-nopca-matched", "greedy-matched"),
        ),
        MODEL_ERROR,
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
    *(
        "t",
        "p",
        "significant",
        "prob_improvement",
        "pi_low",
        "pi_high",
        "paper_t",
        "paper_significant",
    ),
    "detectable",
)


def table_timesteps(runs: pd.DataFrame, spec: TableSpec) -> dict[tuple[str, str], set[int]]:
    """Per (task, scale) of ``runs``: the paper's timesteps of ``spec`` and every budget of those
    runs (real samples)."""
    budgets = runs.groupby(["task", "scale"])["budget"]
    return {key: set(spec.timesteps) | set(values.astype(int)) for key, values in budgets}


def collect_bests(metrics: pd.DataFrame, spec: TableSpec, tasks: tuple[str, ...]) -> Bests:
    """Per-seed values of ``spec``'s quantity (best returns, :func:`stats.best_at`, or model
    errors, :data:`QUANTITIES`) of every cell of ``spec`` with runs, at
    :func:`table_timesteps`, in table order: timestep, task (``tasks`` order), scale (paper
    first), method (``spec`` order)."""
    methods = [method for method, _ in spec.columns]
    per_seed = QUANTITIES[spec.quantity].per_seed
    runs = metrics[metrics["method"].isin(methods)]
    groups = dict(tuple(runs.groupby(["task", "scale", "method"])))
    timesteps = table_timesteps(runs, spec)
    scales = sorted(runs["scale"].unique(), key=scale_order)
    bests = {}
    for timestep, task, scale, method in itertools.product(
        sorted(set().union(*timesteps.values())), tasks, scales, methods
    ):
        if (task, scale, method) in groups and timestep in timesteps[task, scale]:
            best = per_seed(groups[task, scale, method], timestep).to_numpy(float)
            if len(best):
                bests[task, scale, timestep, method] = best
    return bests


def table_rows(bests: Bests) -> list[Row]:
    """The rows with at least one cell, in table order."""
    return list(dict.fromkeys(key[:3] for key in bests))


def cell_table(bests: Bests, spec: TableSpec) -> pd.DataFrame:
    """One row per cell with runs: :data:`CELL_COLUMNS` (paper_median NaN where the paper has
    none, and for any quantity but returns)."""
    rows = []
    for (task, scale, timestep, method), values in bests.items():
        cell = stats.summarise(values)
        paper = (
            PAPER_MEDIANS.get((task, method, timestep), math.nan)
            if spec.quantity == RETURN
            else math.nan
        )
        rows.append((task, scale, timestep, method, *cell, paper))
    return pd.DataFrame(rows, columns=list(CELL_COLUMNS))


def ttest_table(bests: Bests, spec: TableSpec) -> pd.DataFrame:
    """One row per comparison whose two cells have runs: :data:`TTEST_COLUMNS` (Welch's t-test
    on per-seed values, t and p NaN when a side has fewer than 2 seeds; the probability of
    improvement of a over b, :func:`~rp1.experiments.stats.probability_of_improvement`; the
    smallest difference the test detects at 80 % power, :func:`~rp1.experiments.stats.detectable_difference`).
    Where lower is better (:data:`QUANTITIES`) both read the values negated: t > 0 and PI > 0.5
    when a's values are lower."""
    sign = -1.0 if QUANTITIES[spec.quantity].lower_is_better else 1.0
    rows = []
    for (task, scale, timestep), (header, method_a, method_b) in itertools.product(
        table_rows(bests), spec.comparisons
    ):
        a = bests.get((task, scale, timestep, method_a))
        b = bests.get((task, scale, timestep, method_b))
        if a is None or b is None:
            continue
        a, b = sign * a, sign * b
        test = stats.welch(a, b)
        paper_t, paper_significant = PAPER_T.get(
            (task, timestep, method_a, method_b), (math.nan, None)
        )
        rows.append(
            (task, scale, timestep, header, method_a, method_b, len(a), len(b))
            + (test.t, test.p, test.significant, *stats.probability_of_improvement(a, b))
            + (paper_t, paper_significant, stats.detectable_difference(a, b))
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

FrameRow = Any
"""A row of ``DataFrame.itertuples()``: a namedtuple with the frame's columns as fields."""


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


def t_text(test: FrameRow) -> str:
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


def row_texts(
    found: dict[tuple, FrameRow], row: Row, keys: list[str], text: Callable[[FrameRow], str]
) -> list[str]:
    """``text`` of ``found[(*row, key)]`` for each key (a method or comparison), BLANK if none."""
    return [text(found[(*row, key)]) if (*row, key) in found else BLANK for key in keys]


def render(spec: TableSpec, bests: Bests, cells: pd.DataFrame, tests: pd.DataFrame) -> str:
    """The Markdown file: the paper-layout table, then the IQM table; only rows and method
    columns with runs, and the comparisons of two such columns."""
    cell = {tuple(row[:4]): row for row in cells.itertuples(index=False)}
    test = {tuple(row[:4]): row for row in tests.itertuples(index=False)}
    rows = table_rows(bests)
    digits = QUANTITIES[spec.quantity].digits
    shown = {key[3] for key in bests}
    methods = [method for method, _ in spec.columns if method in shown]
    comparisons = [header for header, a, b in spec.comparisons if {a, b} <= shown]
    medians = [
        [row[0], row[1], f"{row[2]:,}"]
        + row_texts(cell, row, methods, partial(median_text, digits=digits))
        + row_texts(test, row, comparisons, t_text)
        for row in rows
    ]
    iqms = [
        [
            row[0],
            row[1],
            f"{row[2]:,}",
            *row_texts(cell, row, methods, partial(iqm_text, digits=digits)),
        ]
        for row in rows
    ]
    headers = ["task", "scale", "samples", *(h for m, h in spec.columns if m in shown)]
    return "\n".join(
        [
            f"# {spec.title}",
            "",
            QUANTITIES[spec.quantity].description,
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


def table_frames(
    metrics: pd.DataFrame, spec: TableSpec, tasks: tuple[str, ...]
) -> TableFrames | None:
    """The table ``spec`` of ``metrics``; None when no cell has runs."""
    bests = collect_bests(metrics, spec, tasks)
    if not bests:
        return None
    return TableFrames(spec, bests, cell_table(bests, spec), ttest_table(bests, spec))


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
