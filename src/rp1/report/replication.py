"""A replication read against the report it replicates: each claim of the first report, and what
the same comparison says on fresh seeds.

Two reports of the same comparisons (their ``claims.csv``, :mod:`rp1.report.claims`): the
*original* (e.g. seeds 0–9) and the *replication* (fresh seeds, run and reported alike, read on
their own). A claim of the original is a verdict that **holds** (the first method ahead, Holm's
adjusted p below the level, with or without a winner's note). Each one is

- **replicated** where the replication's verdict on the same comparison (id, task, scale,
  samples, measure) also holds;
- **not replicated** where it is equivalent, inconclusive, or nothing was learned;
- **reversed** where it does not hold (the second method ahead, significantly).

A comparison the original did not decide that way is no claim: its reading is
:data:`NO_CLAIM`, shown beside the replication's verdict without a word of "replicated".
A comparison either report lacks is :data:`MISSING` (a replication that lost a cell says so,
never counts as one way or the other).

Beside each reading, ``same_p`` tests whether the two seed ranges give one difference: the two
reports as two blocks (:mod:`rp1.report.blocks`), each difference of means with its Welch standard
error (``diff / t``), :func:`rp1.report.stats.heterogeneity`'s p. It is the method × seed-range
interaction of the pooled seeds, read without pooling them; a small one says the original's
difference was not the replication's, whatever the two verdicts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rp1.report.significance import FAILS, HOLDS, verdict_kind
from rp1.report.stats import heterogeneity

REPLICATED, NOT_REPLICATED, REVERSED = "replicated", "not replicated", "reversed"
NO_CLAIM = "no claim"
"""The reading of a comparison the original report did not find to hold."""
MISSING = "missing"
"""The reading of a comparison one of the two reports does not have."""

KEYS = ["id", "task", "scale", "samples", "metric"]
"""What names one comparison in both reports' ``claims.csv``."""


def reading(original: str, replication: str) -> str:
    """The reading of one comparison from its two verdicts (:func:`rp1.report.significance.verdict`
    texts; ``""`` where a report lacks it); see the module docstring."""
    if not original or not replication:
        return MISSING
    if verdict_kind(original) != HOLDS:
        return NO_CLAIM
    kind = verdict_kind(replication)
    if kind == HOLDS:
        return REPLICATED
    return REVERSED if kind == FAILS else NOT_REPLICATED


def same_difference_p(
    diff: float, t: float, diff_replication: float, t_replication: float
) -> float:
    """The p that two reports' differences of means ``diff`` and ``diff_replication`` (Welch's t
    ``t`` and ``t_replication`` each) are one difference (:func:`~rp1.report.stats.heterogeneity`
    of the two, each standard error ``|diff / t|``); NaN where a t is 0 or missing."""
    differences = np.array([diff, diff_replication], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        errors = np.abs(differences / np.array([t, t_replication], dtype=float))
    return heterogeneity(differences, errors)


def replication_readings(original: pd.DataFrame, replication: pd.DataFrame) -> pd.DataFrame:
    """Every comparison of either report (``claims.csv`` frames), in the original's order and then
    the replication's: :data:`KEYS`, ``claim``, both verdicts (``verdict``, ``verdict_replication``,
    ``""`` where missing), both differences with their intervals and Holm-adjusted p
    (``diff``, ``diff_low``, ``diff_high``, ``p_holm``, and Welch's ``t``, each also
    ``…_replication``), the ``reading`` (:func:`reading`) and ``same_p``
    (:func:`same_difference_p`; NaN where a report lacks the comparison)."""
    columns = ["claim", "verdict", "diff", "diff_low", "diff_high", "t", "p_holm"]
    merged = pd.merge(
        original[KEYS + columns].assign(_first=range(len(original))),
        replication[KEYS + columns].assign(_then=range(len(replication))),
        on=KEYS,
        how="outer",
        suffixes=("", "_replication"),
    ).sort_values(["_first", "_then"], kind="stable")  # NaN (a comparison one lacks) last
    merged["claim"] = merged["claim"].fillna(merged["claim_replication"])
    merged = merged.drop(columns=["claim_replication", "_first", "_then"])
    for column in ("verdict", "verdict_replication"):
        merged[column] = merged[column].fillna("")
    merged["reading"] = [
        reading(a, b) for a, b in zip(merged["verdict"], merged["verdict_replication"], strict=True)
    ]
    merged["same_p"] = [
        same_difference_p(*pair)
        for pair in zip(
            merged["diff"],
            merged["t"],
            merged["diff_replication"],
            merged["t_replication"],
            strict=True,
        )
    ]
    return merged.reset_index(drop=True)
