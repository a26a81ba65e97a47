"""One run's curves from its rows of the tidy metrics table (see runs_table), with NumPy and
pandas alone (no SciPy: a run's process draws its learning curve and a sweep reads its runs'
bests without loading the report's statistics).

Only a *trained* policy's evaluation (a row of iteration ≥ 1) counts towards a best
(algorithm.md §8): a model-based run's iteration 0 evaluates its untrained policy; a model-free
run's rows are updates 1, 2, …, all trained.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from rp1.rundir.files import evaluates_trained


def trained(metrics: pd.DataFrame) -> pd.Series:
    """Whether each row evaluates a trained policy (iteration ≥ 1), as a boolean Series."""
    return evaluates_trained(metrics["iteration"])


def best_trained(metrics: pd.DataFrame) -> float:
    """The best ``eval_return`` of a trained policy (:func:`trained`) in one run's ``metrics``; NaN
    when there is none."""
    returns = metrics.loc[trained(metrics), "eval_return"].dropna()
    return float(returns.max()) if len(returns) else math.nan


PerRow = Callable[[pd.DataFrame], np.ndarray]
"""``per_row(run) -> [rows]``: a value at each row of one run (:func:`best_so_far`, :func:`latest`)."""


def best_so_far(run: pd.DataFrame) -> np.ndarray:
    """One run's best trained ``eval_return`` so far at each of its rows (NaN before the first)."""
    returns, is_trained = run["eval_return"].to_numpy(dtype=float), trained(run).to_numpy()
    return np.fmax.accumulate(np.where(is_trained, returns, np.nan))


def latest(column: str) -> PerRow:
    """``run -> [rows]``: one run's last value of ``column`` so far at each of its rows (NaN
    before the first)."""
    return lambda run: run[column].ffill().to_numpy(dtype=float)


def step_curves(
    metrics: pd.DataFrame, grid: np.ndarray, per_row: PerRow = best_so_far
) -> np.ndarray:
    """Per run, ``per_row(run)`` (a value per row, e.g. :func:`best_so_far`) at each grid point
    (real samples), ``[runs, grid]``.

    Step alignment: the value at x is that of the last row with ``samples <= x`` — for
    :func:`best_so_far` the same quantity as the tables' "best at a timestep", so a curve at 10⁵
    equals the table cell. NaN before a run's first value (the untrained policy's score is not a
    best of training) and beyond the samples it reached.
    """
    curves = []
    for _, run in metrics.groupby("run", sort=True):
        best = per_row(run)
        index = np.searchsorted(run["samples"].to_numpy(dtype=float), grid, side="right") - 1
        curve = np.where(index >= 0, best[np.maximum(index, 0)], np.nan)
        curves.append(np.where(grid <= run["reached"].iloc[0], curve, np.nan))
    return np.array(curves).reshape(len(curves), len(grid))


def quartile_bands(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """25th, 50th and 75th percentiles over runs (axis 0), ignoring NaN; NaN where no run is."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # grid points no run reaches
        q25, median, q75 = np.nanpercentile(curves, [25, 50, 75], axis=0)
    return q25, median, q75
