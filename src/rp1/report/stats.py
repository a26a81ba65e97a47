"""Statistics for the report, as pure functions over the tidy metrics table (see runs_table).

Returns are true environment returns (algorithm.md §7); samples are real environment steps. Only a
*trained* policy's evaluation counts towards a best (:func:`rp1.report.curves.trained`); one run's
curves are in :mod:`rp1.report.curves`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd
from pandas.api.typing import SeriesGroupBy
from scipy import stats

from rp1.config.methods import RP1
from rp1.report.curves import trained

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


SIGNIFICANCE_LEVEL = 0.05
"""A test's p below this is significant (algorithm.md §8)."""


def significant(p: float) -> bool | None:
    """p < :data:`SIGNIFICANCE_LEVEL`; None when there is no test (p is NaN)."""
    return None if np.isnan(p) else bool(p < SIGNIFICANCE_LEVEL)


class TTest(NamedTuple):
    """Welch's unequal-variances t-test of a vs b; NaN when a side has fewer than 2 values."""

    t: float
    p: float

    @property
    def significant(self) -> bool | None:
        """:func:`significant` of p."""
        return significant(self.p)


def best_at(metrics: pd.DataFrame, timestep: float) -> pd.Series:
    """Per run, the best ``eval_return`` of a trained policy among rows with ``samples <=
    timestep`` (algorithm.md §8).

    A run counts only if it has such a row and reached ``timestep`` real samples (its ``reached``
    column); an unfinished or shorter-budget run is missing there rather than reporting the best
    of a smaller budget. Returns a Series indexed by run, without missing runs.
    """
    eligible = metrics[
        trained(metrics) & (metrics["samples"] <= timestep) & (metrics["reached"] >= timestep)
    ]
    return eligible.groupby("run")["eval_return"].max().dropna()


def last_at(metrics: pd.DataFrame, timestep: float, column: str) -> pd.Series:
    """Per run, ``column`` of its last row with ``samples <= timestep`` where it has a value (e.g.
    the test-set error of the last fit made with at most that many real samples). A run counts only
    if it reached ``timestep`` (as in :func:`best_at`). A Series indexed by run."""
    eligible = metrics[
        (metrics["samples"] <= timestep)
        & (metrics["reached"] >= timestep)
        & metrics[column].notna()
    ]
    return eligible.sort_values(["run", "samples"], kind="stable").groupby("run")[column].last()


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


def heterogeneity(differences: np.ndarray, errors: np.ndarray) -> float:
    """The p of Cochran's Q that the differences ``differences`` (one per block, each with its
    standard error in ``errors``) are one difference: ``Q = Σ w (d − d̄)²`` with ``w = 1/SE²``
    and ``d̄`` their ``w``-weighted mean, against χ² with (blocks − 1) degrees of freedom — for two
    blocks, the normal p of ``z = (d₁ − d₂) / √(SE₁² + SE₂²)``. NaN for fewer than two blocks or a
    standard error that is NaN or 0."""
    d, se = np.asarray(differences, dtype=float), np.asarray(errors, dtype=float)
    if len(d) < 2 or not np.all(np.isfinite(se) & (se > 0)):
        return float("nan")
    w = 1.0 / se**2
    q = float(np.sum(w * (d - np.sum(w * d) / np.sum(w)) ** 2))
    return float(stats.chi2.sf(q, len(d) - 1))


POWER = 0.8
"""The power at which :func:`detectable_difference` states the smallest effect a test detects."""


def welch_error(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """``(SE, ν)`` of ``mean(a) − mean(b)``: ``SE² = s_a²/n_a + s_b²/n_b`` and ``ν`` the
    Welch–Satterthwaite degrees of freedom; NaNs when a side has fewer than 2 values or both have
    no spread."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return float("nan"), float("nan")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return float("nan"), float("nan")
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return float(np.sqrt(va + vb)), float(dof)


def detectable_difference(a: np.ndarray, b: np.ndarray, power: float = POWER) -> float:
    """The smallest difference of means that Welch's two-sided test at :data:`SIGNIFICANCE_LEVEL`
    detects with probability ``power``, for samples of the sizes and variances of ``a`` and ``b``:
    ``(t(1 − level/2, ν) + t(power, ν)) · SE`` (:func:`welch_error`; the usual normal-theory
    approximation, in the units of the values). NaN when a side has fewer than 2 values or both
    have no spread."""
    se, dof = welch_error(a, b)
    if math.isnan(se):
        return float("nan")
    quantiles = stats.t.ppf(1 - SIGNIFICANCE_LEVEL / 2, dof) + stats.t.ppf(power, dof)
    return float(quantiles * se)


def tost_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Welch's ``1 − 2·level`` (90 %) interval of ``mean(a) − mean(b)``, ``± t(1 − level, ν) · SE``
    (:func:`welch_error`): the two one-sided tests at :data:`SIGNIFICANCE_LEVEL` both reject a
    difference of ``±margin`` exactly when it lies inside ``(−margin, margin)``. NaNs when a side
    has fewer than 2 values or both have no spread."""
    se, dof = welch_error(a, b)
    if math.isnan(se):
        return float("nan"), float("nan")
    diff = float(np.mean(a) - np.mean(b))
    half = float(stats.t.ppf(1 - SIGNIFICANCE_LEVEL, dof)) * se
    return diff - half, diff + half


class Improvement(NamedTuple):
    """Probability of improvement ``P(X > Y)`` of a over b with its 95 % bootstrap interval; NaN
    when a side has no value (interval: fewer than 2 values on a side)."""

    p: float
    low: float
    high: float


def _pairs_won(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Share of pairs ``(a_i, b_j)`` with ``a_i > b_j``, ties counting one half (= the Mann–Whitney
    ``U`` of a over ``n·m``); vectorised over leading axes after moving ``axis`` last."""
    a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
    x, y = a[..., :, None], b[..., None, :]
    won = np.count_nonzero(x > y, axis=(-2, -1)) + 0.5 * np.count_nonzero(x == y, axis=(-2, -1))
    return won / (a.shape[-1] * b.shape[-1])


def two_sample_interval(
    a: np.ndarray, b: np.ndarray, statistic: Callable[..., np.ndarray], seed: int = 0
) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of ``statistic(a, b, axis)`` (vectorised over resamples),
    resampling a and b independently (:data:`BOOTSTRAP_RESAMPLES`, generator seeded by ``seed``:
    the same values give the same interval); NaNs when a side has fewer than 2 values."""
    if len(a) < 2 or len(b) < 2:
        return float("nan"), float("nan")
    result = stats.bootstrap(
        (np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
        statistic,
        n_resamples=BOOTSTRAP_RESAMPLES,
        vectorized=True,
        paired=False,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def probability_of_improvement(a: np.ndarray, b: np.ndarray, seed: int = 0) -> Improvement:
    """``P(X > Y)`` for ``X`` a seed's value under a, ``Y`` under b: ``U / (n·m)`` of the
    Mann–Whitney test (ties count one half; 1 when every a beats every b, 0.5 for no difference),
    with a 95 % percentile-bootstrap interval that resamples a and b independently
    (:func:`two_sample_interval`; Agarwal et al., 2021, "Deep RL at the edge of the statistical
    precipice")."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return Improvement(float("nan"), float("nan"), float("nan"))
    p = float(stats.mannwhitneyu(a, b).statistic) / (len(a) * len(b))
    return Improvement(p, *two_sample_interval(a, b, _pairs_won, seed))


class Difference(NamedTuple):
    """The difference of means ``mean(a) − mean(b)`` with its 95 % bootstrap interval (in the
    values' units); NaN when a side has no value (interval: fewer than 2 values on a side)."""

    diff: float
    low: float
    high: float


def _mean_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def mean_difference(a: np.ndarray, b: np.ndarray, seed: int = 0) -> Difference:
    """``mean(a) − mean(b)`` of per-seed values with its 95 % percentile-bootstrap interval,
    resampling a and b independently (:func:`two_sample_interval`)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return Difference(float("nan"), float("nan"), float("nan"))
    return Difference(
        float(_mean_difference(a, b)), *two_sample_interval(a, b, _mean_difference, seed)
    )


def lambda_improvements(metrics: pd.DataFrame) -> pd.DataFrame:
    """One-step changes in evaluation return between trained policies, with the λ the newer
    policy was trained with.

    For each run and each trained row (iteration ≥ 1) but its first: ``change = (eval_return −
    previous trained eval_return) / (max − min of the run's trained eval_return)``, i.e.
    normalised by the run's return range so that runs and tasks of different scales weigh the same
    (runs with a zero range are left out). The step from the untrained policy (iteration 0 → 1)
    is left out: it is training from scratch, with a λ forced to 0, not chosen (algorithm.md §6).
    Columns ``task, scale, method, run, lambda, change`` (change: share of the run's range,
    unitless; λ rounded to LAMBDA_DECIMALS so that arms written with float noise group together).
    """
    rows = metrics[trained(metrics)]
    runs = rows.groupby("run", sort=False)["eval_return"]
    span = runs.transform("max") - runs.transform("min")
    change = runs.diff() / span.where(span > 0)
    table = rows[["task", "scale", "method", "run"]].assign(
        **{"lambda": rows["lambda"].round(LAMBDA_DECIMALS)}, change=change
    )
    return table.dropna(subset=["lambda", "change"]).reset_index(drop=True)


def lambda_summary(improvements: pd.DataFrame) -> pd.DataFrame:
    """Mean normalised one-step change per (task, scale, method, λ): columns ``n, mean, sem``."""
    grouped = improvements.groupby(["task", "scale", "method", "lambda"])["change"]
    summary = grouped.agg(n="count", mean="mean", sem="sem").reset_index()
    return summary.astype({"lambda": float, "n": int})


LAMBDA_GROUP: list[str] = ["task", "scale", "method"]
"""What a row of :func:`lambda_trend` summarises."""


def run_slope(steps: pd.DataFrame) -> float:
    """Least-squares slope of ``change`` on ``lambda`` over one run's steps (share of the run's
    return range per unit λ); NaN when the run played a single λ."""
    lam, change = steps["lambda"].to_numpy(float), steps["change"].to_numpy(float)
    if len(lam) < 2 or lam.max() == lam.min():
        return np.nan
    return float(np.polyfit(lam, change, 1)[0])


def slope_test(slopes: np.ndarray) -> tuple[float, float]:
    """(t, p) of a one-sample t-test of ``slopes`` against 0; NaN below 2 slopes or when they do
    not vary (a t-statistic without spread is not a test)."""
    if len(slopes) < 2 or np.all(slopes == slopes[0]):
        return np.nan, np.nan
    test = stats.ttest_1samp(slopes, 0.0)
    return float(test.statistic), float(test.pvalue)


def lambda_trend(improvements: pd.DataFrame) -> pd.DataFrame:
    """Figure 2's direction per (task, scale, method): does a larger λ go with larger steps?

    Each run's steps (:func:`lambda_improvements`) give one least-squares slope of normalised
    change on λ (:func:`run_slope`), so the seed, not the step, is the unit of the test (a run's
    steps are not independent). Columns ``runs`` (runs with a slope), ``slope`` (their mean),
    ``t`` and ``p`` (:func:`slope_test`).
    """
    columns = [*LAMBDA_GROUP, "runs", "slope", "t", "p"]
    if improvements.empty:
        return pd.DataFrame(columns=columns)
    grouped = improvements.groupby([*LAMBDA_GROUP, "run"])[["lambda", "change"]]
    slopes = grouped.apply(run_slope).dropna()
    rows = []
    for key, values in slopes.groupby(level=LAMBDA_GROUP):
        t, p = slope_test(values.to_numpy())
        rows.append((*key, len(values), float(values.mean()), float(t), float(p)))
    return pd.DataFrame(rows, columns=columns)


PHASE_GROUP: list[str] = ["task", "scale", "method"]
"""What a row of :func:`phase_summary` summarises."""


def quartiles(values: SeriesGroupBy, name: str) -> pd.DataFrame:
    """Columns ``name`` (median), ``name_q25`` and ``name_q75`` of grouped values."""
    return pd.DataFrame(
        {
            name: values.median(),
            f"{name}_q25": values.quantile(0.25),
            f"{name}_q75": values.quantile(0.75),
        }
    )


def cap_list(caps: pd.Series) -> str:
    """The distinct phase caps (real samples) as text, e.g. ``"1,000, 3,000"``; NaN left out."""
    return ", ".join(f"{cap:,.0f}" for cap in sorted(caps.dropna().unique()))


def phase_summary(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per (task, scale, method): the collection phases of the model-based runs' rows ``metrics``
    (algorithm.md §5).

    Every row's phase counts, the first (iteration 0, collected by the untrained policy) included;
    samples are real environment steps. Columns: ``runs``; ``caps`` (the runs' ``phase_cap``
    values, e.g. ``"1,000"``); ``phases`` (in all); ``phases_per_run`` with ``_q25`` and ``_q75``
    (quartiles over runs); ``phase_samples`` with ``_q25`` and ``_q75`` (quartiles over phases);
    ``stopped_early`` (share of phases with a known cap that took fewer samples than they could:
    ``min(phase_cap, budget − samples)``, the cap or what the budget left); ``trained_phase_samples``
    (median over the phases of iterations ≥ 1, collected by trained policies: for ``rp1``, the
    matched length of :data:`rp1.config.methods.MATCHED_PHASE_LENGTH`).
    """
    phases = metrics.dropna(subset=["phase_samples"])
    allowed = np.minimum(phases["phase_cap"], phases["budget"] - phases["samples"])
    phases = phases.assign(
        stopped_early=(phases["phase_samples"] < allowed).where(allowed.notna()).astype(float)
    )
    by_run = phases.groupby([*PHASE_GROUP, "run"])["phase_samples"].size()
    grouped = phases.groupby(PHASE_GROUP)
    summary = pd.concat(
        [
            by_run.groupby(level=PHASE_GROUP).size().rename("runs"),
            grouped["phase_cap"].agg(cap_list).rename("caps"),
            grouped.size().rename("phases"),
            quartiles(by_run.groupby(level=PHASE_GROUP), "phases_per_run"),
            quartiles(grouped["phase_samples"], "phase_samples"),
            grouped["stopped_early"].mean(),
            phases[trained(phases)]
            .groupby(PHASE_GROUP)["phase_samples"]
            .median()
            .rename("trained_phase_samples"),
        ],
        axis=1,
    )
    return summary.reset_index()


def median_phase_lengths(metrics: pd.DataFrame, method: str = RP1) -> dict[str, float]:
    """Per task, the median ``phase_samples`` of iterations ≥ 1 over ``method``'s rows of
    ``metrics`` (real samples): what :data:`rp1.config.methods.MATCHED_PHASE_LENGTH` holds for the
    committed small-scale runs."""
    rows = metrics[(metrics["method"] == method) & trained(metrics)].dropna(
        subset=["phase_samples"]
    )
    return {
        task: float(length)
        for task, length in rows.groupby("task")["phase_samples"].median().items()
    }
