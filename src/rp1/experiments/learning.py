"""Did anything learn by N? Per task, the best method's median return against the untrained
policy's.

A comparison of two methods on a task where neither, nor any other, has learned anything compares
noise (at 10⁴ samples no method's median best on Ant is more than 2 points above its untrained
policy's return). A task is **learned by N** (real samples), for one measure of returns
(:data:`~rp1.experiments.measures.RETURN_MEASURES`), where some method's median of that measure at
N exceeds the median return of the untrained policy by more than the task's margin
(:func:`~rp1.experiments.significance.return_margin`; 0 off the paper's tasks). The untrained
policy's return is the ``eval_return`` of iteration 0 of the task's model-based runs (of that
scale), the median over runs; a task without such rows is not judged (counted as learned).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rp1.config.methods import MODEL_FREE
from rp1.experiments.measures import MEASURES, RETURN_MEASURES, RunTables, values_at

Row = tuple[str, str, int]
"""(task, scale, timestep): a row of a report table; timestep in real samples."""

LEARNING_COLUMNS: tuple[str, ...] = (
    *("metric", "task", "scale", "samples", "untrained", "top_method", "top_median"),
    *("margin", "learned"),
)
"""The columns of :func:`learning_table`: the measure, the row, the untrained policy's median
return, the method of the largest median and that median, the task's margin and whether the
task learned (``top_median − untrained > margin``)."""


def untrained_medians(metrics: pd.DataFrame) -> dict[tuple[str, str], float]:
    """Per (task, scale): the median over model-based runs of their iteration-0 ``eval_return``
    (the untrained policy's, evaluated before any training)."""
    rows = metrics[(metrics["iteration"] == 0) & (metrics["method"] != MODEL_FREE)]
    return rows.groupby(["task", "scale"])["eval_return"].median().to_dict()


def method_medians(
    runs: RunTables, measure: str, timestep: int
) -> dict[tuple[str, str], pd.Series]:
    """Per (task, scale) of the runs in ``runs``: each method's median over its runs of
    ``measure`` at ``timestep`` (runs that count there only), a Series indexed by method."""
    values = values_at(runs, MEASURES[measure], timestep).rename("value")
    cells = runs.metrics.groupby("run")[["task", "scale", "method"]].first()
    joined = cells.join(values, how="inner")
    return {
        (task, scale): group.groupby("method")["value"].median()
        for (task, scale), group in joined.groupby(["task", "scale"])
    }


def learned(top_median: float, untrained: float, margin: float) -> bool:
    """Whether the best median beats the untrained policy's by more than ``margin`` (0 where NaN);
    True where the untrained policy's return is unknown (NaN: not judged)."""
    if math.isnan(untrained):
        return True
    return bool(top_median - untrained > (0.0 if math.isnan(margin) else margin))


def learning_table(runs: RunTables, rows: list[Row]) -> pd.DataFrame:
    """:data:`LEARNING_COLUMNS` for each return measure and each of ``rows`` where some method of
    ``runs`` (any method, not only a table's) has a value."""
    untrained = untrained_medians(runs.metrics)
    out = []
    for name in RETURN_MEASURES:
        for timestep in sorted({row[2] for row in rows}):
            medians = method_medians(runs, name, timestep)
            for task, scale, _ in (row for row in rows if row[2] == timestep):
                if (task, scale) not in medians:
                    continue
                cell = medians[task, scale]
                base = untrained.get((task, scale), math.nan)
                margin = MEASURES[name].margin(task, np.array([]))
                top = float(cell.max())
                out.append(
                    (name, task, scale, timestep, base, str(cell.idxmax()), top, margin)
                    + (learned(top, base, margin),)
                )
    return pd.DataFrame(out, columns=list(LEARNING_COLUMNS))
