"""Throughput of one cell's seeds run as one program against the same seeds run as processes at
once, read from their run directories (``gpu_check.sh seeds`` writes both, stopped by a time
limit, so neither reaches its budget).

Two views, each of all seeds together:

- **at equal data**: for each band of real samples per seed (``--bands``), the samples the seeds
  gained in iterations ending inside the band (iterations 0 and 1, which compile, left out) over
  the seconds those iterations took, the mean over seeds of the summed ``wall_s``. In a program the
  seeds share every iteration's wall time; processes run side by side, so their mean is the
  band's wall time too. This compares the two at the same data sizes, where fits cost the same.
- **by elapsed time**: the samples all seeds had reached when each run's own clock (its summed
  ``wall_s``, process start-up not counted) passed ``--times`` seconds; compilation included.

    python benchmarks/program_vs_processes.py PROGRAM_DIR PROCESSES_DIR

Each directory holds ``<preset>/seed<N>/metrics.csv`` (one preset).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path

from identical_runs import read_rows

Run = list[dict[str, str]]


def seeds_of(root: Path) -> list[Run]:
    """The metrics rows of every run under ``root/<preset>/seed<N>``."""
    runs = [read_rows(m) for m in sorted(root.glob("*/seed*/metrics.csv"))]
    if not runs or not all(runs):
        sys.exit(f"program_vs_processes: error: no */seed*/metrics.csv with rows under {root}")
    return runs


def rate_in_band(runs: list[Run], low: int, high: int) -> float | None:
    """Samples per second of all runs together over their iterations (≥ 2) ending in (low, high]."""
    gained, seconds = 0, []
    for rows in runs:
        inside = [
            (int(rows[i]["samples"]) - int(rows[i - 1]["samples"]), float(rows[i]["wall_s"]))
            for i in range(2, len(rows))
            if low < int(rows[i]["samples"]) <= high
        ]
        if inside:
            gained += sum(g for g, _ in inside)
            seconds.append(sum(s for _, s in inside))
    return gained / statistics.mean(seconds) if seconds else None


def reached_by(runs: list[Run], elapsed: float) -> int:
    """Samples of all runs together: each run's samples at its last row whose summed ``wall_s``
    (from row 0 on) is at most ``elapsed`` s; 0 for a run that had not ended row 0 by then."""
    total = 0
    for rows in runs:
        clock, reached = 0.0, 0
        for row in rows:
            clock += float(row["wall_s"])
            if clock > elapsed:
                break
            reached = int(row["samples"])
        total += reached
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("program", type=Path)
    parser.add_argument("processes", type=Path)
    parser.add_argument("--bands", default="0,1000,3000,6000,9000,12000", help="samples per seed")
    parser.add_argument("--times", default="60,100,150,200", help="seconds of each run's clock")
    args = parser.parse_args()
    ways = {"program": seeds_of(args.program), "processes": seeds_of(args.processes)}
    edges = [int(b) for b in args.bands.split(",")]
    print("| samples per seed | program, samples/s | processes, samples/s | processes ÷ program |")
    print("|---|---|---|---|")
    for low, high in itertools.pairwise(edges):
        one, many = (rate_in_band(ways[w], low, high) for w in ("program", "processes"))
        ratio = f"{many / one:.2f}" if one and many else "—"
        cells = [f"{r:,.0f}" if r else "—" for r in (one, many)]
        print(f"| {low:,}–{high:,} | {cells[0]} | {cells[1]} | {ratio} |")
    print()
    print("| each run's clock, s | program, samples | processes, samples |")
    print("|---|---|---|")
    for elapsed in (float(t) for t in args.times.split(",")):
        print(
            f"| {elapsed:g} | {reached_by(ways['program'], elapsed):,} | "
            f"{reached_by(ways['processes'], elapsed):,} |"
        )


if __name__ == "__main__":
    main()
