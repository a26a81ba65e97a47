"""``rp1 report DIR``: the paper's tables and figures, and diagnostics, from run directories.

:func:`write_report` loads every run under a root once (runs_table), then writes the tables
(:mod:`rp1.report.tables`), the claims (claims), the figures (figures) and an ``index.md``
linking them into the output folder, which ends with the definitions of its numbers (the template
``templates/definitions.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from string import Template
from typing import NamedTuple

import numpy as np
import pandas as pd

from rp1.config.methods import (
    MODEL_FREE,
    MODEL_FREE_BUDGETS,
    RP1,
    adaptive_lambda,
    model_based_methods,
)
from rp1.core.storage import write_atomically
from rp1.envs import path_name
from rp1.report import blocks, cell_provenance, figures, fragility, realisations, stats
from rp1.report.claims import claim_table, verdict_summary, write_claims
from rp1.report.fair import DEFAULT_EVERY, policy_grid
from rp1.report.markdown import markdown_table
from rp1.report.measures import RunTables, run_tables
from rp1.report.paper import PAPER_LAMBDA_DIRECTION, TASKS
from rp1.report.runs_table import LoadedRuns, load_runs, scale_order
from rp1.report.tables.files import write_table_frames
from rp1.report.tables.results import TableFrames, comparable, table_frames
from rp1.report.tables.specs import TABLES, table_spec

TREND_FORMAT = "%.12g"
"""How ``fig2_lambda_trend.csv`` writes its statistics (slope, t, p): 12 significant digits. The
slopes are least-squares fits (LAPACK), whose last bits differ between CPUs; at 12 digits the file
is the same wherever a report is remade."""


class CurveFigure(NamedTuple):
    """One per-task curve figure: ``<prefix>_<task>.png`` draws the methods of the report table
    called ``table`` (its columns, :meth:`~rp1.report.tables.specs.TableSpec.columns`), with
    model-free PPO's best returns as reference lines where ``with_ppo``."""

    prefix: str
    title: str
    table: str
    with_ppo: bool = False

    def methods(self) -> tuple[str, ...]:
        """The methods the figure draws, in its table's column order."""
        return tuple(method for method, _ in table_spec(self.table).columns())


CURVE_FIGURES: tuple[CurveFigure, ...] = (
    CurveFigure("fig1", "Figure 1: RP1 vs baselines", "table1", with_ppo=True),
    CurveFigure("fig3", "Figure 3: state vs reward variance", "table2"),
    CurveFigure("fig_ablation", "Ablations", "table3"),
    CurveFigure("fig_controls", "Controls: PCA vs phases of the same length; λ = 0.5", "table4"),
)
"""The per-task curve figures."""

DEFINITIONS = resources.files("rp1.report") / "templates" / "definitions.md"
"""The definitions section of index.md, a template whose ``$default_every`` is
:data:`~rp1.report.fair.DEFAULT_EVERY` (package data)."""


def report_tasks(metrics: pd.DataFrame) -> tuple[str, ...]:
    """The paper's four tasks in its order, then any other task found in the runs (a Gymnasium id,
    ``package.module:attribute``); the paper's values are shown for its tasks only."""
    return TASKS + tuple(sorted(set(metrics["task"]) - set(TASKS)))


def report_scales(metrics: pd.DataFrame) -> tuple[str, ...]:
    """The scales of the runs, the paper's first."""
    return tuple(sorted(set(metrics["scale"]), key=scale_order))


def ppo_references(metrics: pd.DataFrame) -> tuple[tuple[str, int, float, int], ...]:
    """(scale, real samples, median best return, seeds) of one task's model-free runs at the
    budgets of :data:`~rp1.config.methods.MODEL_FREE_BUDGETS` they reached."""
    model_free = metrics[metrics["method"] == MODEL_FREE]
    bests = [
        (scale, samples, stats.best_at(runs, samples))
        for scale, runs in model_free.groupby("scale")
        for samples in MODEL_FREE_BUDGETS
    ]
    return tuple(
        (scale, samples, float(best.median()), len(best))
        for scale, samples, best in bests
        if len(best)
    )


def write_curve_figures(runs: RunTables, tasks: tuple[str, ...], out: Path) -> list[Path]:
    """Each figure of :data:`CURVE_FIGURES`, ``<prefix>_<task>.png``, for every task with runs to
    draw (the task as a file name, :func:`rp1.envs.path_name`)."""
    paths = []
    for task in tasks:
        metrics = runs.metrics[runs.metrics["task"] == task]
        for figure in CURVE_FIGURES:
            references = ppo_references(metrics) if figure.with_ppo else ()
            paths.append(
                figures.curve_figure(
                    metrics,
                    runs.grid[runs.grid["task"] == task],
                    figure.methods(),
                    f"{figure.title} — {task}",
                    out / f"{figure.prefix}_{path_name(task)}.png",
                    references,
                )
            )
    return [path for path in paths if path]


def write_model_figures(metrics: pd.DataFrame, tasks: tuple[str, ...], out: Path) -> list[Path]:
    """fig_model_<task>: the test-set error of every model-based method's fits against real
    samples, for the tasks whose runs logged it."""
    methods = tuple(model_based_methods())
    paths = [
        figures.model_error_figure(
            metrics[metrics["task"] == task],
            methods,
            f"World models on common data — {task}",
            out / f"fig_model_{path_name(task)}.png",
        )
        for task in tasks
    ]
    return [path for path in paths if path]


def write_lambda_analysis(metrics: pd.DataFrame, tasks: tuple[str, ...], out: Path) -> list[Path]:
    """fig2_lambda.png and fig2_lambda.csv (task, scale, method, lambda, n, mean, sem), and the
    direction of each task's relation, fig2_lambda_trend.csv and fig2_lambda.md (see
    :func:`stats.lambda_trend`); nothing when no adaptive-λ run has two trained evaluations."""
    adaptive = adaptive_lambda()
    improvements = stats.lambda_improvements(metrics[metrics["method"].isin(adaptive)])
    summary = stats.lambda_summary(improvements)
    if summary.empty:
        return []
    write_atomically(out / "fig2_lambda.csv", summary.to_csv(index=False).encode(), "report file")
    trend = stats.lambda_trend(improvements)
    order = sorted(
        range(len(trend)),
        key=lambda i: (
            tasks.index(trend["task"].iloc[i]),
            scale_order(trend["scale"].iloc[i]),
            adaptive.index(trend["method"].iloc[i]),
        ),
    )
    trend = trend.iloc[order].reset_index(drop=True)
    write_atomically(
        out / "fig2_lambda_trend.csv",
        trend.to_csv(index=False, float_format=TREND_FORMAT).encode(),
        "report file",
    )
    write_atomically(out / "fig2_lambda.md", lambda_trend_text(trend).encode(), "report file")
    figure = figures.lambda_figure(summary, tasks, out / "fig2_lambda.png")
    written = [out / "fig2_lambda.csv", out / "fig2_lambda_trend.csv", out / "fig2_lambda.md"]
    return written + ([figure] if figure else [])


def paper_direction(task: str, method: str) -> int | None:
    """The sign the paper reads from its Figure 2 (RP1 on the paper's tasks only), else None."""
    return PAPER_LAMBDA_DIRECTION.get(task) if method == RP1 else None


def direction_verdict(task: str, method: str, slope: float, p: float) -> str:
    """Whether a trend agrees with the paper's Figure 2 (:func:`paper_direction`)."""
    expected = paper_direction(task, method)
    if expected is None:
        return "—"
    if not stats.significant(p):
        return "not significant"
    return "as the paper" if np.sign(slope) == expected else "opposite to the paper"


def lambda_trend_text(trend: pd.DataFrame) -> str:
    """fig2_lambda.md: per task and adaptive-λ method, the mean per-run slope, its t-test and, for
    RP1, the paper's direction and whether this report agrees (p < 0.05)."""
    rows = [
        [
            row.task,
            row.scale,
            row.method,
            str(row.runs),
            f"{row.slope:+.3f}",
            "—" if math.isnan(row.t) else f"{row.t:.2f} (p = {row.p:.3g})",
            {1: "positive", -1: "negative", None: "—"}.get(
                paper_direction(row.task, row.method), "—"
            ),
            direction_verdict(row.task, row.method, row.slope, row.p),
        ]
        for row in trend.itertuples()
    ]
    header = ["task", "scale", "method", "runs", "slope", "t", "paper", "here"]
    return (
        "# Figure 2's direction: λ against the one-step change in return\n\n"
        "Per run, the least-squares slope of the normalised one-step change (fig2_lambda.csv's "
        "steps) on the λ the policy was trained with (share of the run's return range per unit "
        "λ); slope: mean over runs; t: one-sample t-test of the runs' slopes against 0, so a seed "
        "counts once. paper: the sign the paper reads from its Figure 2 for RP1; here: the same "
        "sign with p < 0.05, the opposite with p < 0.05, or not significant. See index.md for the "
        f"definitions.\n\n{markdown_table(header, rows)}\n"
    )


def write_diagnostics(metrics: pd.DataFrame, tasks: tuple[str, ...], out: Path) -> list[Path]:
    """diag_<task>.png for every task with model-based runs."""
    model_based = metrics[metrics["method"] != MODEL_FREE]
    paths = [
        figures.diagnostics_figure(
            model_based[model_based["task"] == task], task, out / f"diag_{path_name(task)}.png"
        )
        for task in tasks
    ]
    return [path for path in paths if path]


def quartile_text(summary: pd.DataFrame, column: str, fmt: str) -> pd.Series:
    """``median [q25, q75]`` of a :func:`stats.phase_summary` quantity, formatted by ``fmt``."""
    return summary.apply(
        lambda row: (
            f"{fmt.format(row[column])} "
            f"[{fmt.format(row[column + '_q25'])}, {fmt.format(row[column + '_q75'])}]"
        ),
        axis=1,
    )


def write_phase_summary(metrics: pd.DataFrame, out: Path) -> list[Path]:
    """phases.csv and phases.md: the model-based runs' collection phases (see
    :func:`stats.phase_summary`); nothing when there are none."""
    summary = stats.phase_summary(metrics[metrics["method"] != MODEL_FREE])
    if summary.empty:
        return []
    write_atomically(out / "phases.csv", summary.to_csv(index=False).encode(), "report file")
    columns = {
        "runs": summary["runs"].map("{:,}".format),
        "phase cap": summary["caps"],
        "phases per run": quartile_text(summary, "phases_per_run", "{:,.6g}"),
        "samples per phase": quartile_text(summary, "phase_samples", "{:,.0f}"),
        "median, trained phases": summary["trained_phase_samples"].map(
            lambda n: "—" if pd.isna(n) else f"{n:,.0f}"
        ),
        "stopped early": summary["stopped_early"].map(
            lambda share: "—" if pd.isna(share) else f"{share:.1%}"
        ),
    }
    rows = summary[["task", "scale", "method"]].assign(**columns).values.tolist()
    table = markdown_table(["task", "scale", "method", *columns], rows)
    text = (
        "# Collection phases of the model-based runs\n\n"
        "Median [25th, 75th percentile]; phase cap from each run's config.json; stopped early: "
        "share of phases that took fewer samples than the cap or the budget left allowed; median, "
        "trained phases: median samples of the phases of iterations ≥ 1 (for RP1, the matched "
        "length of the `-matched` controls). See "
        f"index.md for the definitions.\n\n{table}\n"
    )
    write_atomically(out / "phases.md", text.encode(), "report file")
    return [out / "phases.csv", out / "phases.md"]


def grid_text(runs: pd.DataFrame) -> str:
    """Which of one method's runs (a row per run, with ``eval_every`` and ``has_grid``) have the
    evaluation grid: ``every 1,000`` (all), ``every 500: 3 of 10`` (some) or ``—`` (none)."""
    gridded = runs[runs["has_grid"]]
    if gridded.empty:
        return "—"
    spacings = ", ".join(f"{every:,.0f}" for every in sorted(gridded["eval_every"].unique()))
    share = "" if len(gridded) == len(runs) else f": {len(gridded)} of {len(runs)}"
    return f"every {spacings}{share}"


def inventory(metrics: pd.DataFrame, evaluations: pd.DataFrame | None = None) -> str:
    """A Markdown table of the runs found: per task, scale and method, runs, seeds, budgets,
    reach, and which have the evaluation grid (runs with rows in ``evaluations``, the grid table
    of :class:`~rp1.report.runs_table.LoadedRuns`); and which scales are present."""
    if metrics.empty:
        return "No runs with metrics rows."
    runs = metrics.groupby("run").first()
    gridded = set() if evaluations is None else set(evaluations["run"])
    runs = runs.assign(has_grid=runs.index.isin(gridded))
    rows = [
        [
            task,
            scale,
            method,
            str(len(group)),
            ", ".join(map(str, sorted(group["seed"]))),
            ", ".join(f"{budget:,}" for budget in sorted(group["budget"].unique())),
            f"{group['reached'].min():,.0f} – {group['reached'].max():,.0f}",
            grid_text(group),
        ]
        for (task, scale, method), group in runs.groupby(["task", "scale", "method"])
    ]
    header = ["task", "scale", "method", "runs", "seeds", "budgets", "samples reached", "grid"]
    scales = ", ".join(report_scales(metrics))
    note = (
        "grid: the runs with the evaluation grid (`evaluations.csv`) and its spacing "
        f"(`eval.every`, real samples); `—`: none, the fair measures read `metrics.csv` on a "
        f"{DEFAULT_EVERY:,}-sample grid (see the definitions below)."
    )
    return f"Scales present: {scales}.\n\n{markdown_table(header, rows)}\n\n{note}"


def definitions() -> str:
    """The definitions section of index.md: :data:`DEFINITIONS` rendered."""
    template = Template(DEFINITIONS.read_text(encoding="utf-8"))
    return template.substitute(default_every=f"{DEFAULT_EVERY:,}")


def write_index(
    loaded: LoadedRuns, written: list[Path], out: Path, tables_left_out: tuple[str, ...] = ()
) -> Path:
    """index.md: the runs found (with which have the grid), notes on runs left out, tables left
    out and why, links to every file, definitions."""
    links = "\n".join(f"- [{path.name}]({path.name})" for path in written)
    notes = "\n".join(f"- {note}" for note in loaded.notes) or "None."
    left = "\n".join(f"- {note}" for note in tables_left_out) or "None."
    sections = [
        ("Runs", inventory(loaded.metrics, loaded.evaluations)),
        ("Left out (runs and metrics rows)", notes),
        ("Tables left out", left),
        ("Files", links),
    ]
    body = "".join(f"## {title}\n\n{content}\n\n" for title, content in sections)
    text = f"# rp1 report\n\n{body}{definitions()}"
    path = out / "index.md"
    write_atomically(path, text.encode(), "report file")
    return path


def left_out(frames: dict[str, TableFrames | None]) -> tuple[str, ...]:
    """A note per table with runs that can compare nothing (:func:`~rp1.report.tables.results.comparable`)."""
    return tuple(
        f"{name}: nothing to compare — {why(frame)}; not written"
        for name, frame in frames.items()
        if frame is not None and not comparable(frame)
    )


def why(frame: TableFrames) -> str:
    """Why a table compares nothing: its methods with runs and their most seeds."""
    methods = dict.fromkeys(key[4] for key in frame.bests)
    most = max(len(values) for values in frame.bests.values())
    if len(methods) < 2:
        return f"only {next(iter(methods))} has runs"
    return f"{', '.join(methods)} have runs, one seed each at most ({most})"


def report_summary(written: list[Path], out: Path) -> str:
    """What ``rp1 report`` says of a report written into ``out`` (``written``: its files, from
    :func:`write_report`): how many files and where to start, then, where it has claims, how many
    verdicts of each kind they give (:func:`~rp1.report.claims.verdict_summary` of the
    ``claims.csv`` written)."""
    lines = [f"wrote {len(written)} files to {out} (start at {out / 'index.md'})"]
    claims = out / "claims.csv"
    if claims in written:
        summary = verdict_summary(pd.read_csv(claims))
        lines.append(f"claims.md, one verdict per claim, task, sample count and measure: {summary}")
    return "\n".join(lines)


def write_report(roots: Path | Sequence[Path], out: Path) -> list[Path]:
    """Write the report of every run directory under ``roots`` (a root, or several, whose runs are
    then named after their roots' folders: :func:`~rp1.report.runs_table.named_run_dirs`) into
    ``out`` (created if needed).

    Files: ``table{1,2,3,4,5,6}.md`` / ``.csv`` / ``_fair.csv`` / ``_ttests.csv``,
    ``table_model.md`` / ``.csv`` / ``_ttests.csv``, ``claims.md`` / ``.csv``,
    ``realisations.md`` / ``.csv``, ``provenance.md`` / ``.csv``, ``fig1_<task>.png``,
    ``fig2_lambda.png`` / ``.csv`` / ``.md``, ``fig2_lambda_trend.csv``, ``fig3_<task>.png``,
    ``fig_ablation_<task>.png``, ``fig_controls_<task>.png``, ``fig_model_<task>.png``,
    ``diag_<task>.png``, ``phases.csv`` / ``.md`` and ``index.md`` (tables, figures and summaries
    only where there are runs for them; a table that can compare nothing is left out with a note
    in index.md, :func:`left_out`). Returns the paths written, ``index.md`` last. Raises
    ConfigError when a root holds no run directory (a malformed one is left out with a note) or a
    cell whose runs ran in programs of different sizes (:func:`provenance.check_programs`), before
    anything is written; every file is written atomically, and a file the machine fails to write
    is a StorageError naming it.
    """
    loaded = load_runs(roots)
    metrics, out = loaded.metrics, Path(out)
    runs = run_tables(metrics, loaded.evaluations)
    others = policy_grid(loaded.others, loaded.other_evaluations)
    runs_from = pd.concat(
        [
            cell_provenance.run_provenance(loaded.dirs, metrics, runs.grid, kept=True),
            cell_provenance.run_provenance(loaded.dirs, loaded.others, others, kept=False),
        ],
        ignore_index=True,
    )
    cell_provenance.check_programs(runs_from)
    out.mkdir(parents=True, exist_ok=True)
    tasks = report_tasks(metrics)
    frames = {spec.name: table_frames(runs, spec, tasks) for spec in TABLES}
    tables_left_out = left_out(frames)
    shown: dict[str, TableFrames] = {
        name: frame for name, frame in frames.items() if frame is not None and comparable(frame)
    }
    written = [path for table in shown.values() for path in write_table_frames(table, out)]
    claims = claim_table(shown)
    found = realisations.variants(loaded)
    moves = realisations.compare(
        claims,
        [(v, realisations.variant_claims(shown, loaded, runs, v, tasks)) for v in found],
    )
    cells = cell_provenance.cell_provenance(runs_from, tasks)
    if not claims.empty:
        claims = claims.assign(
            robust_to_realisation=realisations.robustness(claims, moves),
            mixed_cells=cell_provenance.mixed_cells(claims, cells),
        )
        claims = fragility.fragility(claims, shown, runs, tasks)
        claims = blocks.block_columns(claims, runs, runs_from)
    written += write_claims(shown, out, claims)
    written += realisations.write_realisations(found, moves, runs_from, out)
    written += cell_provenance.write_provenance(cells, runs_from, out)
    written += write_curve_figures(runs, tasks, out)
    written += write_model_figures(metrics, tasks, out)
    written += write_lambda_analysis(metrics, tasks, out)
    written += write_diagnostics(metrics, tasks, out)
    written += write_phase_summary(metrics, out)
    return written + [write_index(loaded, written, out, tables_left_out)]
