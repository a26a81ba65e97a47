"""The paper's claims, one verdict per task: ``claims.md`` / ``claims.csv`` of ``rp1 report``.

Each claim is one comparison column of Tables 1–3 (:data:`~rp1.experiments.tables.TABLES`), RP1
first; for every (task, scale, samples) row with that comparison the verdict is read from its
Welch t-test: RP1 ahead with p < 0.05 (``holds``), behind with p < 0.05 (``does not hold``), or
neither (``inconclusive``; also with fewer than 2 seeds a side).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from rp1.experiments.paper import METHOD_LABELS
from rp1.experiments.stats import significant
from rp1.experiments.tables import TableFrames, markdown_table, number
from rp1.runs import write_atomically

CLAIMS: tuple[tuple[str, str, str], ...] = (
    ("RP1 beats Greedy (Table 1)", "table1", "T1"),
    ("RP1 beats V+R (Table 1)", "table1", "T2"),
    ("adaptive λ beats λ = 0 (Table 3)", "table3", "t (RP1 vs λ = 0)"),
    ("early stopping matters (Table 3)", "table3", "t (RP1 vs No EarlyStop)"),
    ("reward variance beats state variance (Table 2)", "table2", "t (Reward vs State)"),
)
"""(claim, table, comparison column of that table): what the paper says RP1's comparisons show."""

CLAIM_COLUMNS: tuple[str, ...] = (
    *("claim", "task", "scale", "samples", "verdict", "method_a", "method_b"),
    *("t", "p", "prob_improvement", "pi_low", "pi_high"),
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
        if frames.get(table) is None:
            continue
        tests = frames[table].tests
        for test in tests[tests["comparison"] == comparison].itertuples():
            rows.append(
                (claim, test.task, test.scale, test.samples, verdict(test.t, test.p))
                + (test.method_a, test.method_b, test.t, test.p)
                + (test.prob_improvement, test.pi_low, test.pi_high)
            )
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def cell_text(cells: pd.DataFrame, row, method: str, label: bool) -> str:
    """``[Method ]median [q25, q75]`` of one cell of ``cells`` (indexed by task, scale, samples
    and method), one decimal."""
    cell = cells.loc[(row.task, row.scale, row.samples, method)]
    median, q25, q75 = (number(cell[column], decimals=1) for column in ("median", "q25", "q75"))
    text = f"{median} [{q25}, {q75}]"
    return f"{METHOD_LABELS.get(method, method)} {text}" if label else text


def claims_text(claims: pd.DataFrame, frames: dict[str, TableFrames | None]) -> str:
    """claims.md: the verdict table with both medians, t (p) and the probability of improvement."""
    index = ["task", "scale", "samples", "method"]
    cells = {name: table.cells.set_index(index) for name, table in frames.items() if table is not None}
    table_of = {claim: table for claim, table, _ in CLAIMS}
    rows = [
        [
            row.claim,
            row.task,
            row.scale,
            f"{row.samples:,}",
            f"**{row.verdict}**",
            cell_text(cells[table_of[row.claim]], row, row.method_a, label=False),
            cell_text(cells[table_of[row.claim]], row, row.method_b, label=True),
            "—" if math.isnan(row.t) else f"{number(row.t)} (p = {row.p:.2g})",
            "—" if math.isnan(row.pi_low) else f"{row.prob_improvement:.2f} [{row.pi_low:.2f}, {row.pi_high:.2f}]",
        ]
        for row in claims.itertuples()
    ]
    header = ["claim", "task", "scale", "samples", "verdict", "RP1", "other", "t (p)", "PI [95 % CI]"]
    return (
        "# The paper's claims, task by task\n\n"
        "Each claim is a comparison of Tables 1–3, RP1 against the method named: median best "
        "evaluation return [25th, 75th percentile], Welch's t (p) and the probability of "
        "improvement P(RP1 > other) with its 95 % bootstrap interval (see index.md). **holds**: "
        "RP1 ahead with p < 0.05; **does not hold**: behind with p < 0.05; **inconclusive**: "
        "neither. Figure 2's direction: fig2_lambda.md.\n\n"
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
