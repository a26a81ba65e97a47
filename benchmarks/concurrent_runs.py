"""Throughput of k copies of one run trained at the same time on one device.

``gpu_check.sh concurrency`` starts, for each k, k processes that train the same preset and seed
into ``ROOT/k<K>/copy<I>`` for the same wall time. This script reads their ``metrics.csv`` and
prints, per k, over the iterations every run of every k reached (iteration 0, which compiles, left
out): the median wall seconds of one iteration, the real samples per second of all k runs together,
that throughput over k = 1's, and whether the k copies wrote identical metrics (every non-timing
column), which says concurrency leaves the numbers alone. It also splits k = 1's iterations into
fit, policy training, real collection and the rest (evaluation, checkpoint, bookkeeping), in s.

    python benchmarks/concurrent_runs.py ROOT
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from identical_runs import first_difference, read_rows

PARTS = ("fit_s", "policy_s", "collect_s")


def runs_by_k(root: Path) -> dict[int, list[list[dict[str, str]]]]:
    """Each k's runs (their metrics rows), from ``root/k<K>/copy<I>/metrics.csv``."""
    found: dict[int, list[list[dict[str, str]]]] = {}
    for group in sorted(root.glob("k*"), key=lambda p: int(p.name[1:])):
        rows = [read_rows(m) for m in sorted(group.glob("copy*/metrics.csv"))]
        found[int(group.name[1:])] = [r for r in rows if r]
    return found


def iteration_window(groups: dict[int, list[list[dict[str, str]]]]) -> int:
    """The last iteration that every run reached (rows 1..that are compared)."""
    return min(len(rows) for runs in groups.values() for rows in runs) - 1


def throughput(runs: list[list[dict[str, str]]], last: int) -> tuple[float, float]:
    """(median s per iteration, samples per s of all runs together) over iterations 1..last."""
    per_iteration = [float(row["wall_s"]) for rows in runs for row in rows[1 : last + 1]]
    rate = sum(
        (int(rows[last]["samples"]) - int(rows[0]["samples"]))
        / sum(float(row["wall_s"]) for row in rows[1 : last + 1])
        for rows in runs
    )
    return statistics.median(per_iteration), rate


def identical(runs: list[list[dict[str, str]]], last: int) -> bool:
    """Whether every copy's first ``last + 1`` rows equal the first copy's (non-timing columns)."""
    return all(first_difference(runs[0][: last + 1], rows[: last + 1]) is None for rows in runs[1:])


def split(rows: list[dict[str, str]], last: int) -> dict[str, float]:
    """Median seconds per iteration of each part of a run's iterations 1..last, and the rest."""
    window = rows[1 : last + 1]
    parts = {p: statistics.median(float(r[p]) for r in window) for p in PARTS}
    parts["rest"] = statistics.median(
        float(r["wall_s"]) - sum(float(r[p]) for p in PARTS) for r in window
    )
    parts["wall_s"] = statistics.median(float(r["wall_s"]) for r in window)
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    args = parser.parse_args()
    groups = runs_by_k(args.root)
    if not groups or any(not runs for runs in groups.values()):
        sys.exit(f"concurrent_runs: error: no k*/copy*/metrics.csv with rows under {args.root}")
    last = iteration_window(groups)
    if last < 1:
        sys.exit("concurrent_runs: error: some run wrote only its first iteration; run longer")
    print(f"iterations 1..{last} of each run (iteration 0 compiles)")
    print(
        "| concurrent runs | s per iteration (median) | samples/s, all runs | vs one run | copies identical |"
    )
    print("|---|---|---|---|---|")
    base = None
    for k, runs in groups.items():
        seconds, rate = throughput(runs, last)
        base = base or rate
        same = "yes" if identical(runs, last) else "NO"
        print(f"| {k} | {seconds:.2f} | {rate:,.0f} | {rate / base:.2f}× | {same} |")
    first = min(groups)
    parts = split(groups[first][0], last)
    print(
        f"\none run of k = {first}, median s per iteration: "
        + ", ".join(f"{p} {v:.2f}" for p, v in parts.items())
    )


if __name__ == "__main__":
    main()
