"""Metrics that do not reward evaluation count: every run scored at the same sample counts.

The paper's metric, the best evaluation return up to N samples (:func:`rp1.report.stats.best_at`),
takes the maximum over one evaluation per outer iteration, so a method of short phases (RP1: 13–36
evaluations by 10⁴ samples) maximises over more noisy draws than one of 3,000-sample phases
(Greedy: 3), and the maximum of more draws is larger even between equally good policies. The
metrics here score every run on one grid of sample counts ``g = every, 2·every, …``:

- the **policy in force** at ``g`` is the one that collected the ``g``-th real sample. A run with
  the evaluation grid (``evaluations.csv``, :mod:`rp1.agents.grid`) evaluated exactly that policy
  at ``g`` on fresh episodes; its spacing is the run's ``eval.every``. A run without it (made
  before the grid, or with ``eval.every`` 0) is read on a grid of :data:`DEFAULT_EVERY` samples
  from ``metrics.csv``: the policy in force at ``g`` is that of its last row with ``samples < g``
  (a model-based row evaluates the policy that then collects ``phase_samples`` real samples from
  ``samples``; a model-free row's policy collects the next batch after its ``samples``), and its
  return is that row's ``eval_return``. The row of iteration 0 (the untrained policy) counts: it is
  the policy in force during the first phase. One value per run per point either way.
- **return at N**: the return of the policy in force at the last grid point ``≤ N`` (``N`` itself
  when ``N`` is a multiple of the spacing, as the paper's sample counts are);
- **best over the grid**: the largest of the returns at the grid points ``≤ N`` (every run the
  same number of evaluations, ``N // every``);
- **area under the curve**: their mean, in return units (the area under the step curve of the
  policy in force, divided by the samples it spans).

A run counts at ``N`` only if it collected at least ``N`` real samples (its ``reached``) and has a
return at every grid point ``≤ N`` (a model-free run read from ``metrics.csv`` has none before its
first evaluation, so it does not count there).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rp1.config.schema import EvalConfig

DEFAULT_EVERY = EvalConfig().every
"""The grid spacing (real samples) of runs without an evaluation grid: ``eval.every``'s default."""

RUN_COLUMNS: tuple[str, ...] = ("run", "task", "scale", "method", "seed", "reached")
GRID_COLUMNS: tuple[str, ...] = (*RUN_COLUMNS, "every", "source", "samples", "eval_return")
"""The columns of :func:`policy_grid`: the run's, its spacing ``every`` (real samples), where the
return comes from (``source``: ``evaluations.csv`` or ``metrics.csv``), the grid point
``samples`` (real samples) and the return of the policy in force there."""


def in_force_returns(run: pd.DataFrame, points: np.ndarray) -> np.ndarray:
    """The ``eval_return`` of the policy in force at each of ``points`` (real samples, ``[P]``) of
    one run's metrics rows (sorted by samples): that of its last row with ``samples < g``; NaN
    before its first row. ``[P]``."""
    samples = run["samples"].to_numpy(dtype=float)
    index = np.searchsorted(samples, points, side="left") - 1
    returns = run["eval_return"].to_numpy(dtype=float)
    return np.where(index >= 0, returns[np.maximum(index, 0)], np.nan)


def grid_of_metrics(run: pd.DataFrame, every: int = DEFAULT_EVERY) -> pd.DataFrame:
    """One run without an evaluation grid on the grid of spacing ``every`` up to what it reached,
    from its metrics rows (:func:`in_force_returns`): :data:`GRID_COLUMNS`."""
    first = run.iloc[0]
    points = np.arange(1, int(first["reached"] // every) + 1, dtype=float) * every
    table = pd.DataFrame({"samples": points, "eval_return": in_force_returns(run, points)})
    header = {column: first[column] for column in RUN_COLUMNS}
    return table.assign(**header, every=every, source="metrics.csv")[list(GRID_COLUMNS)]


def grid_of_evaluations(evaluations: pd.DataFrame) -> pd.DataFrame:
    """The runs' ``evaluations.csv`` rows (:class:`~rp1.report.runs_table.LoadedRuns`) as
    :data:`GRID_COLUMNS`: spacing their ``eval_every``, a point evaluated twice counted once (the
    last), points beyond what the run reached left out."""
    rows = evaluations[evaluations["samples"] <= evaluations["reached"]]
    rows = rows.drop_duplicates(["run", "samples"], keep="last")
    rows = rows.assign(every=rows["eval_every"], source="evaluations.csv")
    return rows[list(GRID_COLUMNS)]


def policy_grid(metrics: pd.DataFrame, evaluations: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every run of ``metrics`` on its grid: the return of the policy in force at each grid point
    up to what it reached (:data:`GRID_COLUMNS`), from ``evaluations`` (the grid table of
    :class:`~rp1.report.runs_table.LoadedRuns`) for the runs there with ``eval_every > 0``,
    from ``metrics.csv`` on a :data:`DEFAULT_EVERY` grid for the others; sorted by run and
    samples."""
    has_grid: set[str] = set()
    parts = []
    if evaluations is not None and not evaluations.empty:
        gridded = evaluations[evaluations["eval_every"] > 0]
        has_grid = set(gridded["run"])
        parts.append(grid_of_evaluations(gridded))
    others = metrics[~metrics["run"].isin(has_grid)]
    parts += [grid_of_metrics(run) for _, run in others.groupby("run", sort=False)]
    parts = [part for part in parts if not part.empty]
    if not parts:
        return pd.DataFrame(columns=list(GRID_COLUMNS))
    grid = pd.concat(parts, ignore_index=True)
    return grid.sort_values(["run", "samples"], kind="stable").reset_index(drop=True)


def points_by(grid: pd.DataFrame, timestep: float) -> pd.DataFrame:
    """The grid points ``≤ timestep`` of the runs that count at ``timestep``: they reached it and
    have a return at each of their ``timestep // every`` points up to it."""
    rows = grid[(grid["samples"] <= timestep) & (grid["reached"] >= timestep)]
    by_run = rows.groupby("run")
    complete = by_run["eval_return"].count() == timestep // by_run["every"].first()
    return rows[rows["run"].isin(complete.index[complete])]


def return_at(grid: pd.DataFrame, timestep: float) -> pd.Series:
    """Per run, the return of the policy in force at its last grid point ``≤ timestep``
    (:func:`points_by`); a Series indexed by run, sorted."""
    return points_by(grid, timestep).groupby("run")["eval_return"].last()


def grid_best(grid: pd.DataFrame, timestep: float) -> pd.Series:
    """Per run, the best return of the policies in force at its grid points ``≤ timestep``
    (:func:`points_by`); a Series indexed by run, sorted."""
    return points_by(grid, timestep).groupby("run")["eval_return"].max()


def area_under_curve(grid: pd.DataFrame, timestep: float) -> pd.Series:
    """Per run, the mean return of the policies in force at its grid points ``≤ timestep``
    (:func:`points_by`), the area under its step curve divided by the samples it spans; a Series
    indexed by run, sorted."""
    return points_by(grid, timestep).groupby("run")["eval_return"].mean()
