"""Statistics for the report, as pure functions over the tidy metrics table (see runs_table).

Returns are true environment returns (SPEC §7); samples are real environment steps.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

IQM_TRIM = 0.25
"""Share cut from each end for the interquartile mean."""

BOOTSTRAP_RESAMPLES = 9_999
CONFIDENCE = 0.95
LAMBDA_DECIMALS = 6


class CellStats(NamedTuple):
    """Summary of one table cell: per-seed values (returns) of one method on one task."""

    n: int
    median: float
    q25: float
    q75: float
    iqm: float
    iqm_low: float
    iqm_high: float


class TTest(NamedTuple):
    """Welch's unequal-variances t-test of a vs b; NaN when a side has fewer than 2 values."""

    t: float
    p: float

    @property
    def significant(self) -> bool | None:
        """p < 0.05 (SPEC §8); None when there is no test."""
        return None if np.isnan(self.p) else bool(self.p < 0.05)


def best_at(metrics: pd.DataFrame, timestep: float) -> pd.Series:
    """Per run, the best ``eval_return`` among rows with ``samples <= timestep`` (SPEC §8).

    A run counts only if it has such a row and reached ``timestep`` real samples (its ``reached``
    column); an unfinished or shorter-budget run is missing there rather than reporting the best
    of a smaller budget. Returns a Series indexed by run, without missing runs.
    """
    eligible = metrics[(metrics["samples"] <= timestep) & (metrics["reached"] >= timestep)]
    return eligible.groupby("run")["eval_return"].max().dropna()


def iqm(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean: mean of the values left after cutting 25 % from each end."""
    return stats.trim_mean(values, IQM_TRIM, axis=axis)


def iqm_interval(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95 % percentile-bootstrap confidence interval of the IQM; NaNs for fewer than 2 values.

    Percentile rather than BCa: BCa is undefined when the resamples are degenerate (e.g. all
    seeds equal), which small seed counts make common.
    """
    if len(values) < 2:
        return float("nan"), float("nan")
    result = stats.bootstrap(
        (np.asarray(values, dtype=float),),
        iqm,
        n_resamples=BOOTSTRAP_RESAMPLES,
        vectorized=True,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def summarise(values: np.ndarray) -> CellStats:
    """Median, quartiles, IQM and its bootstrap CI of per-seed values (NaNs for no values)."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return CellStats(0, *[float("nan")] * 6)
    q25, median, q75 = np.percentile(values, [25, 50, 75])
    return CellStats(
        len(values),
        float(median),
        float(q25),
        float(q75),
        float(iqm(values)),
        *iqm_interval(values),
    )


def welch(a: np.ndarray, b: np.ndarray) -> TTest:
    """Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``); t > 0 when a is higher."""
    if len(a) < 2 or len(b) < 2:
        return TTest(float("nan"), float("nan"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zero variance on both sides: t is NaN
        result = stats.ttest_ind(a, b, equal_var=False)
    return TTest(float(result.statistic), float(result.pvalue))


def best_so_far_curves(metrics: pd.DataFrame, grid: np.ndarray) -> np.ndarray:
    """Per run, the best ``eval_return`` so far at each grid point (real samples), ``[runs, grid]``.

    Step alignment: the value at x is the best evaluation among rows with ``samples <= x`` — the
    same quantity as the tables' "best at a timestep", so a curve at 10⁵ equals the table cell.
    NaN before a run's first evaluation and beyond the samples it reached.
    """
    curves = []
    for _, run in metrics.groupby("run", sort=True):
        best = np.fmax.accumulate(run["eval_return"].to_numpy(dtype=float))
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


def lambda_improvements(metrics: pd.DataFrame) -> pd.DataFrame:
    """One-step changes in evaluation return, with the λ the newer policy was trained with.

    For each run and each row but its first: ``change = (eval_return − previous eval_return) /
    (run's max − min eval_return)``, i.e. normalised by the run's return range so that runs and
    tasks of different scales weigh the same (runs with a zero range are left out). Columns
    ``task, method, run, lambda, change`` (change: share of the run's range, unitless; λ rounded
    to LAMBDA_DECIMALS so that arms written with float noise group together).
    """
    runs = metrics.groupby("run", sort=False)["eval_return"]
    span = runs.transform("max") - runs.transform("min")
    change = runs.diff() / span.where(span > 0)
    table = metrics[["task", "method", "run"]].assign(
        **{"lambda": metrics["lambda"].round(LAMBDA_DECIMALS)}, change=change
    )
    return table.dropna(subset=["lambda", "change"]).reset_index(drop=True)


def lambda_summary(improvements: pd.DataFrame) -> pd.DataFrame:
    """Mean normalised one-step change per (task, method, λ): columns ``n, mean, sem``."""
    grouped = improvements.groupby(["task", "method", "lambda"])["change"]
    summary = grouped.agg(n="count", mean="mean", sem="sem").reset_index()
    return summary.astype({"lambda": float, "n": int})


def phase_sizes(metrics: pd.DataFrame) -> pd.DataFrame:
    """Real samples of each phase collected after an evaluation.

    Columns ``task, method, run, phase_samples``.

    The initial random-policy phase has no row of its own and is not included.
    """
    columns = ["task", "method", "run", "phase_samples"]
    return metrics[columns].dropna(subset=["phase_samples"]).reset_index(drop=True)


def phase_summary(phases: pd.DataFrame, cap: int) -> pd.DataFrame:
    """Per (task, method): phase sizes and the samples early stopping saved against ``cap``.

    Columns: ``runs``, ``phases``, ``mean_phase_samples``, ``saved_per_run`` (mean over runs of
    the sum of ``cap − phase_samples``), ``saved_total`` (over all runs), ``saved_share``
    (``saved_total / (phases · cap)``). Samples are real environment steps.
    """
    phases = phases.assign(saved=(cap - phases["phase_samples"]).clip(lower=0))
    per_run = phases.groupby(["task", "method", "run"]).agg(
        phases=("saved", "size"), saved=("saved", "sum")
    )
    by_method = per_run.groupby(["task", "method"])
    summary = pd.DataFrame(
        {
            "runs": by_method.size(),
            "phases": by_method["phases"].sum(),
            "mean_phase_samples": phases.groupby(["task", "method"])["phase_samples"].mean(),
            "saved_per_run": by_method["saved"].mean(),
            "saved_total": by_method["saved"].sum(),
        }
    )
    summary["saved_share"] = summary["saved_total"] / (summary["phases"] * cap)
    return summary.reset_index()
