"""The paper's Tables 1–3 from the tidy metrics table: CSV (tidy) and Markdown (paper layout).

Each cell is the median best evaluation return at a timestep over seeds (SPEC §8), with its IQR,
the number of seeds, the paper's value, and — beyond the paper — the interquartile mean with a
95 % bootstrap confidence interval. Comparisons are Welch t-statistics, ``*`` where p < 0.05.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from rp1.experiments import stats
from rp1.experiments.paper import PAPER_MEDIANS, PAPER_T


class TableSpec(NamedTuple):
    """One report table.

    ``columns``: (method, header) per method column; ``comparisons``: (header, method a,
    method b) per t-test column, t > 0 when a is better; ``timesteps``: real samples.
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
        "Table 2: which variance the bonus uses, at 10⁵ samples",
        (100_000,),
        (("rp1-statevar", "State"), ("rp1", "Reward")),
        (("t (Reward vs State)", "rp1", "rp1-statevar"),),
    ),
    TableSpec(
        "table3",
        "Table 3: ablations at 10⁵ samples",
        (100_000,),
        (("rp1-noadapt", "RP1 (λ = 0)"), ("rp1-nopca", "RP1 (No EarlyStop)"), ("rp1", "RP1")),
        (
            ("t (RP1 vs λ = 0)", "rp1", "rp1-noadapt"),
            ("t (RP1 vs No EarlyStop)", "rp1", "rp1-nopca"),
        ),
    ),
)

Bests = dict[tuple[str, str, int], np.ndarray]
"""(task, method, timestep) -> per-seed best evaluation returns."""


def collect_bests(metrics: pd.DataFrame, spec: TableSpec, tasks: tuple[str, ...]) -> Bests:
    """Per-seed best returns (see :func:`stats.best_at`) for every cell of ``spec``."""
    groups = dict(tuple(metrics.groupby(["task", "method"])))
    empty = metrics.iloc[:0]
    return {
        (task, method, timestep): stats.best_at(
            groups.get((task, method), empty), timestep
        ).to_numpy(float)
        for timestep in spec.timesteps
        for task in tasks
        for method, _ in spec.columns
    }


def cell_table(bests: Bests) -> pd.DataFrame:
    """One row per cell: ``task, samples, method, n_seeds, median, q25, q75, iqm, iqm_ci_low,
    iqm_ci_high, paper_median`` (returns; paper_median empty where the paper has none)."""
    rows = []
    for (task, method, timestep), values in bests.items():
        cell = stats.summarise(values)
        rows.append(
            {
                "task": task,
                "samples": timestep,
                "method": method,
                "n_seeds": cell.n,
                "median": cell.median,
                "q25": cell.q25,
                "q75": cell.q75,
                "iqm": cell.iqm,
                "iqm_ci_low": cell.iqm_low,
                "iqm_ci_high": cell.iqm_high,
                "paper_median": PAPER_MEDIANS.get((task, method, timestep), math.nan),
            }
        )
    return pd.DataFrame(rows)


def ttest_table(bests: Bests, spec: TableSpec, tasks: tuple[str, ...]) -> pd.DataFrame:
    """One row per comparison: ``task, samples, comparison, method_a, method_b, n_a, n_b, t, p,
    significant, paper_t, paper_significant`` (Welch's t-test on per-seed bests)."""
    rows = []
    for timestep in spec.timesteps:
        for task in tasks:
            for header, method_a, method_b in spec.comparisons:
                a, b = bests[task, method_a, timestep], bests[task, method_b, timestep]
                test = stats.welch(a, b)
                paper_t, paper_significant = PAPER_T.get(
                    (task, timestep, method_a, method_b), (math.nan, None)
                )
                rows.append(
                    {
                        "task": task,
                        "samples": timestep,
                        "comparison": header,
                        "method_a": method_a,
                        "method_b": method_b,
                        "n_a": len(a),
                        "n_b": len(b),
                        "t": test.t,
                        "p": test.p,
                        "significant": test.significant,
                        "paper_t": paper_t,
                        "paper_significant": paper_significant,
                    }
                )
    return pd.DataFrame(rows)


def number(value: float) -> str:
    """A return or t-statistic for a Markdown cell (2 decimals; unicode minus)."""
    return f"{value:.2f}".replace("-", "−")


def seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def paper_note(value: float) -> str:
    return "" if math.isnan(value) else f"; paper {number(value)}"


def median_text(cell: tuple) -> str:
    """``median [q25, q75] (n seeds; paper x)``, or ``— (0 seeds; paper x)``."""
    note = f"({seeds(cell.n_seeds)}{paper_note(cell.paper_median)})"
    if cell.n_seeds == 0:
        return f"— {note}"
    return f"{number(cell.median)} [{number(cell.q25)}, {number(cell.q75)}] {note}"


def iqm_text(cell: tuple) -> str:
    """``iqm [ci low, ci high] (n seeds)``; no interval below 2 seeds."""
    if cell.n_seeds == 0:
        return "— (0 seeds)"
    if cell.n_seeds == 1:
        return f"{number(cell.iqm)} (1 seed; no CI)"
    interval = f"[{number(cell.iqm_ci_low)}, {number(cell.iqm_ci_high)}]"
    return f"{number(cell.iqm)} {interval} ({seeds(cell.n_seeds)})"


def star(significant: bool | None) -> str:
    return "*" if significant else ""


def t_text(test: tuple) -> str:
    """``t*`` (``*`` where p < 0.05) with the paper's value, or why there is none."""
    paper = (
        ""
        if math.isnan(test.paper_t)
        else f" (paper {number(test.paper_t)}{star(test.paper_significant)})"
    )
    if math.isnan(test.t):
        return f"— (n = {test.n_a} vs {test.n_b}; needs ≥ 2 each){paper}"
    return f"{number(test.t)}{star(test.significant)} (p = {test.p:.3g}){paper}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def render(
    spec: TableSpec, tasks: tuple[str, ...], cells: pd.DataFrame, tests: pd.DataFrame
) -> str:
    """The Markdown file: the paper-layout table, then the IQM table."""
    cell = {(row.task, row.samples, row.method): row for row in cells.itertuples(index=False)}
    test = {(row.task, row.samples, row.comparison): row for row in tests.itertuples(index=False)}
    keys = [(task, timestep) for timestep in spec.timesteps for task in tasks]
    headers = [header for _, header in spec.columns]
    medians = [
        [task, f"{timestep:,}"]
        + [median_text(cell[task, timestep, method]) for method, _ in spec.columns]
        + [t_text(test[task, timestep, header]) for header, _, _ in spec.comparisons]
        for task, timestep in keys
    ]
    iqms = [
        [task, f"{timestep:,}"]
        + [iqm_text(cell[task, timestep, method]) for method, _ in spec.columns]
        for task, timestep in keys
    ]
    return "\n".join(
        [
            f"# {spec.title}",
            "",
            "Median over seeds of each seed's best evaluation return among evaluations made",
            "with at most that many real samples, [25th, 75th percentile]; a run counts at a",
            "timestep only if it reached that many samples. t: Welch's t-statistic, `*` where",
            "p < 0.05. See index.md for the definitions.",
            "",
            markdown_table(
                ["task", "samples", *headers, *(h for h, _, _ in spec.comparisons)], medians
            ),
            "",
            "## Interquartile mean, 95 % percentile-bootstrap CI (beyond the paper)",
            "",
            markdown_table(["task", "samples", *headers], iqms),
            "",
        ]
    )


def write_table(
    metrics: pd.DataFrame, spec: TableSpec, tasks: tuple[str, ...], out: Path
) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` (cells) and ``<name>_ttests.csv``; return their paths."""
    bests = collect_bests(metrics, spec, tasks)
    cells, tests = cell_table(bests), ttest_table(bests, spec, tasks)
    paths = [out / f"{spec.name}.md", out / f"{spec.name}.csv", out / f"{spec.name}_ttests.csv"]
    paths[0].write_text(render(spec, tasks, cells, tests), encoding="utf-8")
    cells.to_csv(paths[1], index=False)
    tests.to_csv(paths[2], index=False)
    return paths
