"""Load run directories into one tidy table: one row per ``metrics.csv`` row, config beside it.

A run directory is any directory holding both ``config.json`` and ``metrics.csv`` (DESIGN
"Interfaces"); the report reads nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from rp1.errors import ConfigError

CONFIG_KEYS: tuple[str, ...] = ("task", "method", "seed", "budget")
"""Keys of ``config.json`` every run must have."""

REQUIRED_COLUMNS: tuple[str, ...] = ("iteration", "samples", "eval_return")
"""Columns of ``metrics.csv`` every run must have (model-free runs included)."""

OPTIONAL_COLUMNS: tuple[str, ...] = (
    "lambda",
    "model_return",
    "model_error",
    "val_loss",
    "phase_samples",
    "residual",
    "policy_updates",
    "model_epochs",
    "wall_s",
)
"""Columns the report uses when present; absent ones are added as empty (NaN)."""

RUN_KEY: tuple[str, ...] = ("task", "method", "seed")
"""What makes a run unique in a report: two directories with the same key are duplicates."""


class LoadedRuns(NamedTuple):
    """The runs found under a root.

    ``metrics``: one row per metrics row, columns ``run`` (path relative to the root), ``preset``,
    ``task``, ``method``, ``seed``, ``budget`` (real samples), ``reached`` (real samples the run
    had collected by its last row: max of ``samples + phase_samples``), then the metric columns.
    ``notes``: one line per run directory left out, and why.
    """

    metrics: pd.DataFrame
    notes: list[str]


def find_run_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (any depth, ``root`` included) with config + metrics."""
    return sorted(
        p.parent for p in root.rglob("config.json") if (p.parent / "metrics.csv").is_file()
    )


def read_config(run_dir: Path) -> dict:
    """The config keys the report needs; raises ConfigError naming the file if one is missing."""
    path = run_dir / "config.json"
    try:
        config = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ConfigError(f"{path}: not a readable JSON config ({err})") from err
    missing = [key for key in CONFIG_KEYS if key not in config]
    if missing:
        raise ConfigError(
            f"{path}: missing key(s) {', '.join(missing)}; need {', '.join(CONFIG_KEYS)}"
        )
    return {
        "preset": str(config.get("preset", "")),
        "task": str(config["task"]),
        "method": str(config["method"]),
        "seed": int(config["seed"]),
        "budget": int(config["budget"]),
    }


def read_metrics(run_dir: Path) -> pd.DataFrame:
    """``metrics.csv`` as numbers, sorted by samples; empty frame for an empty file."""
    path = run_dir / "metrics.csv"
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        table = pd.DataFrame(columns=list(REQUIRED_COLUMNS))
    missing = [column for column in REQUIRED_COLUMNS if column not in table.columns]
    if missing:
        raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}")
    for column in OPTIONAL_COLUMNS:
        if column not in table.columns:
            table[column] = float("nan")
    table = table.apply(pd.to_numeric, errors="coerce")
    return table.sort_values(["samples", "iteration"], kind="stable").reset_index(drop=True)


def samples_reached(metrics: pd.DataFrame) -> float:
    """Real samples collected by the run's last row: the row's samples plus its phase's (if any)."""
    return float((metrics["samples"] + metrics["phase_samples"].fillna(0)).max())


def load_run(root: Path, run_dir: Path) -> pd.DataFrame:
    """One run's metrics with its config and ``reached`` broadcast onto every row."""
    metrics = read_metrics(run_dir)
    header = {"run": run_dir.relative_to(root).as_posix(), **read_config(run_dir)}
    header["reached"] = samples_reached(metrics) if len(metrics) else 0.0
    return metrics.assign(**header)[[*header, *metrics.columns]]


def drop_duplicates(runs: list[pd.DataFrame]) -> tuple[list[pd.DataFrame], list[str]]:
    """Keep, per (task, method, seed), the run that reached the most samples; say which went."""
    best: dict[tuple, pd.DataFrame] = {}
    notes = []
    for run in runs:
        key = tuple(run[column].iloc[0] for column in RUN_KEY)
        kept = best.setdefault(key, run)
        if kept is run:
            continue
        winner, loser = (
            (run, kept) if run["reached"].iloc[0] > kept["reached"].iloc[0] else (kept, run)
        )
        best[key] = winner
        notes.append(
            f"{loser['run'].iloc[0]}: duplicate of {winner['run'].iloc[0]} "
            f"(same task, method, seed; fewer samples) — left out"
        )
    return list(best.values()), notes


def load_runs(root: Path) -> LoadedRuns:
    """All runs under ``root`` as one tidy table (see :class:`LoadedRuns`).

    Runs with no rows yet are left out with a note; so are duplicates (see
    :func:`drop_duplicates`). Raises ConfigError when ``root`` holds no run directory at all.
    """
    run_dirs = find_run_dirs(root)
    if not run_dirs:
        raise ConfigError(f"{root}: no run directories (a folder with config.json and metrics.csv)")
    runs, notes = [], []
    for run_dir in run_dirs:
        run = load_run(root, run_dir)
        if run.empty:
            notes.append(f"{run_dir.relative_to(root).as_posix()}: no metrics rows yet — left out")
        else:
            runs.append(run)
    runs, duplicate_notes = drop_duplicates(runs)
    metrics = pd.concat(runs, ignore_index=True) if runs else empty_table()
    return LoadedRuns(metrics=metrics, notes=notes + duplicate_notes)


def empty_table() -> pd.DataFrame:
    """A metrics table with the right columns and no rows."""
    columns = ["run", "preset", *CONFIG_KEYS, "reached", *REQUIRED_COLUMNS, *OPTIONAL_COLUMNS]
    return pd.DataFrame(columns=columns)
