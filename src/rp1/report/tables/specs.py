"""The report's tables, declared: the paper's Tables 1–3, rp1's controls (Tables 4–6) and the
model table (:data:`TABLES`).

Each table compares methods on one quantity (:mod:`rp1.report.measures`): returns, in four
measures — the paper's best evaluation return (algorithm.md §8) and three that do not reward
evaluation count (:mod:`rp1.report.fair`) — or the world models' test-set error. A
:class:`TableSpec` says which: its name and title, the paper's timesteps, which methods it shows
(a column per method of its kind, :meth:`TableSpec.columns`, from the method table), in what order
and under what header, and its comparisons (:class:`Comparison`, a t-test column each).

What is made of them, one job per module: the per-seed values of each cell and their statistics
(:mod:`~rp1.report.tables.cells`), the comparisons and their verdicts
(:mod:`~rp1.report.tables.ttests`), a table's results from runs
(:mod:`~rp1.report.tables.results`), its Markdown (:mod:`~rp1.report.tables.markdown`)
and its files (:mod:`~rp1.report.tables.files`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from rp1.config.defaults import BONUS_NAMES
from rp1.config.methods import (
    GREEDY,
    GREEDY_MATCHED,
    RP1,
    RP1_FIXED05,
    RP1_NOADAPT,
    RP1_NOPCA,
    RP1_NOPCA_MATCHED,
    RP1_STATEVAR,
    VR,
    Method,
    method_label,
    model_based_methods,
)
from rp1.report.measures import MEASURES, MODEL_ERROR, QUANTITY_MEASURES, RETURN, Measure


class Comparison(NamedTuple):
    """One t-test column of a table: method ``a`` against method ``b``, t > 0 when a is better.

    ``id``: the name a claim gives it (:data:`~rp1.report.claims.CLAIMS`), one per comparison
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
    return method.bonus.capitalize() if method.bonus in BONUS_NAMES else method_label(method.name)


class TableSpec(NamedTuple):
    """One report table.

    ``timesteps``: the paper's timesteps (real samples) — the table also has every budget of its
    runs (:func:`~rp1.report.tables.cells.table_timesteps`); ``kind``: which methods it shows
    besides those its ``comparisons`` name (:meth:`columns`); ``order``: a column's sort key (ties:
    the method table's order); ``header``: a column's header; ``quantity``: what a cell holds per
    seed, :data:`RETURN` (returns, in each measure of
    :data:`~rp1.report.measures.QUANTITY_MEASURES`, higher is better) or :data:`MODEL_ERROR`
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
            Comparison("rp1-vs-greedy", "T1", RP1, GREEDY),
            Comparison("rp1-vs-vr", "T2", RP1, VR),
        ),
    ),
    TableSpec(
        "table2",
        "Table 2: which variance the bonus uses (the paper's at 10⁵ samples)",
        (100_000,),
        bonus_variant,
        (Comparison("reward-vs-state-variance", "t (Reward vs State)", RP1, RP1_STATEVAR),),
        header=bonus_header,
    ),
    TableSpec(
        "table3",
        "Table 3: ablations (the paper's at 10⁵ samples)",
        (100_000,),
        paper_ablation,
        (
            Comparison("rp1-vs-lambda-0", "t (RP1 vs λ = 0)", RP1, RP1_NOADAPT),
            Comparison("rp1-vs-no-early-stop", "t (RP1 vs No EarlyStop)", RP1, RP1_NOPCA),
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
                RP1_NOADAPT,
                GREEDY_MATCHED,
            ),
            Comparison(
                "rp1-vs-matched-no-early-stop",
                "t (RP1 vs matched No EarlyStop)",
                RP1,
                RP1_NOPCA_MATCHED,
            ),
            Comparison("lambda-0.5-vs-lambda-0", "t (λ = 0.5 vs λ = 0)", RP1_FIXED05, RP1_NOADAPT),
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
                GREEDY_MATCHED,
                GREEDY,
            ),
            Comparison(
                "matched-vs-3000-no-early-stop",
                "t (matched No EarlyStop vs No EarlyStop)",
                RP1_NOPCA_MATCHED,
                RP1_NOPCA,
            ),
        ),
        header=short_header,
    ),
    TableSpec(
        "table6",
        "Table 6: a control beyond the paper — RP1 against Greedy with phases of RP1's length: all that RP1 adds to its phase length (the PCA test, the bonus and adaptive λ together)",
        (10_000, 100_000),
        compared_only,
        (Comparison("rp1-vs-matched-greedy", "t (RP1 vs matched Greedy)", RP1, GREEDY_MATCHED),),
        header=short_header,
    ),
    TableSpec(
        "table_model",
        "World models on common data: one-step error on the task's test set (beyond the paper)",
        (10_000, 100_000),
        control,
        (
            Comparison("models-rp1-vs-lambda-0", "t (RP1 vs λ = 0)", RP1, RP1_NOADAPT),
            Comparison(
                "models-rp1-vs-matched-greedy", "t (RP1 vs matched Greedy)", RP1, GREEDY_MATCHED
            ),
            Comparison(
                "models-lambda-0.5-vs-lambda-0",
                "t (λ = 0.5 vs λ = 0)",
                RP1_FIXED05,
                RP1_NOADAPT,
            ),
            Comparison(
                "models-lambda-0.5-vs-matched-greedy",
                "t (λ = 0.5 vs matched Greedy)",
                RP1_FIXED05,
                GREEDY_MATCHED,
            ),
            Comparison(
                "models-no-early-stop-vs-greedy-matched",
                "t (No EarlyStop vs Greedy, matched)",
                RP1_NOPCA_MATCHED,
                GREEDY_MATCHED,
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


def table_measures(spec: TableSpec) -> tuple[Measure, ...]:
    """The measures a table of ``spec``'s quantity shows, the paper's first."""
    return tuple(MEASURES[name] for name in QUANTITY_MEASURES[spec.quantity])
