"""The paper's claims and rp1's controls, one verdict per task: ``claims.md`` / ``claims.csv`` of
``rp1 report``.

Each claim is one comparison column of the report's tables (:data:`~rp1.experiments.tables.TABLES`),
"a beats b"; for every (task, scale, samples) row with that comparison the verdict is read from
its Welch t-test: a ahead with p < 0.05 (``holds``), behind with p < 0.05 (``does not hold``), or
neither (``inconclusive``; also with fewer than 2 seeds a side). "Ahead" is a higher return, or a
lower test-set error for the world-model claims. Each claim also states the smallest difference
its test detects at 80 % power (``detectable``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from rp1.config.methods import method_label
from rp1.experiments.stats import significant
from rp1.experiments.tables import RETURN, FrameRow, TableFrames, markdown_table, number
from rp1.rundir.files import write_atomically

CLAIMS: tuple[tuple[str, str, str], ...] = (
    ("RP1 beats Greedy (Table 1)", "table1", "T1"),
    ("RP1 beats V+R (Table 1)", "table1", "T2"),
    ("adaptive λ beats λ = 0 (Table 3)", "table3", "t (RP1 vs λ = 0)"),
    ("early stopping matters (Table 3)", "table3", "t (RP1 vs No EarlyStop)"),
    ("reward variance beats state variance (Table 2)", "table2", "t (Reward vs State)"),
    (
        "phases of the matched length beat 3,000-sample phases, Greedy (control)",
        "table5",
        "t (matched Greedy vs Greedy)",
    ),
    (
        "phases of the matched length beat 3,000-sample phases, No EarlyStop (control)",
        "table5",
        "t (matched No EarlyStop vs No EarlyStop)",
    ),
    (
        "PCA early stopping beats fixed phases of the same length, λ = 0 (control)",
        "table4",
        "t (λ = 0 vs matched Greedy)",
    ),
    (
        "PCA early stopping beats fixed phases of the same length, RP1 (control)",
        "table4",
        "t (RP1 vs matched No EarlyStop)",
    ),
    ("the bonus helps: λ = 0.5 beats λ = 0 (control)", "table4", "t (λ = 0.5 vs λ = 0)"),
    ("RP1's models are better than λ = 0's (test-set error)", "table_model", "t (RP1 vs λ = 0)"),
    (
        "RP1's models are better than matched Greedy's (test-set error)",
        "table_model",
        "t (RP1 vs matched Greedy)",
    ),
    (
        "the bonus makes better models: λ = 0.5 vs λ = 0 (test-set error)",
        "table_model",
        "t (λ = 0.5 vs λ = 0)",
    ),
)
"""(claim, table, comparison column of that table): what the paper says RP1's comparisons show."""

CLAIM_COLUMNS: tuple[str, ...] = (
    *("claim", "task", "scale", "samples", "verdict", "method_a", "method_b"),
    *("t", "p", "prob_improvement", "pi_low", "pi_high", "detectable"),
)


def verdict(t: float, p: float) -> str:
    """``holds`` (t > 0, p < 0.05), ``does not hold`` (t < 0, p < 0.05) or ``inconclusive``
    (:func:`~rp1.experiments.stats.significant`)."""
    if not significant(p):
        return "inconclusive"
    return "holds" if t > 0 else "does not hold"


def claim_table(frames: dict[str, TableFrames | None]) -> pd.DataFrame:
    """One row per claim and (task, scale, samples) whose comparison has runs on both sides, in
    :data:`CLAIMS` order, then table order: :data:`CLAIM_COLUMNS`."""
    rows = []
    for claim, table, comparison in CLAIMS:
        frame = frames.get(table)
        if frame is None:
            continue
        tests = frame.tests
        for test in tests[tests["comparison"] == comparison].itertuples():
            rows.append(
                (claim, test.task, test.scale, test.samples, verdict(test.t, test.p))
                + (test.method_a, test.method_b, test.t, test.p)
                + (test.prob_improvement, test.pi_low, test.pi_high, test.detectable)
            )
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def value_text(value: float, quantity: str) -> str:
    """A return with one decimal, a model error with 3 significant digits."""
    return number(value, decimals=1) if quantity == RETURN else f"{value:.3g}"


def cell_text(cells: pd.DataFrame, row: FrameRow, method: str, quantity: str) -> str:
    """``Method median [q25, q75]`` of one cell of ``cells`` (indexed by task, scale, samples and
    method), written by :func:`value_text`."""
    cell = cells.loc[(row.task, row.scale, row.samples, method)]
    median, q25, q75 = (value_text(cell[column], quantity) for column in ("median", "q25", "q75"))
    return f"{method_label(method)} {median} [{q25}, {q75}]"


def claims_text(claims: pd.DataFrame, frames: dict[str, TableFrames | None]) -> str:
    """claims.md: the verdict table with both medians, t (p) and the probability of improvement."""
    index = ["task", "scale", "samples", "method"]
    cells = {
        name: table.cells.set_index(index) for name, table in frames.items() if table is not None
    }
    table_of = {claim: table for claim, table, _ in CLAIMS}
    rows = []
    for row in claims.itertuples():
        table = frames[table_of[row.claim]]
        assert table is not None  # a claim's row comes from a table with runs (claim_table)
        quantity = table.spec.quantity
        rows.append(
            [
                row.claim,
                row.task,
                row.scale,
                f"{row.samples:,}",
                f"**{row.verdict}**",
                cell_text(cells[table.spec.name], row, row.method_a, quantity),
                cell_text(cells[table.spec.name], row, row.method_b, quantity),
                "—" if math.isnan(row.t) else f"{number(row.t)} (p = {row.p:.2g})",
                "—"
                if math.isnan(row.pi_low)
                else f"{row.prob_improvement:.2f} [{row.pi_low:.2f}, {row.pi_high:.2f}]",
                "—" if math.isnan(row.detectable) else value_text(row.detectable, quantity),
            ]
        )
    header = [
        "claim",
        "task",
        "scale",
        "samples",
        "verdict",
        "a",
        "b",
        "t (p)",
        "PI [95 % CI]",
        "detectable (80 %)",
    ]
    return (
        "# The paper's claims and rp1's controls, task by task\n\n"
        "Each claim is a comparison of the report's tables, a against b: median [25th, 75th "
        "percentile] of the per-seed best evaluation return (or, for the world-model claims, of "
        "the test-set error of the last fit, lower is better), Welch's t (p) and the probability of "
        "improvement P(a better than b) with its 95 % bootstrap interval (see index.md); t > 0 "
        "when a is better. **holds**: a better with p < 0.05; **does not hold**: worse with "
        "p < 0.05; **inconclusive**: neither. detectable (80 %): the smallest difference of means "
        "that Welch's test at p < 0.05 detects with probability 0.8 at these seed counts and "
        "spreads (normal-theory approximation). Figure 2's direction: fig2_lambda.md.\n\n"
        f"{markdown_table(header, rows)}\n"
    )


def write_claims(frames: dict[str, TableFrames | None], out: Path) -> list[Path]:
    """claims.csv and claims.md of the tables' ``frames`` (by table name); nothing when no
    claim's comparison has runs."""
    claims = claim_table(frames)
    if claims.empty:
        return []
    write_atomically(out / "claims.csv", claims.to_csv(index=False).encode(), "report file")
    write_atomically(out / "claims.md", claims_text(claims, frames).encode(), "report file")
    return [out / "claims.csv", out / "claims.md"]
