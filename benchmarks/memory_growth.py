"""Resident memory and compilations of a run, iteration by iteration.

Trains one run (``rp1 train``'s code: run directory, checkpoints, policy files) and, after every
iteration, records the process's resident memory (RSS), the executables JAX has compiled so far and
those it still holds (:mod:`rp1.core.executables`). Prints one line per iteration, writes them as CSV
with ``--csv``, and ends with the growth per iteration over the second half of the run (after
warm-up), which a run whose memory stays flat keeps near zero.

Usage::

    python benchmarks/memory_growth.py --preset halfcheetah-quick --budget 30000 [--set k=v …] [--csv FILE] [--out DIR]

``--out DIR`` keeps the run directory (its ``metrics.csv`` times each iteration's parts,
:mod:`iteration_time`); without it the run is written to a temporary one. The script reads only
``rp1.train``, ``rp1.config`` and ``rp1.core.executables``, so it also measures an earlier rp1
(``PYTHONPATH=OLD/src``).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jax

import rp1.train
from rp1.config import resolve
from rp1.core import executables
from rp1.train import run_training

COLUMNS = ("iteration", "samples", "rss_mb", "compilations", "held", "wall_s")


def rss_mb() -> float:
    """This process's resident memory in MiB (Linux: ``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def recording(make_agent: Any, rows: list[dict[str, Any]]) -> Any:
    """``make_agent`` whose agents append a row of :data:`COLUMNS` to ``rows`` after every step."""

    def make(cfg: Any) -> Any:
        agent = make_agent(cfg)
        step, start = agent.step, time.perf_counter()

        def recorded_step(state: Any) -> Any:
            state, row = step(state)
            rows.append(
                {
                    "iteration": row["iteration"],
                    "samples": state.samples,
                    "rss_mb": round(rss_mb(), 1),
                    "compilations": executables.compilations(),
                    "held": executables.held(),
                    "wall_s": round(time.perf_counter() - start, 1),
                }
            )
            print(*(rows[-1][c] for c in COLUMNS), sep="\t", flush=True)
            return state, row

        agent.step = recorded_step
        return agent

    return make


def second_half_growth(rows: list[dict[str, Any]], column: str) -> float:
    """The mean growth of ``column`` per iteration over the second half of ``rows``."""
    half = rows[len(rows) // 2 :]
    return (half[-1][column] - half[0][column]) / max(len(half) - 1, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="halfcheetah-quick")
    parser.add_argument("--budget", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--csv", type=Path, help="Also write the rows to this CSV file.")
    parser.add_argument("--out", type=Path, help="Keep the run directory here.")
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.sets)
    cfg = resolve(args.preset, seed=args.seed, budget=args.budget, overrides=overrides)
    device = jax.devices()[0]
    print(f"date {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(
        f"device {device.platform}: {platform.processor() or platform.machine()}, jax {jax.__version__}"
    )
    print(f"run {args.preset} seed {args.seed}, budget {args.budget}, --set {overrides or 'none'}")
    print(*COLUMNS, sep="\t")
    rows: list[dict[str, Any]] = []
    rp1.train.make_agent = recording(rp1.train.make_agent, rows)
    with tempfile.TemporaryDirectory() as out:
        run_training(cfg, args.out or Path(out) / "run", progress=False)
    if args.csv:
        with args.csv.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
    print(
        f"over the second half ({len(rows) - len(rows) // 2} iterations), per iteration: "
        f"RSS {second_half_growth(rows, 'rss_mb'):+.2f} MiB, "
        f"compilations {second_half_growth(rows, 'compilations'):+.2f}, "
        f"held executables {second_half_growth(rows, 'held'):+.2f}",
        file=sys.stdout,
    )


if __name__ == "__main__":
    main()
