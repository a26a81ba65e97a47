"""Whether a change of rp1's code changes its results: the same presets and seeds trained by the
code before and after it, compared per task and method with ``rp1 report``'s measures and its
verdicts.

    python benchmarks/code_effect.py BEFORE_ROOT AFTER_ROOT [--samples 10000]

Each root holds runs as ``rp1 sweep`` writes them. Per task, method and measure (the four return
measures and the test-set error at ``--samples`` real samples, rp1.report.measures): the
median over the seeds each way, the difference of means after − before with its 95 % bootstrap
interval, Welch's 90 % (two one-sided tests) interval, the equivalence margin
(rp1.report.significance: a tenth of the paper's RP1 return on the task, a tenth of the
before code's mean test-set error), Welch's p, the Holm-adjusted p over every row, and the verdict
``rp1 report`` gives such a comparison (``holds`` / ``does not hold`` read as "after higher" /
"after lower"; ``equivalent``; ``inconclusive``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from rp1.report.measures import MEASURES, RETURN_MEASURES, TEST_ERROR, run_tables, values_at
from rp1.report.runs_table import load_runs
from rp1.report.significance import error_margin, holm, return_margin, verdict
from rp1.report.stats import mean_difference, tost_interval, welch

NOT_SCREENED = dict.fromkeys(("gain_p_a", "fall_p_a", "gain_p_b", "fall_p_b"), np.nan)
"""The report's winner-learned-nothing screen (:func:`rp1.report.significance.winner_note`)
does not apply: both sides are one method, before and after a change of code."""


def per_run(root: Path, samples: int) -> pd.DataFrame:
    """One row per run under ``root``: task, method, seed and every measure's value at ``samples``."""
    loaded = load_runs(root)
    tables = run_tables(loaded.metrics, loaded.evaluations)
    out = loaded.metrics.groupby("run").agg(
        task=("task", "first"), method=("method", "first"), seed=("seed", "first")
    )
    for name in (*RETURN_MEASURES, TEST_ERROR):
        out[name] = values_at(tables, MEASURES[name], samples)
    return out.reset_index(drop=True)


def compare(before: pd.DataFrame, after: pd.DataFrame, samples: int) -> pd.DataFrame:
    """One row per task, method and measure (see the module docstring)."""
    rows = []
    for (task, method), a in after.groupby(["task", "method"]):
        b = before[(before["task"] == task) & (before["method"] == method)]
        for name in (*RETURN_MEASURES, TEST_ERROR):
            x, y = a[name].dropna().to_numpy(float), b[name].dropna().to_numpy(float)
            diff = mean_difference(x, y)
            tost_low, tost_high = tost_interval(x, y)
            test = welch(x, y)
            margin = error_margin(y) if name == TEST_ERROR else return_margin(task, samples)
            rows.append(
                dict(
                    task=task,
                    method=method,
                    measure=MEASURES[name].label,
                    seeds=f"{len(y)} / {len(x)}",
                    before=np.median(y) if len(y) else np.nan,
                    after=np.median(x) if len(x) else np.nan,
                    diff=diff.diff,
                    diff_low=diff.low,
                    diff_high=diff.high,
                    tost_low=tost_low,
                    tost_high=tost_high,
                    margin=margin,
                    t=test.t,
                    p=test.p,
                )
            )
    table = pd.DataFrame(rows)
    tested = table["p"].notna()
    table["p_holm"] = np.nan
    table.loc[tested, "p_holm"] = holm(table.loc[tested, "p"].to_numpy())
    table["verdict"] = [
        verdict(SimpleNamespace(**r, learned=True, samples=samples, **NOT_SCREENED), g)
        for r in table.to_dict("records")
    ]
    return table


def g(value: float) -> str:
    """``value`` to three significant digits, with a unicode minus."""
    return f"{value:.3g}".replace("-", "−")


def markdown(table: pd.DataFrame) -> str:
    """``table`` as Markdown."""
    header = (
        "| task | method | measure | seeds (before / after) | before | after "
        "| Δ (after − before) [95 % CI] | TOST 90 % | margin | p | p_Holm | verdict |"
    )
    lines = [header, "|---" * 12 + "|"]
    for r in table.itertuples():
        lines.append(
            f"| {r.task} | {r.method} | {r.measure} | {r.seeds} | {g(r.before)} | {g(r.after)} "
            f"| {g(r.diff)} [{g(r.diff_low)}, {g(r.diff_high)}] | [{g(r.tost_low)}, "
            f"{g(r.tost_high)}] | ±{g(r.margin)} | {g(r.p)} | {g(r.p_holm)} | {r.verdict} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--samples", type=int, default=10_000)
    args = parser.parse_args()
    before, after = per_run(args.before, args.samples), per_run(args.after, args.samples)
    print(markdown(compare(before, after, args.samples)))


if __name__ == "__main__":
    main()
