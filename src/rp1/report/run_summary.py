"""What a finished run reached and where its results are: the lines ``rp1 train`` ends with.

Example::

    print(run_summary(Path("runs/hopper-quick/seed0"), curve=None))
    # best evaluation return 812.3 (at 9,000 samples; first evaluation -3.1)
    # against the preset's 10 reference seeds (seeds 0–9; …):
    #   best 812.3 is above every one of them (highest 381.8)
    #   …
    # metrics:        runs/hopper-quick/seed0/metrics.csv
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from rp1.report.references import REFERENCES, final_return, reference_lines, run_reference
from rp1.rundir.files import METRICS, RunDir, evaluates_trained


def standing_lines(run: RunDir, rows: pd.DataFrame, best: float, references: Path) -> list[str]:
    """Where a run with ``metrics.csv`` ``rows`` and ``best`` evaluation return stands among its
    preset's reference seeds (:mod:`rp1.report.references`), if it reached the budget of a
    reference of its preset and scale; no line otherwise."""
    reference = run_reference(run, references)
    if reference is None or not run.is_finished():
        return []
    return reference_lines(reference, best, final_return(rows, reference.budget))


def run_summary(run_dir: Path, curve: Path | None, references: Path = REFERENCES) -> str:
    """The best evaluation of a trained policy (:func:`~rp1.rundir.files.evaluates_trained`, as
    ``rp1 report`` counts and the kept ``best`` policy is) in ``run_dir``'s ``metrics.csv`` and the
    first evaluation (the untrained policy's), and where no trained policy beat the untrained one,
    that it did not; where the run stands among its preset's reference seeds, if the run
    reached the budget of a reference in ``references``
    (:func:`~rp1.report.references.reference_for`); then where the metrics and the learning
    curve ``curve`` (if any) are."""
    run = RunDir(run_dir)
    rows = pd.read_csv(io.BytesIO(run.read_file(METRICS, "metrics")))
    evals = rows.dropna(subset=["eval_return"])
    trained = evals[evaluates_trained(evals["iteration"])]
    lines = []
    if not evals.empty:
        first = evals["eval_return"].iloc[0]
        if trained.empty:
            lines.append(f"no trained policy was evaluated (first evaluation {first:.1f})")
        else:
            best = trained.loc[trained["eval_return"].idxmax()]
            beaten = (
                "" if best["eval_return"] > first else ": no trained policy beat the untrained one"
            )
            lines.append(
                f"best evaluation return {best['eval_return']:.1f} (at {int(best['samples']):,} samples; first evaluation {first:.1f}){beaten}"
            )
            lines += standing_lines(run, rows, float(best["eval_return"]), references)
    lines.append(f"metrics:        {run_dir / METRICS}")
    if curve is not None:
        lines.append(f"learning curve: {curve}")
    return "\n".join(lines)
