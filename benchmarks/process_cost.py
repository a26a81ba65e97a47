"""CPU a whole small run's process costs, start to end, under two source trees side by side.

    python benchmarks/process_cost.py OLD_SRC NEW_SRC [--repeats 5] [--cache DIR]

Each repeat runs one tiny ``rp1 train`` (HalfCheetah, Greedy, 600 samples: two iterations of
the test suite's tiny config) with ``PYTHONPATH=OLD_SRC``, then one with ``NEW_SRC``, in this
interpreter, so both see the same machine load; it prints each process's user+sys CPU and wall
seconds (``resource.getrusage`` of the finished child) and their means. What such a process pays
beyond its two iterations (imports, tracing, compilation-cache loads, the learning curve and the
summary at its end) is what every ``rp1 train``, every sweep run and every test that starts a run
in another process pays. The first process of each tree warms the compilation cache ``--cache``
(default: a temporary folder) and is not counted. ``XLA_FLAGS`` is as the caller set it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers import set_args, tiny_sets  # the test suite's tiny config


def one_run(src: Path, out: Path, cache: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one tiny ``rp1 train`` process with ``src`` first on the
    path, writing into ``out``."""
    args = ["train", "--preset", "halfcheetah-greedy", "--budget", "600", "--quiet"]
    args += ["--out", str(out), *set_args(tiny_sets())]
    env = {**os.environ, "PYTHONPATH": str(src), "RP1_JAX_CACHE": str(cache), "MPLBACKEND": "Agg"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rp1", *args], env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="the first source tree (its src/ folder)")
    parser.add_argument("new", type=Path, help="the second source tree (its src/ folder)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=None, help="the compilation cache")
    options = parser.parse_args()
    trees = {"old": options.old.resolve(), "new": options.new.resolve()}
    with tempfile.TemporaryDirectory() as scratch:
        cache = options.cache or Path(scratch) / "cache"
        for name, src in trees.items():  # warm the cache
            one_run(src, Path(scratch) / f"warm-{name}", cache)
        costs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for repeat in range(options.repeats):
            for name, src in trees.items():
                costs[name].append(one_run(src, Path(scratch) / f"{name}{repeat}", cache))
                cpu, wall = costs[name][-1]
                print(f"{name} repeat {repeat}: {cpu:.2f} s CPU, {wall:.2f} s wall", flush=True)
    for name, runs in costs.items():
        cpus, walls = zip(*runs, strict=True)
        print(
            f"{name} ({trees[name]}): mean {statistics.mean(cpus):.2f} s CPU "
            f"(sd {statistics.stdev(cpus):.2f}), {statistics.mean(walls):.2f} s wall"
        )


if __name__ == "__main__":
    main()
