"""A report table's results from runs (:class:`TableFrames`): its cells
(:mod:`~rp1.report.tables.cells`), its comparisons judged
(:mod:`~rp1.report.tables.ttests`) and whether each of its rows learned
(:func:`~rp1.report.learning.learning_table`).
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from rp1.report.learning import learning_table
from rp1.report.measures import RETURN, RunTables, run_tables
from rp1.report.tables.cells import Bests, cell_table, collect_values, table_rows
from rp1.report.tables.specs import TableSpec
from rp1.report.tables.ttests import judged, ttest_table


class TableFrames(NamedTuple):
    """What one table is made of: per-seed values
    (:func:`~rp1.report.tables.cells.collect_values`), cells
    (:func:`~rp1.report.tables.cells.cell_table`), comparisons
    (:func:`~rp1.report.tables.ttests.ttest_table`,
    :func:`~rp1.report.tables.ttests.judged`) and whether each of its rows learned
    (:func:`~rp1.report.learning.learning_table`)."""

    spec: TableSpec
    bests: Bests
    cells: pd.DataFrame
    tests: pd.DataFrame
    learning: pd.DataFrame


def table_frames(
    runs: RunTables | pd.DataFrame, spec: TableSpec, tasks: tuple[str, ...]
) -> TableFrames | None:
    """The table ``spec`` of ``runs`` (a metrics table alone: runs without a grid,
    :func:`~rp1.report.measures.run_tables`); None when no cell has runs. Whether a row
    learned is judged on every run of ``runs``, not only the table's methods."""
    if isinstance(runs, pd.DataFrame):
        runs = run_tables(runs)
    found = collect_values(runs, spec, tasks)
    bests = found.values
    if not bests:
        return None
    rows = table_rows(bests)
    learning = learning_table(runs, rows) if spec.quantity == RETURN else learning_table(runs, [])
    tests = judged(ttest_table(found, spec), learning)
    return TableFrames(spec, bests, cell_table(bests), tests, learning)


def comparable(frames: TableFrames) -> bool:
    """Whether a table can compare anything: two or more of its methods have runs, and some cell
    has two or more seeds."""
    methods = {key[4] for key in frames.bests}
    return len(methods) >= 2 and max(len(values) for values in frames.bests.values()) >= 2
