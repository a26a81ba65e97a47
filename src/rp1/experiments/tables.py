"""The paper's Tables 1–3, rp1's controls (Tables 4–6) and the model table from the runs: CSV (tidy) and
Markdown (paper layout).

Each table compares methods on one quantity (:mod:`rp1.experiments.measures`): returns, in four
measures — the paper's best evaluation return (algorithm.md §8) and three that do not reward
evaluation count (:mod:`rp1.experiments.fair`) — or the world models' test-set error. Each cell is
a measure's median at a timestep over seeds, with its IQR, the number of seeds, the paper's value
(its best, on its tasks), and — beyond the paper — the interquartile mean with a 95 % bootstrap
confidence interval. Each comparison gives Welch's t, its p and the Holm-adjusted p of its family,
the difference of means with its 95 % bootstrap interval, the probability of improvement ``P(a >
b)`` with its interval, and a verdict (:mod:`rp1.experiments.significance`). A table has a row
per (task, scale, timestep) and a column per method of its kind (:meth:`TableSpec.columns`, from
the method table) with runs there; cells without runs are left out (CSV) or blank (``—``,
Markdown).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from rp1.config.methods import RP1, Method, method_label, model_based_methods
from rp1.core.storage import write_atomically
from rp1.experiments import stats
from rp1.experiments.learning import Row, gain_p, learning_table, untrained_returns
from rp1.experiments.measures import (
    MEASURES,
    MODEL_ERROR,
    PAPER_BEST,
    QUANTITY_MEASURES,
    RETURN,
    Measure,
    RunTables,
    number,
    run_tables,
    values_at,
)
from rp1.experiments.paper import PAPER_MEDIANS, PAPER_T
from rp1.experiments.runs_table import scale_order
from rp1.experiments.significance import SIGNIFICANCE_LEVEL, holm_within, rejected, verdict
from rp1.imagination.rollouts import BONUSES


class Comparison(NamedTuple):
    """One t-test column of a table: method ``a`` against method ``b``, t > 0 when a is better.

    ``id``: the name a claim gives it (:data:`~rp1.experiments.claims.CLAIMS`), one per comparison
    of the report; ``header``: its column's header, and ``comparison`` in the CSV files.
    """

    id: str
    header: str
    a: str
    b: str


def paper_baseline(method: Method) -> bool:
    """One of the paper's baselines (Table 1): λ fixed, no early stopping, the paper's phases."""
    return (
        method.in_paper
        and not method.adaptive
        and not method.early_stop
        and not method.matched_phases
    )


def bonus_variant(method: Method) -> bool:
    """RP1 but for its bonus (Table 2): λ from the bandit, early stopping, the paper's phases."""
    return method.in_paper and method.adaptive and method.early_stop and not method.matched_phases


def paper_ablation(method: Method) -> bool:
    """RP1 without one of its two parts (Table 3): the bandit's λ or early stopping."""
    return method.in_paper and method.adaptive != method.early_stop and not method.matched_phases


def control(method: Method) -> bool:
    """A control beyond the paper (Table 4, the model table)."""
    return not method.in_paper


def compared_only(method: Method) -> bool:
    """No method besides those the table compares."""
    return False


def all_but_phases(method: Method) -> tuple[str, float, bool, str]:
    """What defines a method but its phase length: its λ, early stopping and bonus."""
    return method.lam, method.lam_value, method.early_stop, method.bonus


def phase_length_pair(method: Method) -> bool:
    """A method of matched phases, or one that differs from such a method only in its 3,000-sample
    phases (Table 5)."""
    return method.matched_phases or any(
        other.matched_phases and all_but_phases(other) == all_but_phases(method)
        for other in model_based_methods().values()
    )


def lambda_order(method: Method) -> tuple[bool, float, bool, bool, bool]:
    """A column's place: fixed λ before adaptive, a smaller λ first, fixed phases before early
    stopping, the paper's phase length before the matched, RP1 last."""
    return (
        method.adaptive,
        method.lam_value,
        method.early_stop,
        method.matched_phases,
        method.name == RP1,
    )


def bonus_order(method: Method) -> tuple[bool, bool, bool, float, bool, bool]:
    """A column's place by the data its models learn from: without a bonus first, then fixed
    phases before early stopping, fixed λ before adaptive, a smaller λ first, the paper's phase
    length before the matched, RP1 last."""
    return (
        method.uses_bonus,
        method.early_stop,
        method.adaptive,
        method.lam_value,
        method.matched_phases,
        method.name == RP1,
    )


def label_header(method: Method) -> str:
    """A column's header: the method's label."""
    return method_label(method.name)


def short_header(method: Method) -> str:
    """A column's header in a table of many: the method's short label."""
    return method_label(method.name, short=True)


def bonus_header(method: Method) -> str:
    """A column's header in Table 2: rp1's bonus by its name (``Reward``, ``State``), a bonus of
    one's own by the method's label."""
    return method.bonus.capitalize() if method.bonus in BONUSES else method_label(method.name)


class TableSpec(NamedTuple):
    """One report table.

    ``timesteps``: the paper's timesteps (real samples) — the table also has every budget of its
    runs (:func:`table_timesteps`); ``kind``: which methods it shows besides those its
    ``comparisons`` name (:meth:`columns`); ``order``: a column's sort key (ties: the method
    table's order); ``header``: a column's header; ``quantity``: what a cell holds per seed,
    :data:`RETURN` (returns, in each measure of
    :data:`~rp1.experiments.measures.QUANTITY_MEASURES`, higher is better) or :data:`MODEL_ERROR`
    (the test-set error of the last fit by the timestep, lower is better).
    """

    name: str
    title: str
    timesteps: tuple[int, ...]
    kind: Callable[[Method], bool]
    comparisons: tuple[Comparison, ...]
    order: Callable[[Method], tuple] = lambda_order
    header: Callable[[Method], str] = label_header
    quantity: str = RETURN

    def columns(self) -> tuple[tuple[str, str], ...]:
        """(method, header) per method column: every model-based method it compares or of its
        ``kind`` (:func:`~rp1.config.methods.model_based_methods`), in its ``order``."""
        compared = {name for c in self.comparisons for name in (c.a, c.b)}
        shown = [
            method
            for method in model_based_methods().values()
            if method.name in compared or self.kind(method)
        ]
        return tuple((method.name, self.header(method)) for method in sorted(shown, key=self.order))


TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "table1",
        "Table 1: returns, RP1 vs Greedy (T1) and vs V+R (T2)",
        (10_000, 100_000),
        paper_baseline,
        (
            Comparison("rp1-vs-greedy", "T1", RP1, "greedy"),
            Comparison("rp1-vs-vr", "T2", RP1, "vr"),
        ),
    ),
    TableSpec(
        "table2",
        "Table 2: which variance the bonus uses (the paper's at 10⁵ samples)",
        (100_000,),
        bonus_variant,
        (Comparison("reward-vs-state-variance", "t (Reward vs State)", RP1, "rp1-statevar"),),
        header=bonus_header,
    ),
    TableSpec(
        "table3",
        "Table 3: ablations (the paper's at 10⁵ samples)",
        (100_000,),
        paper_ablation,
        (
            Comparison("rp1-vs-lambda-0", "t (RP1 vs λ = 0)", RP1, "rp1-noadapt"),
            Comparison("rp1-vs-no-early-stop", "t (RP1 vs No EarlyStop)", RP1, "rp1-nopca"),
        ),
    ),
    TableSpec(
        "table4",
        "Table 4: controls beyond the paper — PCA early stopping against fixed phases of the same length, and the bonus at λ = 0.5",
        (10_000, 100_000),
        control,
        (
            Comparison(
                "lambda-0-vs-matched-greedy",
                "t (λ = 0 vs matched Greedy)",
                "rp1-noadapt",
                "greedy-matched",
            ),
            Comparison(
                "rp1-vs-matched-no-early-stop",
                "t (RP1 vs matched No EarlyStop)",
                RP1,
                "rp1-nopca-matched",
            ),
            Comparison(
                "lambda-0.5-vs-lambda-0", "t (λ = 0.5 vs λ = 0)", "rp1-fixed05", "rp1-noadapt"
            ),
        ),
        header=short_header,
    ),
    TableSpec(
        "table5",
        "Table 5: controls beyond the paper — phases of the task's matched length against the paper's 3,000 samples, without early stopping",
        (10_000, 100_000),
        phase_length_pair,
        (
            Comparison(
                "matched-vs-3000-greedy",
                "t (matched Greedy vs Greedy)",
                "greedy-matched",
                "greedy",
            ),
            Comparison(
                "matched-vs-3000-no-early-stop",
                "t (matched No EarlyStop vs No EarlyStop)",
                "rp1-nopca-matched",
                "rp1-nopca",
            ),
        ),
        header=short_header,
    ),
    TableSpec(
        "table6",
        "Table 6: a control beyond the paper — RP1 against Greedy with phases of RP1's length: all that RP1 adds to its phase length (the PCA test, the bonus and adaptive λ together)",
        (10_000, 100_000),
        compared_only,
        (Comparison("rp1-vs-matched-greedy", "t (RP1 vs matched Greedy)", RP1, "greedy-matched"),),
        header=short_header,
    ),
    TableSpec(
        "table_model",
        "World models on common data: one-step error on the task's test set (beyond the paper)",
        (10_000, 100_000),
        control,
        (
            Comparison("models-rp1-vs-lambda-0", "t (RP1 vs λ = 0)", RP1, "rp1-noadapt"),
            Comparison(
                "models-rp1-vs-matched-greedy", "t (RP1 vs matched Greedy)", RP1, "greedy-matched"
            ),
            Comparison(
                "models-lambda-0.5-vs-lambda-0",
                "t (λ = 0.5 vs λ = 0)",
                "rp1-fixed05",
                "rp1-noadapt",
            ),
            Comparison(
                "models-lambda-0.5-vs-matched-greedy",
                "t (λ = 0.5 vs matched Greedy)",
                "rp1-fixed05",
                "greedy-matched",
            ),
            Comparison(
                "models-no-early-stop-vs-greedy-matched",
                "t (No EarlyStop vs Greedy, matched)",
                "rp1-nopca-matched",
                "greedy-matched",
            ),
        ),
        order=bonus_order,
        header=short_header,
        quantity=MODEL_ERROR,
    ),
)


def table_spec(name: str) -> TableSpec:
    """The table of :data:`TABLES` called ``name``."""
    return next(spec for spec in TABLES if spec.name == name)


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
"""The columns of ``<name>_fair.csv`` and of :attr:`TableFrames.cells`: the measure first."""
TTEST_COLUMNS: tuple[str, ...] = (
    *("metric", "task", "scale", "samples", "comparison", "method_a", "method_b", "n_a", "n_b"),
    *("t", "p", "significant", "prob_improvement", "pi_low", "pi_high", "detectable"),
    *("diff", "diff_low", "diff_high", "tost_low", "tost_high", "margin", "paper_t"),
    *("paper_significant", "gain_a", "gain_p_a", "fall_p_a", "gain_b", "gain_p_b", "fall_p_b"),
    *("learned", "p_holm", "verdict"),
)
"""The columns of ``<name>_ttests.csv`` (:func:`ttest_table`, :func:`judged`)."""


def table_measures(spec: TableSpec) -> tuple[Measure, ...]:
    """The measures a table of ``spec``'s quantity shows, the paper's first."""
    return tuple(MEASURES[name] for name in QUANTITY_MEASURES[spec.quantity])


def table_timesteps(runs: pd.DataFrame, spec: TableSpec) -> dict[tuple[str, str], set[int]]:
    """Per (task, scale) of ``runs``: the paper's timesteps of ``spec`` and every budget of those
    runs (real samples)."""
    budgets = runs.groupby(["task", "scale"])["budget"]
    return {key: set(spec.timesteps) | set(values.astype(int)) for key, values in budgets}


def of_methods(runs: RunTables, methods: list[str]) -> RunTables:
    """The runs of ``methods`` only."""
    return RunTables(*(table[table["method"].isin(methods)] for table in runs))


def collect_values(runs: RunTables, spec: TableSpec, tasks: tuple[str, ...]) -> CellValues:
    """Per-seed values of every measure of ``spec`` (:func:`table_measures`) in every cell of
    ``spec`` with runs, at :func:`table_timesteps`, in table order: measure, timestep, task
    (``tasks`` order), scale (paper first), method (``spec`` order); with each run's untrained
    return beside its value (:class:`CellValues`)."""
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
    """The paper's median of a cell: its best return (:data:`PAPER_MEDIANS`), for the paper's
    measure only; NaN elsewhere."""
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


def comparison_values(measure: Measure, a: np.ndarray, b: np.ndarray) -> tuple:
    """The statistics of one comparison of per-seed values ``a`` against ``b`` under ``measure``,
    :data:`TTEST_COLUMNS` from ``t`` to ``tost_high``: Welch's t-test (``significant``: p < 0.05
    before any correction), the probability of improvement
    (:func:`~rp1.experiments.stats.probability_of_improvement`) and the smallest difference the
    test detects at 80 % power (:func:`~rp1.experiments.stats.detectable_difference`) — where
    lower is better, all on the values negated, so t > 0 and PI > 0.5 when a's values are lower —
    then the difference of means a − b with its bootstrap interval
    (:func:`~rp1.experiments.stats.mean_difference`) and its Welch 90 % interval, the two
    one-sided tests' (:func:`~rp1.experiments.stats.tost_interval`), in the measure's units, as
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
    (:func:`~rp1.experiments.learning.gain_p`); NaNs with fewer than two gains."""
    gains = values - untrained
    gains = gains[~np.isnan(gains)]
    mean = float(np.mean(gains)) if len(gains) else math.nan
    return mean, gain_p(gains), gain_p(-gains)


def paper_t(measure: str, task: str, timestep: int, methods: tuple[str, str]) -> tuple:
    """The paper's (t, significant) of a comparison (:data:`PAPER_T`), for the paper's measure
    only; (NaN, None) elsewhere."""
    if measure != PAPER_BEST:
        return math.nan, None
    return PAPER_T.get((task, timestep, *methods), (math.nan, None))


def ttest_table(found: CellValues, spec: TableSpec) -> pd.DataFrame:
    """One row per measure and comparison whose two cells have runs: :data:`TTEST_COLUMNS` up to
    ``fall_p_b`` (:func:`comparison_values`; ``margin``: the measure's equivalence margin,
    :mod:`rp1.experiments.significance`; :func:`paper_t`; then, for returns, each side's
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
"""What a row of a table's learning table (:func:`~rp1.experiments.learning.learning_table`)
judges."""
FAMILY: list[str] = ["metric", "scale", "samples"]
"""A Holm family within one table: its comparisons at one measure, scale and sample count, on
every task (:func:`judged`)."""


def judged(tests: pd.DataFrame, learning: pd.DataFrame) -> pd.DataFrame:
    """``tests`` (:func:`ttest_table`) with ``learned`` (from ``learning``,
    :func:`~rp1.experiments.learning.learning_table`; true where it has no row: the model error),
    ``p_holm`` (:func:`~rp1.experiments.significance.holm_within` the table's :data:`FAMILY`,
    over the comparisons of a task that learned; NaN for the others) and ``verdict``
    (:func:`~rp1.experiments.significance.verdict`)."""
    if tests.empty:
        return pd.DataFrame(columns=list(TTEST_COLUMNS))
    lookup = learning.set_index(JUDGED_BY)["learned"]
    keys = pd.MultiIndex.from_frame(tests[JUDGED_BY])
    learned = lookup.reindex(keys).fillna(True).astype(bool).to_numpy()
    tests = tests.assign(learned=learned)
    tests = tests.assign(p_holm=holm_within(tests, FAMILY, tests["learned"]))
    verdicts = [verdict(test, MEASURES[test.metric].digits) for test in tests.itertuples()]
    return tests.assign(verdict=verdicts)[list(TTEST_COLUMNS)]


def seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def paper_note(value: float) -> str:
    return "" if math.isnan(value) else f"; paper {number(value)}"


BLANK = "—"
"""A Markdown cell without runs, in a row or column that has some."""

FrameRow = Any
"""A row of ``DataFrame.itertuples()``: a namedtuple with the frame's columns as fields."""


def median_text(cell: FrameRow, digits: Callable[[float], str] = number) -> str:
    """``median [q25, q75] (n seeds; paper x)``, values written by ``digits``."""
    note = f"({seeds(cell.n_seeds)}{paper_note(cell.paper_median)})"
    return f"{digits(cell.median)} [{digits(cell.q25)}, {digits(cell.q75)}] {note}"


def iqm_text(cell: FrameRow, digits: Callable[[float], str] = number) -> str:
    """``iqm [ci low, ci high] (n seeds)``, values written by ``digits``; no interval below 2 seeds."""
    if cell.n_seeds == 1:
        return f"{digits(cell.iqm)} (1 seed; no CI)"
    interval = f"[{digits(cell.iqm_ci_low)}, {digits(cell.iqm_ci_high)}]"
    return f"{digits(cell.iqm)} {interval} ({seeds(cell.n_seeds)})"


def star(significant: bool | None) -> str:
    return "*" if significant else ""


def p_text(p: float) -> str:
    """A p-value with 2 significant digits, ``—`` for none."""
    return BLANK if math.isnan(p) else f"{p:.2g}"


def t_text(test: FrameRow, digits: Callable[[float], str] = number) -> str:
    """``t*`` (``*`` where the Holm-adjusted p is below the level), p and the adjusted p, the
    difference of means with its interval (written by ``digits``), the probability of improvement
    with its interval, and the paper's t; or why there is no test; and ``nothing learned`` on a
    task where nothing was."""
    paper = (
        ""
        if math.isnan(test.paper_t)
        else f" (paper {number(test.paper_t)}{star(test.paper_significant)})"
    )
    learned = "" if test.learned else "; nothing learned"
    if math.isnan(test.t):
        return f"— (n = {test.n_a} vs {test.n_b}; needs ≥ 2 each){paper}{learned}"
    difference = f"Δ {digits(test.diff)} [{digits(test.diff_low)}, {digits(test.diff_high)}]"
    improvement = f"PI {test.prob_improvement:.2f} [{test.pi_low:.2f}, {test.pi_high:.2f}]"
    ps = f"p = {test.p:.3g}, Holm {p_text(test.p_holm)}"
    return (
        f"{number(test.t)}{star(rejected(test.p_holm))} ({ps}; {difference}; {improvement})"
        f"{paper}{learned}"
    )


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def row_texts(
    found: dict[tuple, FrameRow], row: Row, keys: list[str], text: Callable[[FrameRow], str]
) -> list[str]:
    """``text`` of ``found[(*row, key)]`` for each key (a method or comparison), BLANK if none."""
    return [text(found[(*row, key)]) if (*row, key) in found else BLANK for key in keys]


class TableFrames(NamedTuple):
    """What one table is made of: per-seed values (:func:`collect_values`), cells
    (:func:`cell_table`), comparisons (:func:`ttest_table`, :func:`judged`) and whether each of
    its rows learned (:func:`~rp1.experiments.learning.learning_table`)."""

    spec: TableSpec
    bests: Bests
    cells: pd.DataFrame
    tests: pd.DataFrame
    learning: pd.DataFrame


IQM_HEADING = "95 % percentile-bootstrap CI (beyond the paper)"


def heading(measure: Measure) -> str:
    """A measure's label as a heading (first letter capital)."""
    return measure.label[0].upper() + measure.label[1:]


def measure_section(frames: TableFrames, measure: Measure) -> str:
    """The Markdown of one measure of a table: its definition, the paper-layout table of medians
    and comparisons, then the IQM table; only rows and method columns with runs, and the
    comparisons of two such columns."""
    spec, bests = frames.spec, {k: v for k, v in frames.bests.items() if k[0] == measure.name}
    cell = {tuple(row[1:5]): row for row in frames.cells.itertuples(index=False)
            if row.metric == measure.name}  # fmt: skip
    test = {tuple(row[1:5]): row for row in frames.tests.itertuples(index=False)
            if row.metric == measure.name}  # fmt: skip
    rows = table_rows(bests)
    shown = {key[4] for key in bests}
    columns = [(method, header) for method, header in spec.columns() if method in shown]
    methods = [method for method, _ in columns]
    comparisons = [c.header for c in spec.comparisons if {c.a, c.b} <= shown]
    medians = [
        [row[0], row[1], f"{row[2]:,}"]
        + row_texts(cell, row, methods, partial(median_text, digits=measure.digits))
        + row_texts(test, row, comparisons, partial(t_text, digits=measure.digits))
        for row in rows
    ]
    iqms = [
        [row[0], row[1], f"{row[2]:,}"]
        + row_texts(cell, row, methods, partial(iqm_text, digits=measure.digits))
        for row in rows
    ]
    headers = ["task", "scale", "samples", *(header for _, header in columns)]
    return "\n".join(
        [
            f"## {heading(measure)}",
            "",
            measure.description,
            "",
            markdown_table([*headers, *comparisons], medians),
            "",
            f"### {heading(measure)}: interquartile mean, {IQM_HEADING}",
            "",
            markdown_table(headers, iqms),
            "",
        ]
    )


PREAMBLE = (
    "Cells: median [25th, 75th percentile] over seeds; a run counts at a timestep only if it "
    "reached that many samples. Rows: the paper's sample counts and every budget of the task's "
    "runs, where some method has runs; `—`: no runs. t: Welch's t-statistic, `*` where the "
    "Holm-adjusted p of its family (this table's comparisons at that measure, scale and sample "
    f"count, on every task that learned) is below {SIGNIFICANCE_LEVEL}; Δ: the difference of means "
    "a − b with its 95 % bootstrap interval; PI: probability of improvement P(a > b) = U / (n·m) of "
    "the Mann–Whitney test, with its 95 % bootstrap interval (a: the first method the comparison "
    "names); nothing learned: no method's policy in force at N was shown to beat its own untrained "
    "policy. Verdicts: claims.md. See index.md for the definitions."
)
"""The paragraph under a table's title."""


def render(frames: TableFrames) -> str:
    """The Markdown file: what its numbers are, then a section per measure
    (:func:`measure_section`)."""
    measures = [m for m in table_measures(frames.spec) if any(k[0] == m.name for k in frames.bests)]
    return "\n".join(
        [
            f"# {frames.spec.title}",
            "",
            PREAMBLE,
            "",
            *(measure_section(frames, measure) for measure in measures),
        ]
    )


def table_frames(
    runs: RunTables | pd.DataFrame, spec: TableSpec, tasks: tuple[str, ...]
) -> TableFrames | None:
    """The table ``spec`` of ``runs`` (a metrics table alone: runs without a grid,
    :func:`~rp1.experiments.measures.run_tables`); None when no cell has runs. Whether a row
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


def write_table_frames(frames: TableFrames | None, out: Path) -> list[Path]:
    """Write ``<name>.md`` (:func:`render`), ``<name>.csv`` (the cells of the first measure,
    :data:`CELL_COLUMNS`), ``<name>_fair.csv`` (the cells of the others, with ``metric``; for
    tables of returns) and ``<name>_ttests.csv`` (:data:`TTEST_COLUMNS`); return their paths (none
    for a table without runs)."""
    if frames is None:
        return []
    name, cells = frames.spec.name, frames.cells
    first = cells["metric"] == QUANTITY_MEASURES[frames.spec.quantity][0]
    files = {
        f"{name}.md": render(frames),
        f"{name}.csv": cells[first][list(CELL_COLUMNS)].to_csv(index=False),
        f"{name}_fair.csv": cells[~first].to_csv(index=False) if (~first).any() else None,
        f"{name}_ttests.csv": frames.tests.to_csv(index=False),
    }
    written = [out / file for file, text in files.items() if text is not None]
    for path in written:
        write_atomically(path, files[path.name].encode(), "report file")
    return written
