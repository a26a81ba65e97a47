"""The paper's claims and rp1's controls, one verdict per task and measure: ``claims.md`` /
``claims.csv`` of ``rp1 report``.

Each claim is one comparison column of the report's tables (:data:`~rp1.report.tables.specs.TABLES`),
"a beats b", named by its id — every comparison a table makes is a claim. For every (task, scale, samples) row
with that comparison, and every measure of the table's quantity (the paper's best and the fair
measures for returns, :mod:`rp1.report.fair`; the test-set error for the world models),
the verdict is the table's (:func:`rp1.report.significance.verdict`): ``holds`` or ``does
not hold`` on the Holm-adjusted p of the table's family, ``equivalent`` inside the margin,
``inconclusive`` with the differences its data leave open, or ``nothing learned by N``. "Ahead" is
a higher return, or a lower test-set error for the world-model claims. The claims table adds the p
adjusted over all of its claims of one (measure, scale, samples), ``p_holm_all``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import pandas as pd

from rp1.config.methods import method_label
from rp1.core.storage import write_atomically
from rp1.report.learning import LEARNING_COLUMNS
from rp1.report.markdown import FrameRow, markdown_table, p_text
from rp1.report.measures import (
    MEASURES,
    QUANTITY_MEASURES,
    RETURN,
    RETURN_MEASURES,
    number,
)
from rp1.report.significance import (
    EQUIVALENT,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOTHING_LEARNED,
    holm_within,
    qualified,
    verdict_kind,
)
from rp1.report.tables.cells import table_rows
from rp1.report.tables.results import TableFrames
from rp1.report.tables.specs import TABLES, Comparison

CLAIMS: tuple[tuple[str, str], ...] = (
    ("RP1 beats Greedy (Table 1)", "rp1-vs-greedy"),
    ("RP1 beats V+R (Table 1)", "rp1-vs-vr"),
    ("adaptive λ beats λ = 0 (Table 3)", "rp1-vs-lambda-0"),
    ("early stopping matters (Table 3)", "rp1-vs-no-early-stop"),
    ("reward variance beats state variance (Table 2)", "reward-vs-state-variance"),
    (
        "phases of the matched length beat 3,000-sample phases, Greedy (control)",
        "matched-vs-3000-greedy",
    ),
    (
        "phases of the matched length beat 3,000-sample phases, No EarlyStop (control)",
        "matched-vs-3000-no-early-stop",
    ),
    (
        "PCA early stopping beats fixed phases of the same length, λ = 0 (control)",
        "lambda-0-vs-matched-greedy",
    ),
    (
        "PCA early stopping beats fixed phases of the same length, RP1 (control)",
        "rp1-vs-matched-no-early-stop",
    ),
    (
        "RP1 beats Greedy of its phase length: all but the phase length (control)",
        "rp1-vs-matched-greedy",
    ),
    ("the bonus helps: λ = 0.5 beats λ = 0 (control)", "lambda-0.5-vs-lambda-0"),
    ("RP1's models are better than λ = 0's (test-set error)", "models-rp1-vs-lambda-0"),
    (
        "RP1's models are better than matched Greedy's (test-set error)",
        "models-rp1-vs-matched-greedy",
    ),
    (
        "the bonus makes better models: λ = 0.5 vs λ = 0 (test-set error)",
        "models-lambda-0.5-vs-lambda-0",
    ),
    (
        "λ = 0.5's models are better than matched Greedy's (test-set error)",
        "models-lambda-0.5-vs-matched-greedy",
    ),
    (
        "matched No EarlyStop's models are better than matched Greedy's (test-set error)",
        "models-no-early-stop-vs-greedy-matched",
    ),
)
"""(claim, the :attr:`~rp1.report.tables.specs.Comparison.id` of the comparison that judges it):
what the paper says RP1's comparisons show, and rp1's controls; every comparison of every table."""


def compared_in(comparison_id: str) -> tuple[str, Comparison]:
    """The table (its name) that makes the comparison ``comparison_id``, and the comparison."""
    return next(
        (spec.name, comparison)
        for spec in TABLES
        for comparison in spec.comparisons
        if comparison.id == comparison_id
    )


CLAIM_COLUMNS: tuple[str, ...] = (
    *("claim", "id", "table", "comparison", "metric", "task", "scale", "samples", "verdict"),
    *("method_a", "method_b", "n_a", "n_b", "median_a", "median_b", "diff", "diff_low"),
    *("diff_high", "tost_low", "tost_high", "margin", "t", "p", "p_holm", "p_holm_all"),
    *("prob_improvement", "pi_low", "pi_high", "detectable", "learned"),
    *("gain_a", "gain_p_a", "fall_p_a", "gain_b", "gain_p_b", "fall_p_b"),
    *("fragility", "fragile_without", "robust_to_realisation", "mixed_cells"),
    *("blocks", "block_p"),
)
"""The columns of ``claims.csv``: one row per claim, measure (``metric``) and (task, scale,
samples). ``id``: the comparison's :attr:`~rp1.report.tables.specs.Comparison.id`;
``fragility`` and ``fragile_without``, ``robust_to_realisation``, ``mixed_cells``, ``blocks`` and
``block_p``: empty here, filled by the report (:mod:`rp1.report.fragility`,
:mod:`rp1.report.realisations`, :mod:`rp1.report.cell_provenance`,
:mod:`rp1.report.blocks`)."""

ALL_CLAIMS: list[str] = ["metric", "scale", "samples"]
"""The family of ``p_holm_all``: every claim of one measure, scale and sample count."""


def claim_rows(claim: str, frame: TableFrames, comparison: Comparison) -> pd.DataFrame:
    """The rows of one claim: the table's judged tests of ``comparison`` with both medians, in the
    table's row order (timestep, task, scale), then measure order."""
    tests = frame.tests[
        (frame.tests["method_a"] == comparison.a) & (frame.tests["method_b"] == comparison.b)
    ]
    medians = frame.cells.set_index(["metric", "task", "scale", "samples", "method"])["median"]
    keys = list(zip(tests["metric"], tests["task"], tests["scale"], tests["samples"], strict=True))
    row_order = {row: i for i, row in enumerate(table_rows(frame.bests))}
    measure_order = {name: i for i, name in enumerate(QUANTITY_MEASURES[frame.spec.quantity])}
    rows = tests.assign(
        claim=claim,
        id=comparison.id,
        table=frame.spec.name,
        median_a=[medians[(*key, a)] for key, a in zip(keys, tests["method_a"], strict=True)],
        median_b=[medians[(*key, b)] for key, b in zip(keys, tests["method_b"], strict=True)],
        order=[(row_order[key[1:]], measure_order[key[0]]) for key in keys],
    )
    return rows.sort_values("order", kind="stable").drop(columns="order")


def claim_table(frames: Mapping[str, TableFrames | None]) -> pd.DataFrame:
    """One row per claim, measure and (task, scale, samples) whose comparison has runs on both
    sides, in :data:`CLAIMS` order, then the table's row order, then measure order:
    :data:`CLAIM_COLUMNS`. ``p_holm_all``: :func:`~rp1.report.significance.holm_within`
    :data:`ALL_CLAIMS`, over the claims on tasks that learned."""
    parts = []
    for claim, comparison_id in CLAIMS:
        table, comparison = compared_in(comparison_id)
        frame = frames.get(table)
        if frame is not None:
            parts.append(claim_rows(claim, frame, comparison))
    parts = [part for part in parts if not part.empty]
    if not parts:
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    claims = pd.concat(parts, ignore_index=True)
    claims["p_holm_all"] = holm_within(claims, ALL_CLAIMS, claims["learned"])
    empty = ("fragility", "fragile_without", "robust_to_realisation", "mixed_cells", "blocks")
    claims = claims.assign(**dict.fromkeys(empty, ""), block_p=math.nan)
    return claims[list(CLAIM_COLUMNS)]


def value_text(value: float, measure: str) -> str:
    """A return with one decimal, a model error with 3 significant digits (unicode minus)."""
    if MEASURES[measure].lower_is_better:
        return f"{value:.3g}".replace("-", "−")
    return number(value, decimals=1)


def verdict_cell(claim: FrameRow) -> str:
    """One claim's verdict on one measure, compactly: its kind (bold where it decides: holds, does
    not hold, equivalent), the difference a − b with its interval, the family's adjusted p, and
    the verdict's :func:`~rp1.report.significance.winner_note`, if any."""
    kind = verdict_kind(claim.verdict)
    if math.isnan(claim.diff_low):
        return claim.verdict
    value = partial(value_text, measure=claim.metric)
    difference = f"Δ {value(claim.diff)} [{value(claim.diff_low)}, {value(claim.diff_high)}]"
    if kind == NOTHING_LEARNED:
        return f"nothing learned ({difference})"
    decided = kind in (HOLDS, FAILS, EQUIVALENT)
    shown = f"**{kind}**" if decided else kind
    note = f"; but {claim.verdict.split(', but ', 1)[1]}" if qualified(claim.verdict) else ""
    moves = "; moves with the realisation" if claim.robust_to_realisation == "no" else ""
    notes = f"{note}{moves}{seeds_note(claim)}{blocks_note(claim)}"
    return f"{shown} {difference}, p_H = {p_text(claim.p_holm)}{notes}"


def fragile_seeds(value: object) -> list[str]:
    """The seeds of a ``fragile_without`` value as claims.csv holds it or pandas reads it back
    (``"3 8"``, ``8``, ``8.0``, NaN or empty for none)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return [str(int(float(seed))) for seed in str(value).split()]


def seeds_note(claim: FrameRow) -> str:
    """``; moves without seed 8`` (or ``seeds 3, 8``) where leaving out one seed of the task moves
    the verdict (:mod:`rp1.report.fragility`), nothing where no single seed does."""
    seeds = fragile_seeds(claim.fragile_without)
    if not seeds:
        return ""
    return f"; moves without seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)}"


BLOCK_SIDES = re.compile(r": (\d+) vs (\d+)")
"""The runs on either side of one block in claims.csv's ``blocks`` (:func:`block_part`)."""


def block_part(block: str, runs_a: int, runs_b: int) -> str:
    """One block of claims.csv's ``blocks`` (:mod:`rp1.report.blocks`): its name and its runs on
    either side, ``6a13e10, AVX-512 (b): 5 vs 0``."""
    return f"{block}: {runs_a} vs {runs_b}"


def share_no_block(blocks: object) -> bool:
    """Whether a claims.csv ``blocks`` value (as written, or as pandas reads it back: NaN for
    none) lists blocks of which none holds runs of both sides: the two cells were made on other
    commits or CPUs (or ones not recorded), so that their difference may also be one between
    those."""
    if not isinstance(blocks, str) or not blocks:
        return False
    return not any(int(a) and int(b) for a, b in BLOCK_SIDES.findall(blocks))


def blocks_note(claim: FrameRow) -> str:
    """``; method × block p = 0.004`` where the verdict's cells hold runs of several blocks
    (commit and CPU, :mod:`rp1.report.blocks`) with two or more runs a side in two of them;
    ``; cells share no block`` where no block holds runs of both (:func:`share_no_block`);
    nothing elsewhere."""
    if share_no_block(claim.blocks):
        return "; cells share no block"
    p = claim.block_p
    if isinstance(p, str) or p is None or math.isnan(p):
        return ""
    return f"; method × block p = {p_text(p)}"


def claim_key(claim: FrameRow) -> tuple:
    return claim.claim, claim.task, claim.scale, claim.samples


def verdict_matrix(claims: pd.DataFrame, measures: tuple[str, ...]) -> str:
    """A Markdown table with one row per claim and (task, scale, samples) of ``claims``, a verdict
    column per measure of ``measures`` (:func:`verdict_cell`; ``—`` where none) and the mixed
    cells it compares (provenance.md; ``—`` for none)."""
    cells: dict[tuple, dict[str, str]] = {}
    mixed: dict[tuple, str] = {}
    for claim in claims.itertuples():
        cells.setdefault(claim_key(claim), {})[claim.metric] = verdict_cell(claim)
        mixed[claim_key(claim)] = claim.mixed_cells or "—"
    rows = [
        [name, task, scale, f"{samples:,}", *(found.get(m, "—") for m in measures)]
        + [mixed[(name, task, scale, samples)]]
        for (name, task, scale, samples), found in cells.items()
    ]
    header = ["claim", "task", "scale", "samples", *(MEASURES[m].label for m in measures)]
    return markdown_table([*header, "mixed cells"], rows)


def learning_rows(frames: Mapping[str, TableFrames | None]) -> pd.DataFrame:
    """Every table's learning rows (:func:`~rp1.report.learning.learning_table`), once each."""
    tables = [frame.learning for frame in frames.values() if frame is not None]
    tables = [table for table in tables if not table.empty]
    if not tables:
        return pd.DataFrame(columns=list(LEARNING_COLUMNS))
    return pd.concat(tables).drop_duplicates(["metric", "task", "scale", "samples"])


def learning_text(learning: pd.DataFrame) -> str:
    """A Markdown table: per (task, scale, samples), the untrained policy's median return, the
    method whose gain over it is clearest (its median return at N, the one-sided p)
    and whether the task learned (:mod:`rp1.report.learning`)."""
    rows = []
    for row in learning.drop_duplicates(["task", "scale", "samples"]).itertuples():
        p = "—" if math.isnan(row.gain_p) else f"{row.gain_p:.2g}"
        rows.append(
            [row.task, row.scale, f"{row.samples:,}", value_text(row.untrained, RETURN_MEASURES[0])]
            + [f"{method_label(row.top_method)}: {value_text(row.top_median, RETURN_MEASURES[0])}"]
            + [p, "yes" if row.learned else "**nothing learned**"]
        )
    header = [
        "task",
        "scale",
        "samples",
        "untrained",
        "clearest gain: return at N",
        "p",
        "learned",
    ]
    return markdown_table(header, rows)


INTRODUCTION = """\
Each claim is a comparison of the report's tables, a against b, judged on every measure of its
quantity (see index.md for the definitions):

- returns: **paper's best** (the paper's metric: the best of one evaluation per outer iteration,
  so it favours methods of short phases, which are evaluated more often), **return at N** (the
  policy in force at N), **best over the grid** (the best of the same number of evaluations for
  every method) and **area under the curve** (the mean return of the policy in force over the
  grid);
- the world models: the **test-set error** of the last fit (lower is better).

Each cell: the verdict, Δ = mean(a) − mean(b) with its 95 % bootstrap interval, and p_H, the
Holm–Bonferroni adjusted p of the claim's family (the comparisons of one table at one measure,
scale and sample count, on every task that learned). **holds**: a better with p_H < 0.05; **does
not hold**: worse with p_H < 0.05; **equivalent**: not significant, and both the interval and
Welch's 90 % interval (the two one-sided tests: `tost_low`, `tost_high` in claims.csv) inside
the equivalence margin (returns: ±10 % of the paper's RP1 median best return on the task at the
paper's sample count for N, 10⁴ or 10⁵; model error: ±10 % of b's mean error);
**inconclusive**: neither — every difference in the interval is consistent with the data;
**nothing learned**: no method's policy in force at N was shown to beat its own untrained policy
(per run, return at N minus iteration 0's; one-sided t-test per method, p < 0.05 for none),
so the comparison is not evidence for either method and is left out of every family. A verdict
that decides adds **but …** where its better method is not shown above its own untrained policy
on that measure ("only because Greedy fell below its untrained policy"); **moves with the
realisation** where it changes with another realisation of the same seeds (realisations.md);
**moves without seed s** where leaving seed s out of every cell of the task changes what the
verdict says (its kind, or its "but …"; claims.csv's `fragility` counts such seeds and
`fragile_without` names them: a verdict without the note survives every single leave-out);
**method × block p** where the two cells hold runs of several provenance blocks (one commit and
CPU each): the p that a − b is the same in every block in which both sides have two or more runs
(Cochran's Q; claims.csv's `blocks` gives each block's runs and difference, `block_p` the p);
**cells share no block** where no block holds runs of both cells, whose difference may then also
be one between commits or CPUs (or ones not recorded). The
last column names the cells compared whose runs mix commits, CPUs, settings or scoring
sources (provenance.md). claims.csv holds every number (t, p, p_holm, p_holm_all adjusted over
the whole table of one measure, scale and sample count, the probability of improvement, the
smallest detectable difference, each side's gain over its untrained policy), one row per claim,
task and measure.
"""


def claims_text(claims: pd.DataFrame, frames: Mapping[str, TableFrames | None]) -> str:
    """claims.md: a verdict matrix per quantity (a column per measure), then whether each task
    learned."""
    quantity_of = {spec.name: spec.quantity for spec in TABLES}
    sections = []
    for quantity, measures in QUANTITY_MEASURES.items():
        chosen = claims[claims["table"].map(quantity_of) == quantity]
        if chosen.empty:
            continue
        heading = (
            "Returns: a verdict per measure"
            if quantity == RETURN
            else "World models: test-set error (lower is better)"
        )
        sections.append(f"## {heading}\n\n{verdict_matrix(chosen, measures)}\n")
    learning = learning_rows(frames)
    if not learning.empty:
        sections.append(
            "## Did anything learn?\n\nPer task: the untrained policy's median return "
            "(iteration 0), the method whose policy in force at N gains most clearly over its own "
            "untrained policy (its median return at N; p: one-sided t-test of the runs' gains) and "
            "whether any method learned (one decision for every measure).\n\n"
            f"{learning_text(learning)}\n"
        )
    body = "\n".join(sections)
    return f"# The paper's claims and rp1's controls, task by task\n\n{INTRODUCTION}\n{body}"


COUNTED_AS: dict[str, str] = {
    HOLDS: "hold",
    FAILS: "do not hold",
    EQUIVALENT: EQUIVALENT,
    INCONCLUSIVE: INCONCLUSIVE,
    NOTHING_LEARNED: NOTHING_LEARNED,
}
"""Each kind of verdict, in the order :func:`verdict_summary` counts them, as it says a count."""


def verdict_summary(claims: pd.DataFrame) -> str:
    """One line for a terminal: how many verdicts ``claims`` (rows of :data:`CLAIM_COLUMNS`: one per
    claim, task, scale, sample count and measure) gives of each kind, e.g. ``12 verdicts: 3 hold, 0
    do not hold, 0 equivalent, 7 inconclusive, 2 nothing learned; 1 of the 3 decided with a winner
    not shown above its untrained policy``."""
    kinds = claims["verdict"].map(verdict_kind).value_counts()
    counts = ", ".join(f"{kinds.get(kind, 0)} {said}" for kind, said in COUNTED_AS.items())
    decided = kinds.get(HOLDS, 0) + kinds.get(FAILS, 0)
    notes = int(claims["verdict"].map(qualified).sum())
    return (
        f"{len(claims)} verdicts: {counts}; {notes} of the {decided} decided with a winner not "
        "shown above its untrained policy"
    )


def write_claims(
    frames: Mapping[str, TableFrames | None], out: Path, claims: pd.DataFrame | None = None
) -> list[Path]:
    """claims.csv, claims.md and learning.csv (:func:`learning_rows`, one row per task, scale and
    sample count: :data:`~rp1.report.learning.LEARNING_COLUMNS` but ``metric``) of the
    tables' ``frames`` (by table name) and their ``claims`` (:func:`claim_table` of ``frames``
    unless given: the report gives them with ``robust_to_realisation`` and ``mixed_cells``);
    nothing when no claim's comparison has runs."""
    claims = claim_table(frames) if claims is None else claims
    if claims.empty:
        return []
    learning = learning_rows(frames).drop(columns="metric")
    learning = learning.drop_duplicates(["task", "scale", "samples"])
    files = {
        "claims.csv": claims.to_csv(index=False),
        "claims.md": claims_text(claims, frames),
        "learning.csv": learning.to_csv(index=False),
    }
    for name, text in files.items():
        write_atomically(out / name, text.encode(), "report file")
    return [out / name for name in files]
