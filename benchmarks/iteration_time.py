"""Where a run's iterations go: the wall time of an outer iteration and its parts, per run.

Reads each run directory's ``metrics.csv`` and prints, over its iterations from ``--from`` on (the
first ones compile): their number, the median wall seconds of one iteration (``wall_s``, the
agent's step: fit, policy training, evaluation, collection and the normalisers' refresh; the
checkpoint written after it is not counted) and of its timed parts (``fit_s``, ``policy_s``,
``collect_s``), the median of the rest (``wall_s`` less the three: evaluations, the normalisers'
refresh, the test-set error, bookkeeping) and the sum of ``wall_s``.

Usage::

    python benchmarks/iteration_time.py RUN_DIR [RUN_DIR ...] [--from 2]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from identical_runs import read_rows

PARTS = ("fit_s", "policy_s", "collect_s")


def iteration_times(run: Path, first: int) -> dict[str, float]:
    """The medians (and ``iterations``, ``total_s``) of ``run``'s iterations ``>= first``."""
    rows = [r for r in read_rows(run / "metrics.csv") if int(r["iteration"]) >= first]
    if not rows:
        raise SystemExit(f"{run}: no iteration from {first} on")

    def seconds(row: dict[str, str], column: str) -> float:
        return float(row[column] or 0.0)

    rest = [seconds(r, "wall_s") - sum(seconds(r, p) for p in PARTS) for r in rows]
    return {
        "iterations": len(rows),
        "wall_s": statistics.median(seconds(r, "wall_s") for r in rows),
        **{p: statistics.median(seconds(r, p) for r in rows) for p in PARTS},
        "rest_s": statistics.median(rest),
        "total_s": sum(seconds(r, "wall_s") for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--from", dest="first", type=int, default=2)
    args = parser.parse_args()
    columns = ("iterations", "wall_s", *PARTS, "rest_s", "total_s")
    print("| run | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for run in args.runs:
        times = iteration_times(run, args.first)
        cells = [f"{times[c]:.0f}" if c == "iterations" else f"{times[c]:.2f}" for c in columns]
        print(f"| {run} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
