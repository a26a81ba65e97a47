"""Seeds in one program against one process per seed (issue 44): throughput and memory.

Two measurements, each for N = 1, 2, 4, 8 seeds (``--ns``), every configuration in fresh
processes, one configuration at a time:

- ``fit``: N seeds' fits of a preset's ensemble (its sizes and minibatch, ``--epochs`` epochs, no
  early stop) on ``--rows`` synthetic training rows each, as one program (:func:`rp1.dynamics.fit.fit_seeds`,
  batches of N) and as N processes that fit one seed each at the same time (released together
  once each has compiled). Reports seeds × rows × epochs per second of wall time (compilation
  not counted) and the processes' peak resident memory, summed;
- ``run``: N seeds of a preset to ``--budget`` samples (seeds 0..N-1), as one program
  (:func:`rp1.train.run_seeds`) and as N processes started together (``rp1.train.run_training``
  each). Reports seeds × samples per second of wall time, start-up and compilation included, and
  the peak resident memory summed over the processes.

Usage::

    python benchmarks/seeds_per_process.py fit --preset halfcheetah-quick --rows 100000 --epochs 5
    python benchmarks/seeds_per_process.py run --preset halfcheetah-quick --budget 10000 --out DIR

Prints one line per configuration and, with ``--csv FILE``, writes them as CSV.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

FIELDS = ("what", "n", "how", "wall_s", "seeds_x_work_per_s", "peak_rss_mb")


def _child_fit(preset: str, rows: int, epochs: int, n: int, go: str | None) -> dict:
    """Fit ``n`` seeds (one program; ``n = 1``: alone) after one warm-up fit; with ``go``, wait
    for that file before the timed fit (the processes' release)."""
    import jax
    import numpy as np

    from rp1.config import resolve
    from rp1.config.settings import fit_settings
    from rp1.dynamics import ensemble_init
    from rp1.dynamics.fit import FitInput, fit_seeds, init_model_opt_state
    from rp1.dynamics.store import padded_dataset
    from rp1.envs import make

    cfg = resolve(preset, seed=0)
    env, task = make(cfg.task)
    env.close()
    settings = replace(fit_settings(cfg), max_epochs=epochs, patience=epochs + 1)
    inputs = []
    for seed in range(n):
        rng = np.random.default_rng(seed)
        obs, act = rng.normal(size=(rows, task.obs_dim)), rng.normal(size=(rows, task.act_dim))
        data = padded_dataset(obs, act, obs + 0.1 * rng.normal(size=obs.shape))
        val = padded_dataset(obs[: rows // 4], act[: rows // 4], data.next_obs[: rows // 4])
        model = ensemble_init(
            jax.random.PRNGKey(seed),
            task.obs_dim,
            task.act_dim,
            cfg.model.members,
            cfg.model.hidden,
        )
        inputs.append(
            FitInput(model, init_model_opt_state(model), data, val, jax.random.PRNGKey(seed))
        )
    fit_seeds(inputs, settings, batch=n)  # compiles
    if go:
        Path(go + f".ready{time.perf_counter_ns()}").touch()
        while not Path(go).exists():
            time.sleep(0.01)
    start = time.time()
    outcomes = fit_seeds(inputs, settings, batch=n)
    assert all(o[2].epochs == epochs for o in outcomes)  # type: ignore[index]
    return {"start": start, "end": time.time()}


def _child_run(preset: str, budget: int, seeds: list[int], out: str) -> dict:
    """Train ``seeds`` of ``preset`` to ``budget`` samples (one program; one seed: alone)."""
    from rp1.config import resolve
    from rp1.train import run_seeds

    cfgs = [resolve(preset, seed=seed, budget=budget) for seed in seeds]
    outs = [Path(out) / f"seed{seed}" for seed in seeds]
    start = time.time()
    results = run_seeds(cfgs, outs, progress=False, seeds_per_process=len(seeds))
    assert all(isinstance(r, Path) for r in results), results
    return {"start": start, "end": time.time()}


def _spawn(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "_child", *args], stdout=subprocess.PIPE)


def _collect(procs: list[subprocess.Popen]) -> list[dict]:
    results = []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"a child failed ({proc.returncode})")
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return results


def measure_fit(args: argparse.Namespace, n: int, how: str) -> dict:
    common = ["fit", args.preset, str(args.rows), str(args.epochs)]
    if how == "program":
        (result,) = _collect([_spawn([*common, str(n), ""])])
        results, started = [result], result["start"]
    else:
        go = tempfile.mktemp(prefix="rp1-go-")
        procs = [_spawn([*common, "1", go]) for _ in range(n)]
        while len(list(Path(go).parent.glob(Path(go).name + ".ready*"))) < n:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.05)
        started = time.time()
        Path(go).touch()
        results = _collect(procs)
    wall = max(r["end"] for r in results) - started
    work = n * args.rows * args.epochs
    return _row("fit", n, how, wall, work / wall, results)


def measure_run(args: argparse.Namespace, n: int, how: str) -> dict:
    out = Path(args.out) / f"n{n}-{how}"
    seeds = list(range(n))
    start = time.time()
    if how == "program":
        results = _collect(
            [_spawn(["run", args.preset, str(args.budget), json.dumps(seeds), str(out)])]
        )
    else:
        procs = [
            _spawn(["run", args.preset, str(args.budget), json.dumps([s]), str(out)]) for s in seeds
        ]
        results = _collect(procs)
    wall = time.time() - start
    return _row("run", n, how, wall, n * args.budget / wall, results)


def _row(what: str, n: int, how: str, wall: float, rate: float, results: list[dict]) -> dict:
    rss = sum(r["peak_rss_mb"] for r in results)
    return {
        "what": what,
        "n": n,
        "how": how,
        "wall_s": round(wall, 2),
        "seeds_x_work_per_s": round(rate, 1),
        "peak_rss_mb": round(rss),
    }


def main() -> None:
    if sys.argv[1:2] == ["_child"]:
        kind, preset, *rest = sys.argv[2:]
        if kind == "fit":
            rows, epochs, n, go = rest
            result = _child_fit(preset, int(rows), int(epochs), int(n), go or None)
        else:
            budget, seeds, out = rest
            result = _child_run(preset, int(budget), json.loads(seeds), out)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("fit", "run"))
    parser.add_argument("--preset", default="halfcheetah-quick")
    parser.add_argument("--ns", default="1,2,4,8")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--budget", type=int, default=10_000)
    parser.add_argument(
        "--out", default=None, help="run: where the runs go (default: a temporary directory)"
    )
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    args.out = args.out or tempfile.mkdtemp(prefix="rp1-seeds-")
    rows = []
    for n in (int(x) for x in args.ns.split(",")):
        for how in ("program", "processes"):
            row = (measure_fit if args.what == "fit" else measure_run)(args, n, how)
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
            rows.append(row)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
