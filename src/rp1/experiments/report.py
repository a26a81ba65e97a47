"""``rp1 report DIR``: the paper's tables and figures, and diagnostics, from run directories.

:func:`write_report` loads every run under a root once (runs_table), then writes the tables
(tables), the figures (figures) and an ``index.md`` linking them into the output folder.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rp1.experiments import figures, stats
from rp1.experiments.paper import ADAPTIVE_LAMBDA, MODEL_FREE, PHASE_CAP, TASKS
from rp1.experiments.runs_table import LoadedRuns, load_runs
from rp1.experiments.tables import TABLES, markdown_table, write_table

CURVE_FIGURES: tuple[tuple[str, str, tuple[str, ...], bool], ...] = (
    ("fig1", "Figure 1: RP1 vs baselines", ("greedy", "vr", "rp1"), True),
    ("fig3", "Figure 3: state vs reward variance", ("rp1-statevar", "rp1"), False),
    ("fig_ablation", "Ablations", ("rp1-noadapt", "rp1-nopca", "rp1"), False),
)
"""(file prefix, title, methods, with PPO reference lines) of the per-task curve figures."""

PPO_TIMESTEPS: tuple[int, ...] = (1_000_000, 5_000_000, 10_000_000)
"""Real samples at which model-free PPO's best return is drawn as a reference (SPEC §8)."""

DEFINITIONS = """## How the numbers are made

- **Best at a timestep** (tables): per run, the best evaluation return among its evaluations
  made with at most that many real samples; a run counts only if it has such an evaluation and
  collected at least that many samples (max of `samples + phase_samples` over its rows), so an
  unfinished or smaller-budget run is missing there. Median and [25th, 75th percentile] over
  runs; one run per (task, method, seed) — duplicates keep the run that reached most samples.
- **t**: Welch's unequal-variances t-test (`scipy.stats.ttest_ind(equal_var=False)`) on the
  per-seed bests, `*` where p < 0.05; none when a side has fewer than 2 seeds.
- **IQM**: mean of the middle 50 % of seeds (`scipy.stats.trim_mean(…, 0.25)`), 95 % percentile
  bootstrap CI (`scipy.stats.bootstrap`, 9,999 resamples, fixed seed); no CI below 2 seeds.
- **Curves** (fig1, fig3, fig_ablation): each run's best-so-far evaluation return on a common
  grid of real samples (step alignment: the value at x is the best evaluation with samples ≤ x,
  so a curve at 10⁵ equals the table cell); median line and IQR band over the runs present at x.
  Dashed lines: model-free PPO's median best return by 10⁶ / 5·10⁶ / 10⁷ samples.
- **λ analysis** (fig2): for each row but a run's first, the change in evaluation return from
  the previous row, divided by the run's return range (max − min), grouped by the λ this row's
  policy was trained with; mean ± s.e.m. over all such steps of the adaptive-λ methods.
- **Phases** (diag, phases): the collection phases after each evaluation (`phase_samples`; the
  initial random-policy phase has no row and is not counted); saved = 3,000-sample cap − size.
"""


def report_tasks(metrics: pd.DataFrame) -> tuple[str, ...]:
    """The paper's four tasks in its order, then any other task found in the runs."""
    return TASKS + tuple(sorted(set(metrics["task"]) - set(TASKS)))


def ppo_references(metrics: pd.DataFrame) -> tuple[tuple[int, float, int], ...]:
    """(real samples, median best return, seeds) of one task's model-free runs at PPO_TIMESTEPS
    they reached."""
    model_free = metrics[metrics["method"] == MODEL_FREE]
    bests = [(samples, stats.best_at(model_free, samples)) for samples in PPO_TIMESTEPS]
    return tuple((samples, float(best.median()), len(best)) for samples, best in bests if len(best))


def write_curve_figures(metrics: pd.DataFrame, tasks: tuple[str, ...], out: Path) -> list[Path]:
    """fig1_<task>, fig3_<task> and fig_ablation_<task> for every task with runs to draw."""
    paths = []
    for task in tasks:
        runs = metrics[metrics["task"] == task]
        for prefix, title, methods, with_ppo in CURVE_FIGURES:
            references = ppo_references(runs) if with_ppo else ()
            paths.append(
                figures.curve_figure(
                    runs, methods, f"{title} — {task}", out / f"{prefix}_{task}.png", references
                )
            )
    return [path for path in paths if path]


def write_lambda_analysis(metrics: pd.DataFrame, tasks: tuple[str, ...], out: Path) -> list[Path]:
    """fig2_lambda.png and fig2_lambda.csv (task, method, lambda, n, mean, sem)."""
    summary = stats.lambda_summary(
        stats.lambda_improvements(metrics[metrics["method"].isin(ADAPTIVE_LAMBDA)])
    )
    summary.to_csv(out / "fig2_lambda.csv", index=False)
    figure = figures.lambda_figure(summary, tasks, out / "fig2_lambda.png")
    return [out / "fig2_lambda.csv", *([figure] if figure else [])]


def write_diagnostics(metrics: pd.DataFrame, tasks: tuple[str, ...], out: Path) -> list[Path]:
    """diag_<task>.png for every task with model-based runs."""
    model_based = metrics[metrics["method"] != MODEL_FREE]
    paths = [
        figures.diagnostics_figure(
            model_based[model_based["task"] == task], task, out / f"diag_{task}.png"
        )
        for task in tasks
    ]
    return [path for path in paths if path]


PHASE_FORMATS: dict[str, str] = {
    "runs": "{:,}",
    "phases": "{:,}",
    "mean_phase_samples": "{:,.0f}",
    "saved_per_run": "{:,.0f}",
    "saved_total": "{:,.0f}",
    "saved_share": "{:.1%}",
}
"""Columns of :func:`stats.phase_summary` and how phases.md prints them."""


def write_phase_summary(metrics: pd.DataFrame, out: Path) -> list[Path]:
    """phases.csv and phases.md: model-based phase sizes and samples saved against the cap."""
    summary = stats.phase_summary(
        stats.phase_sizes(metrics[metrics["method"] != MODEL_FREE]), PHASE_CAP
    )
    summary.to_csv(out / "phases.csv", index=False)
    rows = [
        [
            row.task,
            row.method,
            *(fmt.format(getattr(row, column)) for column, fmt in PHASE_FORMATS.items()),
        ]
        for row in summary.itertuples()
    ]
    header = ["task", "method", *(column.replace("_", " ") for column in PHASE_FORMATS)]
    table = markdown_table(header, rows) if rows else "No phases recorded."
    text = f"# Collection phases against the {PHASE_CAP:,}-sample cap\n\n{table}\n"
    (out / "phases.md").write_text(text, encoding="utf-8")
    return [out / "phases.csv", out / "phases.md"]


def inventory(metrics: pd.DataFrame) -> str:
    """A Markdown table of the runs found: per task and method, runs, seeds, budgets, reach."""
    if metrics.empty:
        return "No runs with metrics rows."
    runs = metrics.groupby("run").first()
    rows = [
        [
            task,
            method,
            str(len(group)),
            ", ".join(map(str, sorted(group["seed"]))),
            ", ".join(f"{budget:,}" for budget in sorted(group["budget"].unique())),
            f"{group['reached'].min():,.0f} – {group['reached'].max():,.0f}",
        ]
        for (task, method), group in runs.groupby(["task", "method"])
    ]
    return markdown_table(["task", "method", "runs", "seeds", "budgets", "samples reached"], rows)


def write_index(loaded: LoadedRuns, written: list[Path], out: Path) -> Path:
    """index.md: the runs found, notes on runs left out, links to every file, definitions."""
    links = "\n".join(f"- [{path.name}]({path.name})" for path in written)
    notes = "\n".join(f"- {note}" for note in loaded.notes) or "None."
    sections = [
        ("Runs", inventory(loaded.metrics)),
        ("Left out", notes),
        ("Files", links),
    ]
    body = "".join(f"## {title}\n\n{content}\n\n" for title, content in sections)
    text = f"# rp1 report\n\n{body}{DEFINITIONS}"
    path = out / "index.md"
    path.write_text(text, encoding="utf-8")
    return path


def write_report(root: Path, out: Path) -> list[Path]:
    """Write the report of every run directory under ``root`` into ``out`` (created if needed).

    Files: ``table{1,2,3}.md`` / ``.csv`` / ``_ttests.csv``, ``fig1_<task>.png``,
    ``fig2_lambda.png`` / ``.csv``, ``fig3_<task>.png``, ``fig_ablation_<task>.png``,
    ``diag_<task>.png``, ``phases.csv`` / ``.md`` and ``index.md`` (figures only where there are
    runs to draw). Returns the paths written, ``index.md`` last. Raises ConfigError when ``root``
    holds no run directory or a malformed one.
    """
    loaded = load_runs(Path(root))
    metrics, out = loaded.metrics, Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = report_tasks(metrics)
    written = [path for spec in TABLES for path in write_table(metrics, spec, tasks, out)]
    written += write_curve_figures(metrics, tasks, out)
    written += write_lambda_analysis(metrics, tasks, out)
    written += write_diagnostics(metrics, tasks, out)
    written += write_phase_summary(metrics, out)
    return written + [write_index(loaded, written, out)]
