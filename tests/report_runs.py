"""Run directories for the report's tests: written by hand, with the metrics, grid and
environment record a test needs, so that each test states its runs' numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

METRIC_COLUMNS = (
    *("iteration", "samples", "lambda", "eval_return", "model_return", "model_error"),
    *("val_loss", "phase_samples", "residual", "policy_updates", "model_epochs", "wall_s"),
)


def write_run(
    root: Path,
    task: str,
    method: str,
    seed: int,
    samples: list[int],
    returns: list[float],
    budget: int = 100_000,
    phase: int = 3_000,
    cap: int = 3_000,
    scale: str | None = None,
    **columns: list[float],
) -> Path:
    """A run directory ``root/<task>-<method>[-<scale>]/seed<k>`` with config.json and metrics.csv.

    Model-based rows are iterations 0, 1, …, each followed by a phase of ``phase`` samples, so the
    run reached ``samples[-1] + phase``; model-free rows are updates 1, 2, … whose ``samples``
    already include their batch (as rp1.agents.modelfree writes them). ``cap`` is ``collect.phase_cap``;
    ``scale`` is left out of config.json when None (an old run); ``columns`` override the defaults
    of other metric columns (lambda, model_error, …).
    """
    run_dir = root / "-".join([task, method, *([scale] if scale else [])]) / f"seed{seed}"
    run_dir.mkdir(parents=True)
    config = {
        "preset": f"{task}-{method}",
        "task": task,
        "method": method,
        "seed": seed,
        "budget": budget,
        "collect": {"phase_cap": cap, "alpha": 0.0005},
        **({"scale": scale} if scale else {}),
    }
    (run_dir / "config.json").write_text(json.dumps(config))
    n = len(samples)
    model_free = method == "modelfree"
    defaults = {column: [math.nan if model_free else 1.0] * n for column in METRIC_COLUMNS}
    defaults.update(
        iteration=list(range(1, n + 1)) if model_free else list(range(n)),
        samples=samples,
        eval_return=returns,
        phase_samples=list(np.diff(samples, prepend=0)) if model_free else [phase] * n,
        **{"lambda": [math.nan if model_free else 0.0] * n},
    )
    defaults.update(columns)
    pd.DataFrame(defaults).to_csv(run_dir / "metrics.csv", index=False)
    return run_dir


def write_grid(run_dir: Path, every: int, returns: list[float]) -> None:
    """Give the run of ``run_dir`` an evaluation grid: ``eval.every`` in its config.json and an
    ``evaluations.csv`` with ``returns`` at ``every``, ``2·every``, …"""
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "eval": {"every": every}}))
    points = [every * (k + 1) for k in range(len(returns))]
    pd.DataFrame(
        {
            "samples": points,
            "trained_on": [0] * len(points),
            "iteration": [0] * len(points),
            "eval_return": returns,
            "eval_std": [0.0] * len(points),
        }
    ).to_csv(run_dir / "evaluations.csv", index=False)


def two_method_runs(
    root: Path, task: str, values: dict[str, list[float]], untrained: float
) -> None:
    """Runs of ``task`` whose untrained policy (iteration 0, in force up to 5,000 samples) returns
    ``untrained`` and whose trained one (from 5,000 on) returns each of ``values[method]``, one
    run per value; budget 10⁴."""
    for method, returns in values.items():
        for seed, value in enumerate(returns):
            write_run(
                root, task, method, seed, [0, 5_000], [untrained, value], budget=10_000, phase=5_000
            )


def write_environment(run_dir: Path, *entries: dict) -> None:
    """Give the run of ``run_dir`` an ``environment.json`` of ``entries`` (each a record entry:
    ``commit``, ``cpu_features``, ``openblas_coretype``, ``recorded``, … as a test needs)."""
    (run_dir / "environment.json").write_text(json.dumps({"environments": list(entries)}))
