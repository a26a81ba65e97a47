"""A report table's cells: each measure's per-seed values in each cell of a table
(:data:`~rp1.report.tables.specs.TABLES`) with runs, and their statistics.

A cell is a measure's values at a timestep over seeds (one run each) of one method on one task
and scale; its statistics are their median with its IQR, the number of seeds, the paper's value
(its best, on its tasks), and — beyond the paper — the interquartile mean with a 95 % bootstrap
confidence interval (:func:`~rp1.report.stats.summarise`). A table has a row per (task,
scale, timestep) and a column per method; cells without runs are left out.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from rp1.report import stats
from rp1.report.learning import Row, untrained_returns
from rp1.report.measures import PAPER_BEST, RunTables, values_at
from rp1.report.paper import PAPER_MEDIANS
from rp1.report.runs_table import scale_order
from rp1.report.tables.specs import TableSpec, table_measures

Bests = dict[tuple[str, str, str, int, str], np.ndarray]
"""(measure, task, scale, timestep, method) -> per-seed values (sorted by run), only cells with
runs."""


class CellValues(NamedTuple):
    """A table's per-seed values (:data:`Bests`) and, under the same keys and in the same order,
    each of those runs' untrained return (its iteration-0 ``eval_return``; NaN where it has none:
    a model-free run)."""

    values: Bests
    untrained: Bests


CELL_COLUMNS: tuple[str, ...] = (
    *("task", "scale", "samples", "method", "n_seeds", "median", "q25", "q75"),
    *("iqm", "iqm_ci_low", "iqm_ci_high", "paper_median"),
)
"""The columns of ``<name>.csv``, the cells of a table's first measure (the paper's best for
returns)."""
MEASURE_CELL_COLUMNS: tuple[str, ...] = ("metric", *CELL_COLUMNS)
"""The columns of ``<name>_fair.csv`` and of
:attr:`~rp1.report.tables.results.TableFrames.cells`: the measure first."""


def table_timesteps(runs: pd.DataFrame, spec: TableSpec) -> dict[tuple[str, str], set[int]]:
    """Per (task, scale) of ``runs``: the paper's timesteps of ``spec`` and every budget of those
    runs (real samples)."""
    budgets = runs.groupby(["task", "scale"])["budget"]
    return {key: set(spec.timesteps) | set(values.astype(int)) for key, values in budgets}


def of_methods(runs: RunTables, methods: list[str]) -> RunTables:
    """The runs of ``methods`` only."""
    return RunTables(*(table[table["method"].isin(methods)] for table in runs))


def collect_values(runs: RunTables, spec: TableSpec, tasks: tuple[str, ...]) -> CellValues:
    """Per-seed values of every measure of ``spec``
    (:func:`~rp1.report.tables.specs.table_measures`) in every cell of ``spec`` with runs, at
    :func:`table_timesteps`, in table order: measure, timestep, task (``tasks`` order), scale
    (paper first), method (``spec`` order); with each run's untrained return beside its value
    (:class:`CellValues`)."""
    methods = [method for method, _ in spec.columns()]
    runs = of_methods(runs, methods)
    cell_of = runs.metrics.groupby("run")[["task", "scale", "method"]].first()
    cell_of = cell_of.join(untrained_returns(runs.metrics).rename("untrained"), how="left")
    timesteps = table_timesteps(runs.metrics, spec)
    scales = sorted(runs.metrics["scale"].unique(), key=scale_order)
    found = CellValues({}, {})
    for measure, timestep in itertools.product(
        table_measures(spec), sorted(set().union(*timesteps.values()))
    ):
        values = cell_of.join(values_at(runs, measure, timestep).rename("value"), how="inner")
        cells = dict(list(values.groupby(["task", "scale", "method"])))
        for task, scale, method in itertools.product(tasks, scales, methods):
            if (task, scale, method) in cells and timestep in timesteps[task, scale]:
                key = (measure.name, task, scale, timestep, method)
                cell = cells[task, scale, method]
                found.values[key] = cell["value"].to_numpy(float)
                found.untrained[key] = cell["untrained"].to_numpy(float)
    return found


def table_rows(bests: Bests) -> list[Row]:
    """The (task, scale, timestep) rows with at least one cell, in table order."""
    return list(dict.fromkeys(key[1:4] for key in bests))


def paper_median(measure: str, task: str, method: str, timestep: int) -> float:
    """The paper's median of a cell: its best return
    (:data:`~rp1.report.paper.PAPER_MEDIANS`), for the paper's measure only; NaN elsewhere."""
    if measure != PAPER_BEST:
        return math.nan
    return PAPER_MEDIANS.get((task, method, timestep), math.nan)


def cell_table(bests: Bests) -> pd.DataFrame:
    """One row per cell with runs: :data:`MEASURE_CELL_COLUMNS` (paper_median NaN where the paper
    has none, and for any measure but the paper's)."""
    rows = [
        (*key, *stats.summarise(values), paper_median(key[0], key[1], key[4], key[3]))
        for key, values in bests.items()
    ]
    return pd.DataFrame(rows, columns=list(MEASURE_CELL_COLUMNS))
