"""Compare two sets of runs that ``rp1 report`` would table as one: the same task, method and
scale, differing in a setting (``--set model.reward=learned``, say).

For each directory: median [IQR] of the best evaluation return of a trained policy at ``--at``
real samples over its runs (as ``rp1 report``'s Table 1 counts them), the per-seed values, and
the median wall time per run (sum of ``wall_s``) and per fit and policy training (``fit_s``,
``policy_s``); then Welch's t of A vs B.

Usage::

    python benchmarks/compare_runs.py A_DIR B_DIR [--at 10000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rp1.report.runs_table import load_runs
from rp1.report.stats import best_at, summarise, welch


def describe(root: Path, at: float) -> np.ndarray:
    """Print the summary of the runs under ``root``; return their bests at ``at`` samples."""
    metrics = load_runs(root).metrics
    best = best_at(metrics, at)
    cell = summarise(best.to_numpy())
    per_seed = metrics.groupby("run")["seed"].first()
    seeds = ", ".join(f"{per_seed[run]}: {value:.1f}" for run, value in best.items())
    wall = metrics.groupby("run")["wall_s"].sum()
    print(
        f"{root}: {cell.n} runs, median best at {at:,.0f} samples {cell.median:.1f} [{cell.q25:.1f}, {cell.q75:.1f}] ({seeds})"
    )
    print(
        f"  wall time per run {wall.median():.0f} s (median); per iteration: "
        f"fit {metrics['fit_s'].median():.1f} s, policy training {metrics['policy_s'].median():.1f} s (medians)"
    )
    return best.to_numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--at", type=float, default=10_000)
    args = parser.parse_args()
    a, b = describe(args.a, args.at), describe(args.b, args.at)
    test = welch(a, b)
    print(f"Welch t (A vs B) = {test.t:.2f}, p = {test.p:.3f}")


if __name__ == "__main__":
    main()
