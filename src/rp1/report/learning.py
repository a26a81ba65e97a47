"""Did anything learn by N? Per task, each method's policy in force at N against its own untrained
policy.

A comparison of two methods on a task where none of them has learned anything compares noise (at
10⁴ samples no method's median best on Ant is more than 2 points above its untrained policy's
return). A task (at a scale) is **learned by N** (real samples) where some method's policy in
force at N returns significantly more than the same run's untrained policy: per run the gain
``return at N − eval_return of iteration 0``, per method a one-sided one-sample t-test of a mean
gain above 0, learned where some method's p is below
:data:`~rp1.report.stats.SIGNIFICANCE_LEVEL`. One decision per task, scale and N, taken on the
return at N (one evaluation of one policy per run, unbiased by how often a method is evaluated),
holds for every measure of returns. The screen is not corrected for the number of methods on
purpose: it errs toward counting a task's comparisons, which are then judged by their own Holm
families, rather than discarding real differences (and a correction would make a task's status
depend on how many methods a report holds). A task without untrained evaluations, or where no
method has two runs with a gain, is not judged (counted as learned).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from rp1.config.methods import MODEL_FREE
from rp1.report.measures import MEASURES, RETURN_AT, RETURN_MEASURES, RunTables, values_at
from rp1.report.significance import rejected

Row = tuple[str, str, int]
"""(task, scale, timestep): a row of a report table; timestep in real samples."""

LEARNING_COLUMNS: tuple[str, ...] = (
    *("metric", "task", "scale", "samples", "untrained", "top_method", "top_median"),
    *("gain_p", "learned"),
)
"""The columns of :func:`learning_table`, one row per return measure (the same decision in each):
the untrained policy's median return, the method whose gain is clearest (smallest p) with its
median return at N, that one-sided p, and whether the task learned."""


def untrained_returns(metrics: pd.DataFrame) -> pd.Series:
    """Each model-based run's iteration-0 ``eval_return`` (its untrained policy's), by run."""
    rows = metrics[(metrics["iteration"] == 0) & (metrics["method"] != MODEL_FREE)]
    return rows.groupby("run")["eval_return"].first()


def gain_p(gains: np.ndarray) -> float:
    """One-sided p of a one-sample t-test that the mean of ``gains`` (NaN entries left out) exceeds
    0 (NaN with fewer than two; 0 or 1 for gains all equal, above or not above 0)."""
    gains = gains[~np.isnan(gains)]
    if len(gains) < 2:
        return math.nan
    if np.all(gains == gains[0]):
        return 0.0 if gains[0] > 0 else 1.0
    return float(scipy_stats.ttest_1samp(gains, 0.0, alternative="greater").pvalue)


def judge_task(cell: pd.DataFrame) -> tuple[str, float, float, bool]:
    """``(method, median return at N, adjusted p, learned)`` for one task's runs ``cell`` (columns
    ``method``, ``value``: return at N, ``gain``, NaN where the run has no untrained evaluation):
    the method of the smallest p; without any test (not judged), the method of the largest median,
    learned."""
    methods = sorted(cell["method"].unique())
    raw = np.array([gain_p(cell.loc[cell["method"] == m, "gain"].to_numpy()) for m in methods])
    if np.all(np.isnan(raw)):
        top = cell.groupby("method")["value"].median().idxmax()
        return str(top), float(cell.loc[cell["method"] == top, "value"].median()), math.nan, True
    best = int(np.nanargmin(raw))
    top = methods[best]
    median = float(cell.loc[cell["method"] == top, "value"].median())
    return top, median, float(raw[best]), rejected(raw[best])


def learning_table(runs: RunTables, rows: list[Row]) -> pd.DataFrame:
    """:data:`LEARNING_COLUMNS` for each of ``rows`` where some method of ``runs`` (any method, not
    only a table's) has a return at N, repeated for every return measure."""
    untrained = untrained_returns(runs.metrics)
    cells = runs.metrics.groupby("run")[["task", "scale", "method"]].first()
    out = []
    for timestep in sorted({row[2] for row in rows}):
        at = values_at(runs, MEASURES[RETURN_AT], timestep).rename("value")
        joined = cells.join(at, how="inner").join(untrained.rename("untrained"), how="left")
        joined["gain"] = joined["value"] - joined["untrained"]
        for task, scale, _ in (row for row in rows if row[2] == timestep):
            cell = joined[(joined["task"] == task) & (joined["scale"] == scale)]
            if cell.empty:
                continue
            base = float(cell["untrained"].median())
            judged = (task, scale, timestep, base, *judge_task(cell))
            out += [(name, *judged) for name in RETURN_MEASURES]
    return pd.DataFrame(out, columns=list(LEARNING_COLUMNS))
