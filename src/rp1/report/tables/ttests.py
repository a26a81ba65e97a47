"""A report table's comparisons: per measure and row, each
:class:`~rp1.report.tables.specs.Comparison` of two cells with runs, and its verdict.

Each comparison gives Welch's t, its p and the Holm-adjusted p of its family, the difference of
means with its 95 % bootstrap interval, the probability of improvement ``P(a > b)`` with its
interval, the smallest difference the test detects, each side's gain over its untrained policies,
and a verdict (:mod:`rp1.report.significance`): the rows of ``<name>_ttests.csv``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from rp1.report import stats
from rp1.report.learning import gain_p
from rp1.report.measures import MEASURES, PAPER_BEST, RETURN, Measure
from rp1.report.paper import PAPER_T
from rp1.report.significance import holm_within, verdict
from rp1.report.tables.cells import CellValues, table_rows
from rp1.report.tables.specs import TableSpec, table_measures

TTEST_COLUMNS: tuple[str, ...] = (
    *("metric", "task", "scale", "samples", "comparison", "method_a", "method_b", "n_a", "n_b"),
    *("t", "p", "significant", "prob_improvement", "pi_low", "pi_high", "detectable"),
    *("diff", "diff_low", "diff_high", "tost_low", "tost_high", "margin", "paper_t"),
    *("paper_significant", "gain_a", "gain_p_a", "fall_p_a", "gain_b", "gain_p_b", "fall_p_b"),
    *("learned", "p_holm", "verdict"),
)
"""The columns of ``<name>_ttests.csv`` (:func:`ttest_table`, :func:`judged`)."""


def comparison_values(measure: Measure, a: np.ndarray, b: np.ndarray) -> tuple:
    """The statistics of one comparison of per-seed values ``a`` against ``b`` under ``measure``,
    :data:`TTEST_COLUMNS` from ``t`` to ``tost_high``: Welch's t-test (``significant``: p < 0.05
    before any correction), the probability of improvement
    (:func:`~rp1.report.stats.probability_of_improvement`) and the smallest difference the
    test detects at 80 % power (:func:`~rp1.report.stats.detectable_difference`) — where
    lower is better, all on the values negated, so t > 0 and PI > 0.5 when a's values are lower —
    then the difference of means a − b with its bootstrap interval
    (:func:`~rp1.report.stats.mean_difference`) and its Welch 90 % interval, the two
    one-sided tests' (:func:`~rp1.report.stats.tost_interval`), in the measure's units, as
    they are."""
    sign = -1.0 if measure.lower_is_better else 1.0
    test = stats.welch(sign * a, sign * b)
    return (
        (test.t, test.p, test.significant)
        + tuple(stats.probability_of_improvement(sign * a, sign * b))
        + (stats.detectable_difference(sign * a, sign * b), *stats.mean_difference(a, b))
        + stats.tost_interval(a, b)
    )


def untrained_gain(values: np.ndarray, untrained: np.ndarray) -> tuple[float, float, float]:
    """How one cell's runs stand against their own untrained policies on a measure: the mean of
    the per-run gains ``values − untrained`` (runs without an untrained return left out), the
    one-sided p of a mean gain above 0 and that of one below 0
    (:func:`~rp1.report.learning.gain_p`); NaNs with fewer than two gains."""
    gains = values - untrained
    gains = gains[~np.isnan(gains)]
    mean = float(np.mean(gains)) if len(gains) else math.nan
    return mean, gain_p(gains), gain_p(-gains)


def paper_t(measure: str, task: str, timestep: int, methods: tuple[str, str]) -> tuple:
    """The paper's (t, significant) of a comparison (:data:`~rp1.report.paper.PAPER_T`), for
    the paper's measure only; (NaN, None) elsewhere."""
    if measure != PAPER_BEST:
        return math.nan, None
    return PAPER_T.get((task, timestep, *methods), (math.nan, None))


def ttest_table(found: CellValues, spec: TableSpec) -> pd.DataFrame:
    """One row per measure and comparison whose two cells have runs: :data:`TTEST_COLUMNS` up to
    ``fall_p_b`` (:func:`comparison_values`; ``margin``: the measure's equivalence margin,
    :mod:`rp1.report.significance`; :func:`paper_t`; then, for returns, each side's
    :func:`untrained_gain` on the measure, NaN for the test-set error); :func:`judged` adds the
    rest."""
    rows = []
    bests, untrained = found
    for measure, (task, scale, timestep), (_, header, method_a, method_b) in itertools.product(
        table_measures(spec), table_rows(bests), spec.comparisons
    ):
        key_a = (measure.name, task, scale, timestep, method_a)
        key_b = (measure.name, task, scale, timestep, method_b)
        if key_a not in bests or key_b not in bests:
            continue
        a, b = bests[key_a], bests[key_b]
        gains = (
            untrained_gain(a, untrained[key_a]) + untrained_gain(b, untrained[key_b])
            if spec.quantity == RETURN
            else (math.nan,) * 6
        )
        rows.append(
            (measure.name, task, scale, timestep, header, method_a, method_b, len(a), len(b))
            + comparison_values(measure, a, b)
            + (
                measure.margin(task, timestep, b),
                *paper_t(measure.name, task, timestep, (method_a, method_b)),
            )
            + gains
        )
    return pd.DataFrame(rows, columns=list(TTEST_COLUMNS[:-3]))


JUDGED_BY: list[str] = ["task", "scale", "samples", "metric"]
"""What a row of a table's learning table (:func:`~rp1.report.learning.learning_table`)
judges."""
FAMILY: list[str] = ["metric", "scale", "samples"]
"""A Holm family within one table: its comparisons at one measure, scale and sample count, on
every task (:func:`judged`)."""


def judged(tests: pd.DataFrame, learning: pd.DataFrame) -> pd.DataFrame:
    """``tests`` (:func:`ttest_table`) with ``learned`` (from ``learning``,
    :func:`~rp1.report.learning.learning_table`; true where it has no row: the model error),
    ``p_holm`` (:func:`~rp1.report.significance.holm_within` the table's :data:`FAMILY`,
    over the comparisons of a task that learned; NaN for the others) and ``verdict``
    (:func:`~rp1.report.significance.verdict`)."""
    if tests.empty:
        return pd.DataFrame(columns=list(TTEST_COLUMNS))
    lookup = learning.set_index(JUDGED_BY)["learned"]
    keys = pd.MultiIndex.from_frame(tests[JUDGED_BY])
    learned = lookup.reindex(keys).fillna(True).astype(bool).to_numpy()
    tests = tests.assign(learned=learned)
    tests = tests.assign(p_holm=holm_within(tests, FAMILY, tests["learned"]))
    verdicts = [verdict(test, MEASURES[test.metric].digits) for test in tests.itertuples()]
    return tests.assign(verdict=verdicts)[list(TTEST_COLUMNS)]
