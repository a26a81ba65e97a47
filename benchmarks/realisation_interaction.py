"""Does a method difference belong to its seeds or to one realisation of them? (issue 59)

Reads a report's runs under ``ROOT`` (``rp1 report``'s rule: per task, scale, method and seed the
first complete run by path is kept, the others are other realisations) and, for methods ``A`` and
``B`` of ``TASK`` at ``SAMPLES`` real samples, on each measure named, the mean difference A − B
over seeds (with its Welch standard error) in three blocks: the kept runs of the seeds in
``--swapped`` (the seeds that have a second realisation), the kept runs of every other seed, and
the other realisations of the swapped seeds. Then the block × method interaction of each pair of
blocks: ``z = (d₁ − d₂) / √(SE₁² + SE₂²)`` with its two-sided normal p (the report's test of a
verdict's blocks, :func:`rp1.report.stats.heterogeneity`, for two blocks; the test of
``benchmarks/RESULTS.md``, "Hopper's seeds 0–4 again, on another CPU").

Usage::

    python benchmarks/realisation_interaction.py benchmarks/runs/pilot1e5 --task hopper \\
        --methods rp1 greedy --samples 100000 --swapped 0-4
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from rp1.config.sources import parse_seeds
from rp1.core.errors import ConfigError
from rp1.report.measures import AUC, GRID_BEST, MEASURES, PAPER_BEST, run_tables, values_at
from rp1.report.runs_table import LoadedRuns, load_runs
from rp1.report.stats import heterogeneity, welch_error


def block_differences(
    kept: pd.DataFrame, other: pd.DataFrame, methods: tuple[str, str]
) -> dict[str, tuple[float, float, int]]:
    """Per block (``kept``: the kept runs' per-seed values, ``other``: the other realisations'),
    ``(mean A − mean B, its SE, seeds a side)``, NaNs for a block a side lacks; each frame has
    columns method, seed, value, swapped."""
    blocks = {}
    for name, frame in (
        ("kept, swapped seeds", kept[kept["swapped"]]),
        ("kept, other seeds", kept[~kept["swapped"]]),
        ("other realisation", other),
    ):
        a = frame.loc[frame["method"] == methods[0], "value"].to_numpy(float)
        b = frame.loc[frame["method"] == methods[1], "value"].to_numpy(float)
        if not (len(a) and len(b)):
            blocks[name] = (math.nan, math.nan, 0)
            continue
        error, _ = welch_error(a, b)
        blocks[name] = (float(a.mean() - b.mean()), error, min(len(a), len(b)))
    return blocks


def per_seed(
    loaded: LoadedRuns,
    task: str,
    methods: tuple[str, str],
    samples: int,
    measure: str,
    swapped: list[int],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The kept runs' and the other realisations' (of ``loaded``, :func:`load_runs`'s) per-seed
    values of ``measure`` at ``samples`` for ``task`` and ``methods`` (columns method, seed,
    value, swapped)."""
    frames = []
    for metrics, evaluations in (
        (loaded.metrics, loaded.evaluations),
        (loaded.others, loaded.other_evaluations),
    ):
        mine = metrics[(metrics["task"] == task) & metrics["method"].isin(methods)]
        grid = None
        if evaluations is not None and not evaluations.empty:
            grid = evaluations[evaluations["run"].isin(set(mine["run"]))]
        values = values_at(run_tables(mine, grid), MEASURES[measure], samples)
        header = mine.groupby("run")[["method", "seed"]].first()
        frame = header.loc[values.index].assign(value=values.to_numpy(float))
        frame["seed"] = frame["seed"].astype(int)
        frame["swapped"] = frame["seed"].isin(swapped)
        frames.append(frame)
    kept, other = frames
    return kept, other[other["swapped"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--task", required=True)
    parser.add_argument("--methods", nargs=2, required=True, metavar=("A", "B"))
    parser.add_argument("--samples", type=int, required=True)
    parser.add_argument("--swapped", required=True, help="the seeds realised twice, e.g. 0-4")
    parser.add_argument("--measures", nargs="*", default=[PAPER_BEST, GRID_BEST, AUC])
    args = parser.parse_args(argv)
    try:
        swapped = parse_seeds(args.swapped)
    except ConfigError as error:
        parser.error(str(error))
    methods = tuple(args.methods)
    loaded = load_runs(args.root)
    for measure in args.measures:
        kept, other = per_seed(loaded, args.task, methods, args.samples, measure, swapped)
        blocks = block_differences(kept, other, methods)
        print(f"## {MEASURES[measure].label}: {methods[0]} − {methods[1]} at {args.samples:,}")
        for name, (d, se, n) in blocks.items():
            print(f"  {name:22s} {d:9.1f} ± {se:6.1f} (SE; {n} seeds a side)")
        names = list(blocks)
        for i, j in ((0, 1), (2, 1), (2, 0)):
            (d1, s1, _), (d2, s2, _) = blocks[names[i]], blocks[names[j]]
            z = (d1 - d2) / math.sqrt(s1**2 + s2**2)
            p = heterogeneity(np.array([d1, d2]), np.array([s1, s2]))
            print(f"  {names[i]} vs {names[j]}: z = {z:.2f}, p = {p:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
