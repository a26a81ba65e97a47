"""How the report turns a comparison into a verdict: multiplicity, equivalence, and tasks where
nothing was learned.

- **Multiplicity**: a report runs many tests; each verdict reads the Holm–Bonferroni adjusted p
  (:func:`holm`) of its *family*, the comparisons of one report table across its tasks at one
  (metric, scale, samples) — Table 1's T1 and T2 on four tasks are a family of 8 tests. The
  claims table also gives the p adjusted over all of its tests of that (metric, scale, samples).
  Holm controls the family-wise error rate at :data:`~rp1.report.stats.SIGNIFICANCE_LEVEL`
  under any dependence between the tests, and rejects at least what Bonferroni rejects.
- **Equivalence**: "no significant difference" is not "equal". A comparison is *equivalent* only
  where both the 95 % bootstrap interval of the difference of means (a − b) and its Welch 90 %
  interval (the two one-sided tests at the significance level, which a percentile bootstrap of
  a few seeds can understate) lie inside a margin fixed here (:func:`return_margin`,
  :func:`error_margin`): a tenth of what the paper's RP1 returned on the task at that many
  samples, or a tenth of b's model error. Otherwise an insignificant comparison is
  *inconclusive*, and says which differences its data leave open.
- **Nothing learned**: a comparison on a task where no method's policy in force at N beats its
  own untrained policy (:mod:`rp1.report.learning`) compares noise; its verdict says so, and
  it is left out of every Holm family so that it neither counts as evidence nor dilutes the tests
  that do.
- **The winner learned nothing**: a task can learn while the better method of one comparison did
  not. Where a comparison holds (or does not hold) but the better method's runs are not shown
  above their own untrained policies on that measure (:func:`winner_note`), the verdict says so,
  and says whether the worse method fell below its own: "holds, but only because Greedy fell
  below its untrained policy".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from rp1.config.methods import RP1, method_label
from rp1.report.paper import PAPER_MEDIANS
from rp1.report.stats import SIGNIFICANCE_LEVEL

EQUIVALENCE_SHARE = 0.1
"""The equivalence margin as a share of the quantity's scale (:func:`return_margin`,
:func:`error_margin`): a difference below a tenth of it is practically negligible."""

PAPER_SAMPLES = (10_000, 100_000)
"""The sample counts of the paper's Table 1, whose RP1 medians set a task's return scale
(:func:`return_margin`)."""


def holm(p: np.ndarray) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values of one family of tests, in the order given: for the
    ``m`` p-values sorted ascending, ``p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j))``. NaN
    entries (no test) stay NaN and do not count in ``m``."""
    p = np.asarray(p, dtype=float)
    adjusted = np.full_like(p, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    scaled = (len(order) - np.arange(len(order))) * p[order]
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted


def holm_within(tests: pd.DataFrame, family: list[str], counted: pd.Series) -> pd.Series:
    """:func:`holm` of ``tests["p"]`` within each group of equal ``family`` columns, over the rows
    where ``counted`` is true; NaN on the others. A Series aligned with ``tests``."""
    adjusted = pd.Series(np.nan, index=tests.index, dtype=float)
    members = tests[counted.astype(bool)]
    for _, group in members.groupby(family, sort=False, dropna=False):
        adjusted[group.index] = holm(group["p"].to_numpy(dtype=float))
    return adjusted


def return_margin(task: str, samples: int) -> float:
    """The equivalence margin of a return on ``task`` at ``samples`` real samples:
    :data:`EQUIVALENCE_SHARE` of the paper's RP1 median best return at the largest of
    :data:`PAPER_SAMPLES` not above ``samples`` (the smallest below 10⁴): the scale of a good return
    on the task by then in the paper (at 10⁴: HalfCheetah 10.1, Ant 11.4, Swimmer 0.32, Hopper
    32.2; at 10⁵: 39.0, 23.8, 6.4, 62.0). The same for every measure of returns; NaN off the
    paper's tasks (no comparison there is called equivalent)."""
    reference = max([n for n in PAPER_SAMPLES if n <= samples] or [PAPER_SAMPLES[0]])
    return EQUIVALENCE_SHARE * PAPER_MEDIANS.get((task, RP1, reference), math.nan)


def error_margin(b: np.ndarray) -> float:
    """The equivalence margin of a test-set model error: :data:`EQUIVALENCE_SHARE` of the mean
    error of the method compared against (``b``, per-seed errors); NaN without values."""
    return EQUIVALENCE_SHARE * float(np.mean(b)) if len(b) else math.nan


def equivalent(low: float, high: float, margin: float) -> bool:
    """Whether the interval ``[low, high]`` of a difference lies strictly inside
    ``(−margin, margin)``; False when any of them is NaN."""
    return bool(-margin < low and high < margin)


def rejected(p: float) -> bool:
    """``p`` (adjusted) below :data:`~rp1.report.stats.SIGNIFICANCE_LEVEL`; False for NaN."""
    return bool(p < SIGNIFICANCE_LEVEL)


HOLDS, FAILS, EQUIVALENT, INCONCLUSIVE, NOTHING_LEARNED = (
    "holds",
    "does not hold",
    "equivalent",
    "inconclusive",
    "nothing learned",
)
"""The kinds of verdict, the first words of :func:`verdict`."""


def winner_note(test: Any) -> str:
    """Why a decided comparison (``holds``, ``does not hold``) may not mean the better method
    learned, or ``""``: where the better method's (``a`` when t > 0, else ``b``) mean gain over
    its own untrained policy on the measure is not shown above 0 (one-sided ``gain_p_a`` /
    ``gain_p_b`` not below the level), ``only because B fell below its untrained policy`` where
    the worse method's mean gain is shown below 0 (``fall_p_*`` below the level), else ``A is not
    shown above its untrained policy``; ``""`` where the better method is, or the gain was not
    tested (NaN: the test-set error, runs without an untrained evaluation)."""
    better, worse = ("a", "b") if test.t > 0 else ("b", "a")
    gain_p = getattr(test, f"gain_p_{better}")
    if math.isnan(gain_p) or rejected(gain_p):
        return ""
    if rejected(getattr(test, f"fall_p_{worse}")):
        name = method_label(getattr(test, f"method_{worse}"))
        return f"only because {name} fell below its untrained policy"
    return (
        f"{method_label(getattr(test, f'method_{better}'))} is not shown above its untrained policy"
    )


def verdict(test: Any, digits: Callable[[float], str]) -> str:
    """The verdict on one comparison "a beats b", a row with fields ``learned``, ``samples``,
    ``t``, ``p_holm``, ``diff_low``, ``diff_high``, ``tost_low``, ``tost_high``, ``margin``,
    ``method_a``, ``method_b`` and the untrained-gain tests ``gain_p_a``, ``fall_p_a``,
    ``gain_p_b``, ``fall_p_b``; ``digits`` writes a difference.

    In this order: ``nothing learned by N`` where no method learned on the task by ``N``
    (samples); ``holds`` (t > 0) or ``does not hold`` (t < 0) where the family's Holm-adjusted p
    is below the level, followed by ``, but`` and :func:`winner_note` where the better method is
    not shown above its untrained policy; ``equivalent`` where both intervals of the difference,
    the bootstrap's and the two one-sided tests', lie inside the margin (:func:`equivalent`); else
    ``inconclusive: differences from X to Y are consistent with the data`` (the bootstrap's
    interval), or ``inconclusive: too few seeds`` without one.
    """
    if not test.learned:
        return f"{NOTHING_LEARNED} by {test.samples:,}"
    if rejected(test.p_holm):
        kind = HOLDS if test.t > 0 else FAILS
        note = winner_note(test)
        return f"{kind}, but {note}" if note else kind
    if equivalent(test.diff_low, test.diff_high, test.margin) and equivalent(
        test.tost_low, test.tost_high, test.margin
    ):
        return EQUIVALENT
    if math.isnan(test.diff_low):
        return f"{INCONCLUSIVE}: too few seeds"
    return (
        f"{INCONCLUSIVE}: differences from {digits(test.diff_low)} to {digits(test.diff_high)} "
        "are consistent with the data"
    )


def verdict_kind(text: str) -> str:
    """The kind of a :func:`verdict` (its words before a colon, a comma or ``by``)."""
    return text.split(":")[0].split(",")[0].split(" by ")[0]


def qualified(text: str) -> bool:
    """Whether a :func:`verdict` that decides carries a :func:`winner_note`."""
    return verdict_kind(text) in (HOLDS, FAILS) and ", but " in text
