"""What the authors' ensemble training (``model.dealing=round-robin``) changes against rp1's
(``shuffle``): the same presets and seeds trained both ways, compared per task and method.

    python benchmarks/dealing_effect.py SHUFFLE_ROOT ROUND_ROBIN_ROOT [--samples 10000]

Each root holds runs as ``rp1 sweep`` writes them. Per task and method, one row per quantity: its
median over the seeds each way, the difference of means round-robin − shuffle with its 95 %
bootstrap interval, Welch's p and the Holm-adjusted p over every row of the table. Quantities, per
run: fit seconds summed over the run and the median per iteration, the median epochs a fit took,
the median members' reward disagreement per imagined step (``bonus``, whatever λ the policy was
trained with), and at ``--samples`` real samples the report's return measures and the test-set
error (rp1.report.measures). Iterations ≥ 1 only (iteration 0 fits nothing).

Decided before any run of either root was seen (issue 36): the 10⁵-sample pilot uses round-robin
if, on both tasks and for both methods, it cuts the fit time per run by at least 25 % and no return
measure is significantly lower with it (Holm-adjusted p < 0.05 and Δ < 0); otherwise shuffle, the
default that follows the specification.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from rp1.report.measures import MEASURES, RETURN_MEASURES, TEST_ERROR, run_tables, values_at
from rp1.report.runs_table import load_runs
from rp1.report.significance import holm
from rp1.report.stats import mean_difference, welch

DEALINGS = ("shuffle", "round-robin")
PerRun = Callable[[pd.DataFrame], float]
"""A run's value of a quantity, from its ``metrics.csv`` rows of iterations ≥ 1."""

RUN_QUANTITIES: dict[str, PerRun] = {
    "fit s per run": lambda rows: float(rows["fit_s"].sum()),
    "fit s per iteration": lambda rows: float(rows["fit_s"].median()),
    "epochs per fit": lambda rows: float(rows["model_epochs"].median()),
    "disagreement per step": lambda rows: float(rows["bonus"].median()),
}


def per_run(root: Path, samples: int) -> pd.DataFrame:
    """One row per run under ``root``: task, method, seed and every quantity's value."""
    loaded = load_runs(root)
    tables = run_tables(loaded.metrics, loaded.evaluations)
    trained = loaded.metrics[loaded.metrics["iteration"] >= 1]
    out = trained.groupby("run").agg(
        task=("task", "first"), method=("method", "first"), seed=("seed", "first")
    )
    for name, value in RUN_QUANTITIES.items():
        out[name] = trained.groupby("run").apply(value, include_groups=False)
    for name in (*RETURN_MEASURES, TEST_ERROR):
        measure = MEASURES[name]
        out[f"{measure.label} at {samples:,}"] = values_at(tables, measure, samples)
    return out.reset_index(drop=True)


def compare(shuffle: pd.DataFrame, round_robin: pd.DataFrame) -> pd.DataFrame:
    """One row per task, method and quantity: medians each way, Δ [interval], p, p_holm."""
    rows = []
    for (task, method), a in round_robin.groupby(["task", "method"]):
        b = shuffle[(shuffle["task"] == task) & (shuffle["method"] == method)]
        for quantity in a.columns.drop(["task", "method", "seed"]):
            x, y = a[quantity].dropna().to_numpy(float), b[quantity].dropna().to_numpy(float)
            diff = mean_difference(x, y)
            rows.append(
                dict(
                    task=task,
                    method=method,
                    quantity=quantity,
                    seeds=f"{len(y)} / {len(x)}",
                    shuffle=np.median(y) if len(y) else np.nan,
                    round_robin=np.median(x) if len(x) else np.nan,
                    diff=diff.diff,
                    low=diff.low,
                    high=diff.high,
                    p=welch(x, y).p,
                )
            )
    table = pd.DataFrame(rows)
    tested = table["p"].notna()
    table["p_holm"] = np.nan
    table.loc[tested, "p_holm"] = holm(table.loc[tested, "p"].to_numpy())
    return table


def g(value: float) -> str:
    """``value`` to three significant digits, with a unicode minus."""
    return f"{value:.3g}".replace("-", "−")


def markdown(table: pd.DataFrame) -> str:
    """``table`` as Markdown."""
    header = (
        "| task | method | quantity | seeds (shuffle / round-robin) | shuffle | round-robin "
        "| Δ (round-robin − shuffle) [95 % CI] | p | p_Holm |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for r in table.itertuples():
        lines.append(
            f"| {r.task} | {r.method} | {r.quantity} | {r.seeds} | {g(r.shuffle)} | "
            f"{g(r.round_robin)} | {'+' if r.diff > 0 else ''}{g(r.diff)} [{g(r.low)}, {g(r.high)}] "
            f"| {g(r.p)} | {g(r.p_holm)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shuffle", type=Path)
    parser.add_argument("round_robin", type=Path)
    parser.add_argument("--samples", type=int, default=10_000)
    args = parser.parse_args()
    table = compare(per_run(args.shuffle, args.samples), per_run(args.round_robin, args.samples))
    print(markdown(table))


if __name__ == "__main__":
    main()
