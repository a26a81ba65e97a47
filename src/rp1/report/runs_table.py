"""Load run directories into tidy tables: one row per ``metrics.csv`` row, config beside it, and
one row per ``evaluations.csv`` row (the evaluation grid, :mod:`rp1.agents.grid`) of the runs that
have one.

A run directory is any directory holding both ``config.json`` and ``metrics.csv`` (DESIGN
"Interfaces"); besides those the report reads ``evaluations.csv`` where a run has it (runs made
before the grid, or with ``eval.every`` 0, have none). A row that a killed run left half-written is
left out with a note: the writer (``rp1.rundir.files``) ends every row with a newline and fsyncs it,
so a last line without one is unfinished even when its fields look whole (``12.3`` cut from
``12.345``). Both files are read the same way.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from rp1.config.methods import run_cell
from rp1.core.errors import ConfigError
from rp1.rundir import files
from rp1.rundir.files import (
    CONFIG,
    EVALUATION_COLUMNS,
    EVALUATIONS,
    METRIC_COLUMNS,
    METRICS,
    RunDir,
    find_run_dirs,
    read_run_config,
)

REQUIRED_COLUMNS: tuple[str, ...] = ("iteration", "samples", "eval_return")
"""Columns of ``metrics.csv`` every run must have (model-free runs included)."""

OPTIONAL_COLUMNS: tuple[str, ...] = tuple(c for c in METRIC_COLUMNS if c not in REQUIRED_COLUMNS)
"""Every other column :mod:`rp1.rundir.files` writes; absent ones (older runs) are added as empty (NaN)."""

DEFAULT_SCALE = "paper"
"""The ``scale`` of a run whose config.json has none (runs written before the key existed)."""

RUN_KEY: tuple[str, ...] = ("task", "scale", "method", "seed")
"""What makes a run unique in a report: two directories with the same key are duplicates."""

HEADER_TEXT: tuple[str, ...] = ("run", "preset", "task", "scale", "method", "dealing")
HEADER_NUMBERS: tuple[str, ...] = ("seed", "budget", "phase_cap", "eval_every", "reached")
"""The columns a run's config and reach put before its file's columns, on every row of its run."""


class LoadedRuns(NamedTuple):
    """The runs found under one or more roots.

    ``metrics``: one row per metrics row, columns ``run`` (its name, :func:`named_run_dirs`), ``preset``,
    ``task``, ``scale``, ``method``, ``dealing`` (config ``model.dealing``: how the ensemble's
    minibatches were dealt), ``seed``, ``budget`` (real samples), ``phase_cap`` (real
    samples; config ``collect.phase_cap``, NaN if absent), ``eval_every`` (real samples; config
    ``eval.every``, 0 for no grid and for runs made before it existed), ``reached`` (real samples
    the run had collected by its last row, see :func:`samples_reached`), then the metric columns.
    ``evaluations``: the evaluation grid of the runs of ``metrics`` that have an
    ``evaluations.csv``, one row per grid point: the same first columns, then
    :data:`~rp1.rundir.files.EVALUATION_COLUMNS` (``samples`` the grid point in real samples,
    ``trained_on``, ``iteration``, ``eval_return``, ``eval_std``), sorted by run and samples.
    ``notes``: one line per run directory or row left out, and why.
    ``others`` and ``other_evaluations``: the same tables of the duplicates left out
    (:func:`drop_duplicates`): other realisations of the kept runs' seeds.
    ``dirs``: the directory of every run found, by its name (those left out too).
    """

    metrics: pd.DataFrame
    notes: list[str]
    evaluations: pd.DataFrame
    others: pd.DataFrame
    other_evaluations: pd.DataFrame
    dirs: dict[str, Path]


def scale_order(scale: str) -> tuple[bool, str]:
    """Sort key of scales: the paper's first, then the others by name."""
    return scale != DEFAULT_SCALE, scale


def read_config(run_dir: Path) -> dict:
    """The config keys the report needs, of a config of any schema up to this rp1's (read by
    :func:`rp1.rundir.files.read_run_config`); raises ConfigError naming the file if a key is missing
    or the file is not its run's own, and :class:`~rp1.config.migrations.NewerSchema` for a config of
    a newer rp1.

    ``scale`` defaults to :data:`DEFAULT_SCALE`; ``phase_cap`` is NaN when the config has no
    ``collect.phase_cap``; ``eval_every`` is ``eval.every`` (0 in a config of a schema before the
    grid, as migrated: no grid); ``method`` is the method the run ran as (:func:`rp1.config.methods.run_cell`:
    an ``rp1`` run with λ fixed at 0.5 by ``--set`` pools with ``rp1-fixed05``); ``dealing`` is
    ``model.dealing`` (``shuffle`` in a config of a schema before it, as migrated).
    """
    path = run_dir / CONFIG
    config = read_run_config(run_dir)
    collect = config.get("collect", {})
    grid = config.get("eval", {})
    model = config.get("model", {})
    values = {
        "preset": config.get("preset", ""),
        "task": config["task"],
        "scale": config.get("scale", DEFAULT_SCALE),
        "method": config["method"],
        "dealing": model.get("dealing", "") if isinstance(model, dict) else model,
        "seed": config["seed"],
        "budget": config["budget"],
        "phase_cap": collect.get("phase_cap", math.nan) if isinstance(collect, dict) else collect,
        "eval_every": grid.get("every", 0) if isinstance(grid, dict) else grid,
    }
    kinds: dict[str, type | tuple[type, ...]] = {
        "seed": int,
        "budget": int,
        "phase_cap": (int, float),
        "eval_every": int,
    }
    wrong = [
        f"{key} = {value!r}"
        for key, value in values.items()
        if isinstance(value, bool) or not isinstance(value, kinds.get(key, str))
    ]
    if wrong:
        raise ConfigError(f"{path}: {', '.join(wrong)} is not a value of an rp1 config")
    return {**values, "phase_cap": float(values["phase_cap"]), "method": run_cell(config)}


def parse_row(fields: list[str], header: list[str]) -> tuple[list[float] | None, str]:
    """One metrics row's fields (under ``header``) as numbers (empty field: NaN), or None and why
    it is unusable: another number of fields than the header, a field that is not a number, an
    ``eval_return`` written as a number that is not finite (a run that diverged)."""
    if len(fields) != len(header):
        return None, f"has {len(fields)} fields, its header {len(header)}"
    try:
        row = [float(field) if field else math.nan for field in fields]
    except ValueError:
        return None, "has a field that is not a number"
    if "eval_return" in header:
        value = fields[header.index("eval_return")]
        if value and not math.isfinite(float(value)):
            return None, f"has an eval_return that is not finite ({value})"
    return row, ""


def parse_table(
    text: str, name: str, file: str = METRICS, header: tuple[str, ...] = REQUIRED_COLUMNS
) -> tuple[pd.DataFrame, list[str]]:
    """The text of a run's CSV ``file`` (``metrics.csv``, ``evaluations.csv``) as a table of
    numbers, and a note per row left out; ``header``: the columns of a file without a header line.

    Left out: a last line without its newline (unfinished), a row with another number of fields
    than the header, a row with a field that is not a number or a non-finite ``eval_return``.
    ``name`` names the run in notes.
    """
    *lines, last = text.split("\n")  # a finished file ends with "\n": ``last`` is then empty
    rows = list(csv.reader(lines))
    columns, values, notes = (rows[0] if rows else list(header)), [], []
    for number, fields in enumerate(rows[1:], start=2):
        row, problem = parse_row(fields, columns)
        if row is None:
            notes.append(f"{name}: {file} line {number} {problem} — row left out")
        else:
            values.append(row)
    if last:
        notes.append(
            f"{name}: {file} line {len(lines) + 1} is unfinished (no newline: cut while "
            "written) — row left out"
        )
    return pd.DataFrame(values, columns=columns), notes


def read_table(
    run_dir: Path, name: str, file: str, required: tuple[str, ...]
) -> tuple[pd.DataFrame, list[str]]:
    """A run's CSV ``file`` as numbers (:func:`parse_table`) and notes on rows left out; raises
    ConfigError when the file is not text or lacks a column of ``required``."""
    path = run_dir / file
    try:
        text = RunDir(run_dir).read_file(file, file).decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not a text file of numbers ({err})") from None
    table, notes = parse_table(text, name, file, required)
    missing = [column for column in required if column not in table.columns]
    if missing:
        raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}")
    return table, notes


def read_metrics(run_dir: Path, name: str) -> tuple[pd.DataFrame, list[str]]:
    """``metrics.csv`` as numbers sorted by samples, every column of :data:`OPTIONAL_COLUMNS`
    there (NaN where the file has none), and notes on rows left out (see :func:`read_table`)."""
    table, notes = read_table(run_dir, name, METRICS, REQUIRED_COLUMNS)
    for column in OPTIONAL_COLUMNS:
        if column not in table.columns:
            table[column] = math.nan
    table = table.sort_values(["samples", "iteration"], kind="stable").reset_index(drop=True)
    return table, notes


def samples_reached(metrics: pd.DataFrame, method: str) -> float:
    """Real samples the run had collected by its last row, by the rule a run directory is read
    with (:func:`rp1.rundir.files.samples_reached`)."""
    counted = [column for column in ("samples", "phase_samples") if column in metrics]
    return files.samples_reached(metrics[counted].to_dict("records"), method)


def read_evaluations(run_dir: Path, name: str) -> tuple[pd.DataFrame, list[str]]:
    """``evaluations.csv`` as numbers (:data:`~rp1.rundir.files.EVALUATION_COLUMNS`) sorted by
    samples, and notes on rows left out (see :func:`read_table`); no rows if the run has no
    such file."""
    if not (run_dir / EVALUATIONS).is_file():
        return pd.DataFrame(columns=list(EVALUATION_COLUMNS), dtype=float), []
    table, notes = read_table(run_dir, name, EVALUATIONS, EVALUATION_COLUMNS)
    table = table[list(EVALUATION_COLUMNS)].sort_values("samples", kind="stable")
    return table.reset_index(drop=True), notes


class Run(NamedTuple):
    """One run as the report reads it: its metrics and its grid (:class:`LoadedRuns`' columns),
    and notes on rows left out."""

    metrics: pd.DataFrame
    evaluations: pd.DataFrame
    notes: list[str]


def with_header(table: pd.DataFrame, header: dict) -> pd.DataFrame:
    """``table`` with the run's ``header`` values as its first columns, on every row."""
    return table.assign(**header)[[*header, *table.columns]]


def load_run(name: str, run_dir: Path) -> Run:
    """The run in ``run_dir``, named ``name``: its metrics and grid with its config and ``reached``
    broadcast onto every row, and notes on rows left out."""
    metrics, notes = read_metrics(run_dir, name)
    evaluations, grid_notes = read_evaluations(run_dir, name)
    header = {"run": name, **read_config(run_dir)}
    header["reached"] = samples_reached(metrics, header["method"]) if len(metrics) else 0.0
    return Run(with_header(metrics, header), with_header(evaluations, header), notes + grid_notes)


def completeness(run: Run) -> tuple[float, int, int]:
    """How much of a run there is: real samples reached, then the number of metrics columns
    holding a value (a run made again to log a metric added since has more), then its grid
    evaluations (a run made again with the grid has them)."""
    metrics = run.metrics
    return float(metrics["reached"].iloc[0]), int(metrics.notna().any().sum()), len(run.evaluations)


LOSER_REASONS = (
    "fewer samples",
    "as many samples, fewer metrics logged",
    "as many samples and metrics, fewer grid evaluations",
)
"""Why a duplicate went, by the first entry of :func:`completeness` in which it has less."""


def drop_duplicates(runs: list[Run]) -> tuple[list[Run], list[Run], list[str]]:
    """Keep, per (task, scale, method, seed), the most complete run (:func:`completeness`: most
    samples reached, then most columns logged, then most grid evaluations; the first of ``runs``,
    in path order, where all are equal): a rule of what each run holds, not of its returns. Returns
    the runs kept, the others (in the same order of preference) and a note per other saying why it
    went."""
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        groups.setdefault(tuple(run.metrics[column].iloc[0] for column in RUN_KEY), []).append(run)
    kept, others, notes = [], [], []
    for group in groups.values():
        winner = max(group, key=completeness)  # the first of the maximal ones
        kept.append(winner)
        ranked = sorted(group, key=completeness, reverse=True)  # stable: path order among equals
        for loser in ranked:
            if loser is winner:
                continue
            others.append(loser)
            less = [a < b for a, b in zip(completeness(loser), completeness(winner), strict=True)]
            why = (
                LOSER_REASONS[less.index(True)]
                if any(less)
                else "as many samples and metrics; the first by path kept"
            )
            notes.append(
                f"{loser.metrics['run'].iloc[0]}: duplicate of {winner.metrics['run'].iloc[0]} "
                f"(same task, scale, method, seed; {why}) — left out"
            )
    return kept, others, notes


def named_run_dirs(roots: Sequence[Path]) -> dict[str, Path]:
    """Every run directory under ``roots`` (:func:`~rp1.rundir.files.find_run_dirs`, in order), by
    its name in a report: its path under its root (``hopper-rp1/seed0``), after the root's folder
    name where there are several (``pilot1e5/hopper-rp1/seed0``). ConfigError for no root, a root
    inside another (its runs would be read twice), two roots of one folder name, or a root that
    holds no run directory."""
    if not roots:
        raise ConfigError("no root to read runs from")
    resolved = [Path(root).resolve() for root in roots]
    for inner, outer in itertools.permutations(range(len(roots)), 2):
        same = resolved[inner] == resolved[outer]
        if same or resolved[outer] in resolved[inner].parents:
            where = "one folder with" if same else "inside"
            raise ConfigError(
                f"root {roots[inner]} is {where} root {roots[outer]}: its runs would be read twice"
            )
    folders = [root.name for root in resolved]
    if len(roots) > 1 and len(set(folders)) < len(folders):
        raise ConfigError(
            f"roots {', '.join(map(str, roots))}: two have one folder name, which would name "
            "their runs alike (a run's name starts with its root's folder name)"
        )
    named = {}
    for root, folder in zip(roots, folders, strict=True):
        for run_dir in find_run_dirs(Path(root)):
            name = run_dir.relative_to(root).as_posix()
            named[f"{folder}/{name}" if len(roots) > 1 else name] = run_dir
    return named


def load_runs(roots: Path | Sequence[Path]) -> LoadedRuns:
    """All runs under ``roots`` (a root, or several) as tidy tables (see :class:`LoadedRuns`),
    each run named as :func:`named_run_dirs` names it.

    Runs with no metrics rows yet are left out with a note; so are runs written by a newer rp1 (a
    config schema this one does not know), runs whose ``config.json``, ``metrics.csv`` or
    ``evaluations.csv`` is malformed (a key or column missing or of the wrong type, a file that is
    not text), unusable rows of either file (see :func:`parse_table`) and duplicates (see
    :func:`drop_duplicates`), across roots as within one. Raises ConfigError when a root holds no
    run directory at all.
    """
    run_dirs = named_run_dirs([roots] if isinstance(roots, (str, Path)) else list(roots))
    runs, notes = [], []
    for name, run_dir in run_dirs.items():
        try:
            run = load_run(name, run_dir)
        except ConfigError as bad:  # a config of a newer rp1 (NewerSchema), a malformed file
            notes.append(f"{' '.join(str(bad).split())} — left out")
            continue
        notes += run.notes
        if run.metrics.empty:
            metrics_notes = [note for note in run.notes if f": {METRICS} line" in note]
            rows = "no usable metrics rows" if metrics_notes else "no metrics rows yet"
            notes.append(f"{name}: {rows} — left out")
        else:
            runs.append(run)
    runs, others, duplicate_notes = drop_duplicates(runs)
    metric_columns = (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS)
    return LoadedRuns(
        metrics=concat([run.metrics for run in runs], metric_columns),
        notes=notes + duplicate_notes,
        evaluations=concat([run.evaluations for run in runs], EVALUATION_COLUMNS),
        others=concat([run.metrics for run in others], metric_columns),
        other_evaluations=concat([run.evaluations for run in others], EVALUATION_COLUMNS),
        dirs=run_dirs,
    )


def concat(tables: list[pd.DataFrame], columns: tuple[str, ...]) -> pd.DataFrame:
    """The runs' ``tables`` as one (the empty ones left out), or :func:`empty_table` of
    ``columns`` when none has rows."""
    tables = [table for table in tables if not table.empty]
    return pd.concat(tables, ignore_index=True) if tables else empty_table(columns)


def empty_table(columns: tuple[str, ...] = (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS)) -> pd.DataFrame:
    """A table of runs with the header columns, then ``columns`` (by default the metrics'), and
    no rows."""
    numbers = [*HEADER_NUMBERS, *columns]
    return pd.DataFrame(columns=[*HEADER_TEXT, *numbers]).astype(dict.fromkeys(numbers, float))
