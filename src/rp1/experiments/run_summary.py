"""What a finished run reached and where its results are: the lines ``rp1 train`` ends with.

Example::

    print(run_summary(Path("runs/hopper-quick/seed0"), curve=None))
    # best evaluation return 812.3 (at 9,000 samples; first evaluation -3.1)
    # metrics:        runs/hopper-quick/seed0/metrics.csv
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from rp1.rundir.files import METRICS, RunDir, evaluates_trained


def run_summary(run_dir: Path, curve: Path | None) -> str:
    """The best evaluation of a trained policy (:func:`~rp1.rundir.files.evaluates_trained`, as
    ``rp1 report`` counts) in ``run_dir``'s ``metrics.csv`` and the first evaluation (the
    untrained policy's), then where the metrics and the learning curve ``curve`` (if any) are."""
    metrics = RunDir(run_dir).read_file(METRICS, "metrics")
    evals = pd.read_csv(io.BytesIO(metrics)).dropna(subset=["eval_return"])
    trained = evals[evaluates_trained(evals["iteration"])]
    lines = []
    if not evals.empty:
        first = evals["eval_return"].iloc[0]
        if trained.empty:
            lines.append(f"no trained policy was evaluated (first evaluation {first:.1f})")
        else:
            best = trained.loc[trained["eval_return"].idxmax()]
            lines.append(
                f"best evaluation return {best['eval_return']:.1f} (at {int(best['samples']):,} samples; first evaluation {first:.1f})"
            )
    lines.append(f"metrics:        {run_dir / METRICS}")
    if curve is not None:
        lines.append(f"learning curve: {curve}")
    return "\n".join(lines)
