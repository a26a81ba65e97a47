"""One run's learning curve, ``learning_curve.png``: its evaluation returns, the untrained policy's
and the best trained policy's so far against real samples, over its preset's reference seeds'
band. Drawn by the run's own process when it ends (``rp1 train``, a sweep's worker), so it imports
neither the report's statistics nor JAX."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes

from rp1.report.canvas import new_figure, save
from rp1.report.references import REFERENCES, Reference, run_reference, seeds_text
from rp1.rundir.files import CURVE, METRICS, RunDir, evaluates_trained


def learning_curve_figure(
    metrics: pd.DataFrame, title: str, path: Path, reference: Reference | None = None
) -> Path | None:
    """One run's evaluation return (points), the untrained policy's (the first evaluation; dotted)
    and the best so far of the trained policies (steps; the best ``rp1 train``'s summary and the
    kept ``best`` policy count, :func:`~rp1.rundir.files.evaluates_trained`) against real samples,
    over its preset's ``reference`` seeds' band, if given (:func:`draw_reference`).

    ``metrics`` is the run's ``metrics.csv`` as read by pandas (columns ``iteration``,
    ``samples``, ``eval_return``).
    """
    rows = metrics.dropna(subset=["eval_return"])
    if rows.empty:
        return None
    trained = rows[evaluates_trained(rows["iteration"])]
    figure, axes = new_figure()
    ax = axes[0, 0]
    if reference is not None:
        draw_reference(ax, reference)
    ax.plot(
        rows["samples"],
        rows["eval_return"],
        "o-",
        color="C0",
        markersize=3,
        label="evaluation return",
    )
    ax.axhline(rows["eval_return"].iloc[0], color="C0", ls=":", lw=1, label="untrained policy")
    if not trained.empty:
        best = trained["eval_return"].cummax()
        ax.step(trained["samples"], best, where="post", color="C3", label="best trained so far")
    ax.set_xlabel("real samples")
    ax.set_ylabel("return (mean of the evaluation episodes)")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="lower right")
    return save(figure, path)


def draw_reference(ax: Axes, reference: Reference) -> None:
    """The band of ``reference``'s seeds behind a run's curve: the 25th to 75th percentile over
    seeds of the return of the policy in force at each grid point (shaded, joined by straight
    lines), and their median (dashed)."""
    band = reference.band
    label = f"reference {seeds_text(reference.seeds)}"
    ax.fill_between(band["samples"], band["q25"], band["q75"], color="0.85", label=f"{label}: IQR")
    ax.plot(band["samples"], band["median"], color="0.5", ls="--", label=f"{label}: median")


def write_learning_curve(run_dir: Path, title: str, references: Path = REFERENCES) -> Path | None:
    """``learning_curve.png`` of the run in ``run_dir``, from its ``metrics.csv``, over its preset's
    reference band where ``references`` has one for its preset, scale and budget
    (:func:`~rp1.report.references.reference_for`); ``None`` if the run has no evaluation
    yet."""
    reference = run_reference(RunDir(run_dir), references)
    return learning_curve_figure(pd.read_csv(run_dir / METRICS), title, run_dir / CURVE, reference)
