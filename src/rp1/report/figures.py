"""The report's PNG figures, drawn with Matplotlib's Agg canvas (no pyplot global state).

Every function takes the tidy metrics table (see runs_table) or a summary of it, writes one
PNG and returns its path, or returns None and writes nothing when there is no data to draw.
Runs of different scales are separate series, labelled with their scale unless it is the paper's.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from rp1.config.methods import (
    METHOD_TABLE,
    MODEL_FREE,
    adaptive_lambda,
    method_label,
    model_based_methods,
)
from rp1.report.canvas import new_figure, save
from rp1.report.curves import PerRow, best_so_far, latest, quartile_bands, step_curves
from rp1.report.measures import MODEL_ERROR
from rp1.report.runs_table import DEFAULT_SCALE, scale_order

GRID_POINTS = 200
"""Points of the common sample grid that curves are aligned on."""

METHOD_COLORS: dict[str, str] = {
    method: f"C{i}" for i, method in enumerate((*(m.name for m in METHOD_TABLE), MODEL_FREE))
}
"""Matplotlib's default colour cycle over rp1's methods in the method table's order, then PPO."""
OWN_COLORS = "Dark2"
"""The colour map whose colours the methods of one's own take, in the order they were added."""
REFERENCE_GREYS: tuple[str, ...] = ("0.15", "0.4", "0.65")


def label(method: str, scale: str = DEFAULT_SCALE) -> str:
    """The display name of a method's runs at ``scale``: ``RP1``, ``RP1 (small)``."""
    name = method_label(method)
    return name if scale == DEFAULT_SCALE else f"{name} ({scale})"


def linestyle(scale: str) -> str:
    """Solid for the paper's scale, dotted for any other."""
    return "-" if scale == DEFAULT_SCALE else ":"


def series(metrics: pd.DataFrame, methods: tuple[str, ...]) -> list[tuple[str, str, pd.DataFrame]]:
    """(method, scale, rows) of every method in ``methods`` order and scale present, paper first."""
    return [
        (method, scale, rows)
        for method in methods
        for scale, rows in sorted(
            metrics[metrics["method"] == method].groupby("scale"),
            key=lambda group: scale_order(group[0]),
        )
    ]


def color(method: str) -> str:
    """The same colour for a method in every figure: :data:`METHOD_COLORS`, or :data:`OWN_COLORS`'
    for a method of one's own (:func:`rp1.config.methods.register_method`), or C9 for a method this
    process does not know."""
    if method in METHOD_COLORS:
        return METHOD_COLORS[method]
    own = [name for name in model_based_methods() if name not in METHOD_COLORS]
    if method not in own:
        return "C9"
    palette = matplotlib.colormaps[OWN_COLORS]  # qualitative: palette(k) is its k-th colour
    return matplotlib.colors.to_hex(palette(own.index(method) % palette.N))


def plot_band(ax: Axes, x: np.ndarray, curves: np.ndarray, method: str, scale: str) -> None:
    """Median (line) and IQR (band) over the runs of one method and scale, ``curves [runs, x]``
    (NaN where a run has no value), labelled with their count."""
    q25, median, q75 = quartile_bands(curves)
    ax.plot(
        x,
        median,
        color=color(method),
        linestyle=linestyle(scale),
        label=f"{label(method, scale)} (n = {len(curves)})",
    )
    ax.fill_between(x, q25, q75, color=color(method), alpha=0.25, linewidth=0)


def plot_median_iqr(
    ax: Axes,
    metrics: pd.DataFrame,
    methods: tuple[str, ...],
    per_row: PerRow = best_so_far,
) -> None:
    """Median (line) and IQR (band) over runs of each method's ``per_row`` (by default the
    best-so-far evaluation return; :func:`~rp1.report.curves.step_curves`).

    Runs are aligned on a common grid of real samples, 0 to the most any run reached (step
    alignment; a run leaves the band beyond what it reached).
    """
    grid = np.linspace(0.0, float(metrics["reached"].max()), GRID_POINTS)
    for method, scale, runs in series(metrics, methods):
        plot_band(ax, grid, step_curves(runs, grid, per_row), method, scale)
    ax.set_xlabel("real samples")
    ax.set_ylabel("best evaluation return so far")


def plot_in_force(ax: Axes, grid: pd.DataFrame, methods: tuple[str, ...]) -> None:
    """Median (line) and IQR (band) over runs of each method's return of the policy in force at
    each point of its evaluation grid (``grid``: :func:`rp1.report.fair.policy_grid`'s rows),
    where any of its runs has one: every method evaluated at the same real samples."""
    for method, scale, runs in series(grid, methods):
        returns = runs.pivot_table(index="run", columns="samples", values="eval_return")
        x = returns.columns.to_numpy(dtype=float)
        plot_band(ax, x, returns.to_numpy(dtype=float), method, scale)
    ax.set_xlabel("real samples")
    ax.set_ylabel("return of the policy in force")


def curve_figure(
    metrics: pd.DataFrame,
    grid: pd.DataFrame,
    methods: tuple[str, ...],
    title: str,
    path: Path,
    references: tuple[tuple[str, int, float, int], ...] = (),
) -> Path | None:
    """Median + IQR curves of ``methods`` on one task (Figures 1, 3 and the ablations): the
    paper's best evaluation return so far (left), and beside it the return of the policy in force
    on the evaluation grid (``grid``, :func:`rp1.report.fair.policy_grid`), which gives every
    method the same evaluations (right).

    ``references``: (scale, real samples, return, seeds) drawn on the left as dashed horizontal
    lines — model-free PPO's median best return by that many samples.
    """
    shown = metrics[metrics["method"].isin(methods)]
    if shown.empty:
        return None
    figure, axes = new_figure(ncols=2)
    best, in_force = axes[0]
    plot_median_iqr(best, shown, methods)
    for (scale, samples, level, count), grey in zip(
        references, itertools.cycle(REFERENCE_GREYS), strict=False
    ):
        best.axhline(
            level,
            color=grey,
            linestyle="--",
            label=f"{label(MODEL_FREE, scale)}, best by {samples:,} samples (n = {count})",
        )
    best.set_title("the paper's: best evaluation so far")
    plot_in_force(in_force, grid[grid["method"].isin(methods)], methods)
    in_force.set_title("every method evaluated at the same samples")
    figure.suptitle(title)
    for ax in (best, in_force):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small", loc="upper left")  # curves rise to the right
        else:  # runs shorter than the grid's spacing
            ax.text(0.5, 0.5, "no run reached a grid point", ha="center", transform=ax.transAxes)
    return save(figure, path)


def model_error_figure(
    metrics: pd.DataFrame, methods: tuple[str, ...], title: str, path: Path
) -> Path | None:
    """Median + IQR over runs of the test-set error of each method's latest fit against real
    samples (log scale), for the methods whose runs logged it; None when none did."""
    logged = (
        metrics[metrics["method"].isin(methods)]
        .groupby("run")
        .filter(lambda run: run[MODEL_ERROR].notna().any())
    )
    if logged.empty:
        return None
    figure, axes = new_figure()
    ax = axes[0, 0]
    plot_median_iqr(ax, logged, methods, latest(MODEL_ERROR))
    ax.set_yscale("log")
    ax.set_ylabel("test-set one-step error of the latest fit\n(G's formula, the test set's units)")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="upper right")
    return save(figure, path)


def lambda_figure(summary: pd.DataFrame, tasks: tuple[str, ...], path: Path) -> Path | None:
    """Figure 2: per task, mean normalised one-step change in return after each λ (bars ± s.e.m.).

    ``summary``: :func:`rp1.report.stats.lambda_summary` of the adaptive-λ methods.
    """
    tasks = tuple(task for task in tasks if (summary["task"] == task).any())
    if not tasks:
        return None
    figure, axes = new_figure(1, len(tasks), panel=(4.2, 3.6))
    for ax, task in zip(axes[0], tasks, strict=True):
        rows = summary[summary["task"] == task]
        arms = np.sort(rows["lambda"].unique())
        shown = series(rows, adaptive_lambda())
        width = 0.8 / len(shown)
        for i, (method, scale, bars) in enumerate(shown):
            bars = bars.set_index("lambda").reindex(arms)
            x = np.arange(len(arms)) + (i - (len(shown) - 1) / 2) * width
            ax.bar(
                x,
                bars["mean"],
                width,
                yerr=bars["sem"].fillna(0),
                color=color(method),
                hatch="" if scale == DEFAULT_SCALE else "//",
                label=label(method, scale),
            )
        ax.axhline(0.0, color="0.3", linewidth=0.8)
        ax.set_xticks(np.arange(len(arms)), [f"{arm:g}" for arm in arms])
        ax.set_xlabel("λ the policy was trained with")
        ax.set_title(task)
        ax.legend(fontsize="small")
    axes[0, 0].set_ylabel("mean one-step change in return\n(share of the run's return range)")
    return save(figure, path)


def plot_run_traces(ax: Axes, metrics: pd.DataFrame, x: str, y: str, **style: Any) -> bool:
    """One thin trace per run of column ``y`` against ``x``, coloured by method, one legend entry
    per method and scale; says "no data" on the panel and returns False when ``y`` is empty."""
    rows = metrics.dropna(subset=[y])
    if rows.empty:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return False
    for method, scale, runs in series(rows, tuple(rows["method"].unique())):
        for i, (_, run) in enumerate(runs.groupby("run")):
            name = label(method, scale) if i == 0 else "_nolegend_"
            ax.plot(
                run[x],
                run[y],
                color=color(method),
                alpha=0.6,
                linewidth=0.9,
                label=name,
                **{"linestyle": linestyle(scale), **style},  # ``style`` may turn lines off
            )
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(y.replace("_", " "))
    ax.legend(fontsize="x-small", loc="upper right")
    return True


def diagnostics_figure(metrics: pd.DataFrame, task: str, path: Path) -> Path | None:
    """Active-learning diagnostics of one task's model-based runs, four panels: λ per iteration
    (adaptive methods), real samples per collection phase against the runs' phase caps (config
    ``collect.phase_cap``, algorithm.md §5), the model error G (algorithm.md §6) and the ensemble's validation
    loss, against real samples."""
    if metrics.empty:
        return None
    figure, axes = new_figure(2, 2, panel=(5.6, 3.8))
    (lambdas, phases), (errors, losses) = axes
    plot_run_traces(
        lambdas,
        metrics[metrics["method"].isin(adaptive_lambda())],
        "iteration",
        "lambda",
        drawstyle="steps-post",
    )
    lambdas.set_title("λ chosen per iteration")
    if plot_run_traces(phases, metrics, "samples", "phase_samples", marker=".", linestyle="none"):
        for cap in sorted(metrics["phase_cap"].dropna().unique()):
            phases.axhline(cap, color="0.3", linestyle="--", label=f"cap ({cap:,.0f})")
        phases.legend(fontsize="x-small", loc="upper right")
    phases.set_title("real samples per collection phase")
    plot_run_traces(errors, metrics, "samples", "model_error")
    errors.set_title("model error G on the new phase")
    if (
        plot_run_traces(losses, metrics, "samples", "val_loss")
        and (metrics["val_loss"].dropna() > 0).all()
    ):
        losses.set_yscale("log")
    losses.set_title("ensemble validation loss")
    figure.suptitle(f"{task}: active-learning diagnostics")
    return save(figure, path)
