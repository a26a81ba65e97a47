"""What a report table's cells hold per seed: the measures, and the run tables they read.

A table compares methods on one *quantity*: returns (:data:`RETURN`) or the world models' test-set
error (:data:`MODEL_ERROR`). Returns come in four measures: the paper's best evaluation return
(kept, as the paper's metric) and the three of :mod:`rp1.report.fair` that do not reward
evaluation count; the test-set error in one. Each measure reads one table of :class:`RunTables`
and gives, at a timestep (real samples), one value per run that counts there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd

from rp1.report import fair, stats
from rp1.report.significance import error_margin, return_margin

RETURN = "eval_return"
MODEL_ERROR = "test_model_error_common"
"""The world models' error on their task's test set that the report compares (rp1.dynamics.testset)."""


class RunTables(NamedTuple):
    """The runs a report reads: ``metrics`` (one row per ``metrics.csv`` row,
    :class:`~rp1.report.runs_table.LoadedRuns`) and ``grid`` (every run on its evaluation
    grid, :func:`rp1.report.fair.policy_grid`)."""

    metrics: pd.DataFrame
    grid: pd.DataFrame


def run_tables(metrics: pd.DataFrame, evaluations: pd.DataFrame | None = None) -> RunTables:
    """:class:`RunTables` of ``metrics`` and the grid table ``evaluations`` of the same runs (None:
    no run has a grid; every run is read from ``metrics.csv``)."""
    return RunTables(metrics, fair.policy_grid(metrics, evaluations))


def number(value: float, decimals: int = 2) -> str:
    """A return or t-statistic for a Markdown cell (``decimals`` decimals; unicode minus)."""
    return f"{value:.{decimals}f}".replace("-", "−")


class Measure(NamedTuple):
    """One measure: ``name`` (``claims.csv``'s ``metric``), ``label`` (a column header),
    ``table`` (the field of :class:`RunTables` it reads), ``per_seed(table, timestep) -> Series
    by run`` (sorted by run), whether lower is better, the sentence that defines it in a table's
    file, how to write its values, and ``margin(task, samples, b) -> float``, the equivalence margin
    of a difference a − b at ``samples`` real samples with per-seed values ``b``
    (:mod:`rp1.report.significance`)."""

    name: str
    label: str
    table: str
    per_seed: Callable[[pd.DataFrame, float], pd.Series]
    lower_is_better: bool
    description: str
    digits: Callable[[float], str]
    margin: Callable[[str, int, np.ndarray], float]


def values_at(runs: RunTables, measure: Measure, timestep: float) -> pd.Series:
    """``measure``'s value of every run of ``runs`` that counts at ``timestep``, by run (sorted)."""
    return measure.per_seed(getattr(runs, measure.table), timestep)


def task_margin(task: str, samples: int, b: np.ndarray) -> float:
    """:func:`~rp1.report.significance.return_margin` of ``task`` at ``samples`` (``b`` unused:
    a return's margin is the task's)."""
    return return_margin(task, samples)


def seeds_margin(task: str, samples: int, b: np.ndarray) -> float:
    """:func:`~rp1.report.significance.error_margin` of ``b`` (``task``, ``samples`` unused)."""
    return error_margin(b)


PAPER_BEST, RETURN_AT, GRID_BEST, AUC, TEST_ERROR = (
    "paper_best",
    "return_at",
    "grid_best",
    "auc",
    "test_error",
)

MEASURES: dict[str, Measure] = {
    PAPER_BEST: Measure(
        PAPER_BEST,
        "paper's best",
        "metrics",
        stats.best_at,
        False,
        "The paper's metric: median over seeds of each seed's best evaluation return of a trained "
        "policy (iteration ≥ 1) among the evaluations of `metrics.csv` made with at most that many "
        "real samples — one per outer iteration, so a method of short phases has more of them.",
        number,
        task_margin,
    ),
    RETURN_AT: Measure(
        RETURN_AT,
        "return at N",
        "grid",
        fair.return_at,
        False,
        "Median over seeds of the return of the policy in force at that many real samples (the "
        "one that collected the N-th sample: the grid's evaluation there, or the run's last "
        "`metrics.csv` evaluation before N where it has no grid).",
        number,
        task_margin,
    ),
    GRID_BEST: Measure(
        GRID_BEST,
        "best over the grid",
        "grid",
        fair.grid_best,
        False,
        "Median over seeds of the best return of the policies in force at the grid points up to "
        "that many real samples: every method the same number of evaluations.",
        number,
        task_margin,
    ),
    AUC: Measure(
        AUC,
        "area under the curve",
        "grid",
        fair.area_under_curve,
        False,
        "Median over seeds of the mean return of the policies in force at the grid points up to "
        "that many real samples (the area under the curve, in return units).",
        number,
        task_margin,
    ),
    TEST_ERROR: Measure(
        TEST_ERROR,
        "test-set error",
        "metrics",
        lambda metrics, timestep: stats.last_at(metrics, timestep, MODEL_ERROR),
        True,
        "Median over seeds of the one-step error on the task's fixed test set "
        "(`test_model_error_common`; lower is better, and t > 0 when a's error is lower) of each "
        "seed's last fit made with at most that many real samples.",
        lambda value: f"{value:.3g}",
        seeds_margin,
    ),
}
"""Every measure, by name."""

QUANTITY_MEASURES: dict[str, tuple[str, ...]] = {
    RETURN: (PAPER_BEST, RETURN_AT, GRID_BEST, AUC),
    MODEL_ERROR: (TEST_ERROR,),
}
"""The measures of a table of each quantity, the first the one its ``<name>.csv`` holds."""

RETURN_MEASURES = QUANTITY_MEASURES[RETURN]
