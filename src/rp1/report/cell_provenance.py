"""Where each cell's runs come from: ``provenance.csv`` and ``provenance.md`` of ``rp1 report``.

A run's numbers depend on more than its config: on the code that made it, on the CPU it ran on
(its vector extensions choose XLA's and OpenBLAS's arithmetic) and on ``OPENBLAS_CORETYPE``, all
recorded in its ``environment.json`` (:mod:`rp1.rundir.provenance`), and on ``XLA_FLAGS`` and
XLA's thread count, recorded there too; on how its ensemble was
trained (config ``model.dealing``); on the size of the program it ran in (a seed in a batch of
``seeds_per_process`` seeds computes other last bits than alone, and than in a batch of another
size: rp1 0.2.x's ``--seeds-per-process N``, the lockstep runs of :mod:`rp1.rundir.lockstep`); and the report scores its fair measures from its evaluation
grid or, for a run without one, from ``metrics.csv`` (:mod:`rp1.report.fair`). Runs that
differ in any of these are different experiments, however alike their configs.

Per run (:func:`run_provenance`): its ``commit`` (several joined by ``+`` where a resume ran
other code), ``cpu`` (its recorded extensions, labelled by :func:`cpu_labels`), ``coretype``,
``xla`` (its ``XLA_FLAGS`` and XLA's CPU thread count, :func:`xla_settings`), ``dealing``, ``program`` (:func:`program`), ``scoring`` (``grid`` or ``metrics.csv``), ``made``
(the day its record starts) and ``work_s`` (its ``wall_s`` summed: seconds of work, under
whatever load it shared the machine with); :data:`NOT_RECORDED` where a run has no record of it.
Per cell, a (task, scale, method) of the runs a report keeps (:func:`cell_provenance`): each
field's values with how many runs have each, the work per run and in all (:func:`cell_work`),
and ``mixed``: the fields in which its runs differ.
A cell whose runs ran in programs of different sizes is not reported at all
(:func:`check_programs`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rp1.config.methods import method_label, method_names
from rp1.core.errors import ConfigError, LinkOutside, StorageError
from rp1.core.storage import read_inside, write_atomically
from rp1.report.markdown import markdown_table
from rp1.report.runs_table import scale_order
from rp1.rundir.files import ENVIRONMENT, SEEDS_PER_PROCESS

NOT_RECORDED = "not recorded"
"""A field a run's files do not record (a run made before ``environment.json``, or before the
field existed)."""

FIELDS: tuple[str, ...] = ("commit", "cpu", "coretype", "xla", "dealing", "program", "scoring")
"""What a cell's runs must share to be one experiment; a cell whose runs differ in one is mixed."""

RUN_COLUMNS: tuple[str, ...] = (
    *("run", "task", "scale", "method", "seed", "kept", "device"),
    *FIELDS,
    *("made", "work_s"),
)
"""The columns of :func:`run_provenance`."""

CELL_COLUMNS: tuple[str, ...] = (
    *("task", "scale", "method", "runs", "device"),
    *FIELDS,
    *("made", "work_median_s", "work_min_s", "work_max_s", "work_total_s", "mixed"),
)
"""The columns of ``provenance.csv``, one row per cell (:func:`cell_provenance`)."""

WORK_HEADER: tuple[str, ...] = ("work per run, min", "work in all, h", "mixed")
"""The headers of a provenance table's last columns, after the fields and ``made``: here and in
the results pages (``docs/tooling/results_page.py``)."""

SHORT_COMMIT = 7
"""Hex digits of a commit shown."""


def read_environments(run_dir: Path) -> list[dict]:
    """The entries of a run's ``environment.json``; none where it has no such file, one that is
    not a record (not JSON, not a list of objects) or a link out of the run directory (never read,
    :func:`~rp1.core.storage.read_inside`)."""
    try:
        record = json.loads(read_inside(run_dir, run_dir / ENVIRONMENT, ENVIRONMENT))
    except (StorageError, LinkOutside, ValueError):
        return []
    entries = record.get("environments") if isinstance(record, dict) else None
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries if isinstance(entry, dict)]


def short_commit(commit: str) -> str:
    """A commit as shown: its first :data:`SHORT_COMMIT` hex digits, keeping a ``-modified``
    suffix (a checkout with uncommitted changes); other values (``unknown``) as they are."""
    head, modified, _ = commit.partition("-modified")
    if len(head) == 40 and all(c in "0123456789abcdef" for c in head):
        return head[:SHORT_COMMIT] + modified
    return commit


def recorded(
    entries: list[dict],
    field: str,
    show: Callable[[Any], str] = str,
    missing: str = NOT_RECORDED,
) -> str:
    """The distinct values of ``field`` over a run's entries, in order, shown by ``show`` and
    joined by ``+``; ``missing`` for an entry without it; :data:`NOT_RECORDED` without entries."""
    values = [show(entry[field]) if field in entry else missing for entry in entries]
    return "+".join(dict.fromkeys(values)) or NOT_RECORDED


ALONE = "alone"
"""The program of a run alone (one seed a process), as shown."""


def program(seeds_per_process: Any) -> str:
    """The program a run ran in, as shown: :data:`ALONE` for one seed, ``N seeds`` for a batch
    of N (an entry of ``environment.json`` written before the field existed is a run alone)."""
    return ALONE if seeds_per_process == 1 else f"{seeds_per_process} seeds"


def program_size(shown: str) -> int:
    """How many seeds the program :func:`program` shows as ``shown`` advanced together: N for
    ``N seeds``, 1 for a run alone or one whose program is not recorded."""
    count, _, unit = shown.partition(" ")
    return int(count) if unit == "seeds" and count.isdigit() else 1


def cell_work(cell: pd.DataFrame) -> float:
    """The seconds of work a cell's runs (:func:`run_provenance`'s rows) cost in all: their
    ``work_s`` summed, a run in a program of N seeds counting 1/N of it (the N seeds share the
    program's wall time); NaN where none recorded it."""
    recorded = cell.dropna(subset=["work_s"])
    if recorded.empty:
        return math.nan
    sizes = [program_size(shown) for shown in recorded["program"]]
    return float(sum(work / size for work, size in zip(recorded["work_s"], sizes, strict=True)))


def coretype(value: str) -> str:
    """``OPENBLAS_CORETYPE`` as shown: ``unset`` where it was empty."""
    return value or "unset"


def xla_settings(entry: dict) -> str:
    """The XLA settings an entry of ``environment.json`` records that change a run's arithmetic,
    as shown: its ``XLA_FLAGS`` (``no flags`` where empty) and CPU thread pool, e.g.
    ``--xla_cpu_multi_thread_eigen=false, 2 threads``; :data:`NOT_RECORDED` where the entry lacks
    either."""
    if "xla_flags" not in entry or "xla_threads" not in entry:
        return NOT_RECORDED
    return f"{entry['xla_flags'] or 'no flags'}, {entry['xla_threads']} threads"


def run_provenance(
    dirs: Mapping[str, Path], metrics: pd.DataFrame, grid: pd.DataFrame, kept: bool
) -> pd.DataFrame:
    """:data:`RUN_COLUMNS` of every run of ``metrics`` (a report's metrics table, of runs in
    ``dirs``, by name), one row per run in run order; ``grid``: the same runs on their grid
    (:func:`~rp1.report.fair.policy_grid`), which says how each is scored; ``kept``: whether
    they are the runs the report keeps or other realisations.
    ``cpu`` is the run's recorded extensions (several joined by ``+``), as :func:`cpu_labels`
    names them."""
    if metrics.empty:
        return pd.DataFrame(columns=list(RUN_COLUMNS))
    first = metrics.groupby("run", sort=True).first()
    work = metrics.groupby("run", sort=True)["wall_s"].sum(min_count=1)
    scoring = grid.groupby("run")["source"].first()
    rows = []
    for run, row in first.iterrows():
        entries = read_environments(dirs[str(run)])
        source = scoring.get(run)
        rows.append(
            (
                run,
                row["task"],
                row["scale"],
                row["method"],
                int(row["seed"]),
                kept,
                recorded(entries, "device"),
                recorded(entries, "commit", short_commit),
                recorded(entries, "cpu_features"),
                recorded(entries, "openblas_coretype", coretype),
                "+".join(dict.fromkeys(map(xla_settings, entries))) or NOT_RECORDED,
                row["dealing"] or NOT_RECORDED,
                recorded(entries, SEEDS_PER_PROCESS, program, missing=ALONE),
                "grid" if source == "evaluations.csv" else "metrics.csv",
                min((str(e["recorded"])[:10] for e in entries if "recorded" in e), default=""),
                float(work[run]),
            )
        )
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS))


ISA_TIERS: tuple[tuple[str, str], ...] = (
    ("avx512f", "AVX-512"),
    ("avx2", "AVX2"),
    ("avx", "AVX"),
    ("asimd", "Arm SIMD"),
)
"""The widest vector extension that names a CPU in a report: (flag, label), widest first."""


def cpu_tier(features: str) -> str:
    """The :data:`ISA_TIERS` label of an extension list, ``other`` when it has none of them."""
    flags = set(features.split())
    return next((label for flag, label in ISA_TIERS if flag in flags), "other")


def cpu_labels(feature_lists: Iterable[str]) -> dict[str, str]:
    """A short name per distinct extension list (a run's recorded ``cpu_features``): its
    :func:`cpu_tier`, with a letter where several lists share one (``AVX-512 (a)``, ``AVX-512
    (b)``: fewer extensions first, then by text); :data:`NOT_RECORDED` as it is."""
    by_tier: dict[str, list[str]] = {}
    for features in sorted(set(feature_lists) - {NOT_RECORDED}, key=lambda f: (len(f.split()), f)):
        by_tier.setdefault(cpu_tier(features), []).append(features)
    labels = {NOT_RECORDED: NOT_RECORDED}
    for tier, lists in by_tier.items():
        for index, features in enumerate(lists):
            labels[features] = tier if len(lists) == 1 else f"{tier} ({'abcdefghij'[index % 10]})"
    return labels


def cpu_legend(feature_lists: Iterable[str]) -> str:
    """A Markdown list: each :func:`cpu_labels` name and its extensions, those that set it apart
    from the other lists of its tier first."""
    labels = cpu_labels(feature_lists)
    lines = []
    for features, label in labels.items():
        if features == NOT_RECORDED:
            continue
        tier = [
            f
            for f, name in labels.items()
            if f != NOT_RECORDED and cpu_tier(f) == cpu_tier(features)
        ]
        common = set.intersection(*(set(f.split()) for f in tier))
        own = sorted(set(features.split()) - common)
        apart = f" (beyond the others of its kind: {' '.join(own)})" if len(tier) > 1 else ""
        lines.append(f"- **{label}**: `{features}`{apart}")
    return "\n".join(lines) or "None recorded."


def joined_values(column: Iterable[str]) -> set[str]:
    """Every value in ``column``, whose entries join a run's values with ``+``."""
    return {value for joined in column for value in str(joined).split("+")}


def counted(values: Iterable[str]) -> str:
    """Distinct values with how many runs have each, most first: ``33a11ac ×10, e329a69 ×20``."""
    counts = Counter(values)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{value} ×{n}" for value, n in ordered)


def labelled(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (:func:`run_provenance`'s rows) with each ``cpu`` as :func:`cpu_labels` of all of
    their CPUs names it."""
    labels = cpu_labels(value for cpus in runs["cpu"] for value in cpus.split("+"))
    return runs.assign(cpu=["+".join(labels[c] for c in cpus.split("+")) for cpus in runs["cpu"]])


def work_spread(work: np.ndarray) -> tuple[float, float, float]:
    """Median, min and max of the runs' work (seconds); NaNs where none recorded it."""
    if not len(work):
        return math.nan, math.nan, math.nan
    return float(np.median(work)), float(work.min()), float(work.max())


def cell_order(tasks: tuple[str, ...]) -> Callable[[tuple[str, str, str]], tuple]:
    """Sort key of a (task, scale, method): ``tasks`` order, the paper's scale first, the method
    table's order."""
    names = method_names()

    def key(cell: tuple[str, str, str]) -> tuple:
        task, scale, method = cell
        return (
            tasks.index(task) if task in tasks else len(tasks),
            scale_order(scale),
            names.index(method) if method in names else len(names),
            method,
        )

    return key


def cell_provenance(runs: pd.DataFrame, tasks: tuple[str, ...]) -> pd.DataFrame:
    """:data:`CELL_COLUMNS` per (task, scale, method) of the kept runs of ``runs``
    (:func:`run_provenance`'s rows, other realisations included, so that a CPU has one name
    throughout), in :func:`cell_order`: each field as :func:`counted` (CPUs as :func:`labelled`),
    ``made`` the first and last day, the work per run in seconds (median, min, max) and in all
    (:func:`cell_work`), and
    ``mixed``: the :data:`FIELDS` in which the cell's runs differ (a run resumed on other code,
    CPU or settings differs from itself), comma-separated, empty for none; never ``program``,
    whose two sizes in a cell :func:`check_programs` refuses and whose ``not recorded`` (a run
    made before programs existed, or its record lost) is not held against the others."""
    runs = labelled(runs)
    runs = runs[runs["kept"].astype(bool)]
    if runs.empty:
        return pd.DataFrame(columns=list(CELL_COLUMNS))
    rows = []
    groups = dict(list(runs.groupby(["task", "scale", "method"])))
    for (task, scale, method), cell in sorted(
        groups.items(), key=lambda g: cell_order(tasks)(g[0])
    ):
        mixed = [
            field
            for field in FIELDS
            if field != "program"  # two sizes are refused (check_programs), and unknown is not one
            and len(joined_values(cell[field])) > 1
        ]
        days = sorted(day for day in cell["made"] if day)
        work = cell["work_s"].dropna().to_numpy(dtype=float)
        rows.append(
            (task, scale, method, len(cell), counted(cell["device"]))
            + tuple(counted(cell[field]) for field in FIELDS)
            + (" – ".join(dict.fromkeys([days[0], days[-1]])) if days else "",)
            + work_spread(work)
            + (cell_work(cell), ", ".join(mixed))
        )
    return pd.DataFrame(rows, columns=list(CELL_COLUMNS))


def check_programs(runs: pd.DataFrame) -> None:
    """Raise ConfigError, one line, where a cell's kept runs of ``runs`` (:func:`run_provenance`'s
    rows) ran in programs of different sizes: alone and in a batch, or in batches of two sizes.
    Their seeds are then not one computation repeated, and a report never pools them; runs whose
    program is not recorded are not held against the others."""
    runs = runs[runs["kept"].astype(bool)]
    for (task, scale, method), cell in runs.groupby(["task", "scale", "method"], sort=True):
        seeds: dict[str, list[int]] = {}
        for row in cell.itertuples():
            for value in str(row.program).split("+"):
                if value != NOT_RECORDED:
                    seeds.setdefault(value, []).append(int(row.seed))
        if len(seeds) > 1:
            held = "; ".join(
                f"{value}: seeds {', '.join(map(str, sorted(s)))}" for value, s in seeds.items()
            )
            raise ConfigError(
                f"{task}, {scale}, {method_label(method)} holds runs of programs of different "
                f"sizes ({held}): a seed in a batch computes other last bits than alone or in a "
                "batch of another size, so they are not one experiment; report them from separate "
                "folders"
            )


def minutes(seconds: float) -> str:
    """Seconds of work as minutes with one decimal; ``—`` for none."""
    return "—" if math.isnan(seconds) else f"{seconds / 60:.1f}"


def hours(seconds: float) -> str:
    """Seconds of work as hours with one decimal; ``—`` for none."""
    return "—" if math.isnan(seconds) else f"{seconds / 3600:.1f}"


def provenance_text(cells: pd.DataFrame, runs: pd.DataFrame) -> str:
    """provenance.md: what each field means, the CPUs' extensions, and a row per cell."""
    rows = [
        [row.task, row.scale, method_label(row.method), str(row.runs)]
        + [getattr(row, field) for field in FIELDS]
        + [
            row.made,
            f"{minutes(row.work_median_s)} [{minutes(row.work_min_s)}, {minutes(row.work_max_s)}]",
            hours(row.work_total_s),
            f"**{row.mixed}**" if row.mixed else "—",
        ]
        for row in cells.itertuples()
    ]
    header = ["task", "scale", "method", "runs", *FIELDS, "made", *WORK_HEADER]
    legend = cpu_legend(joined_values(runs["cpu"]))
    batched = joined_values(runs["program"][runs["kept"].astype(bool)]) - {ALONE, NOT_RECORDED}
    shared = (
        " A run in a program of N seeds counts the program's wall time, which the N seeds "
        "share (the program lasts as long as its longest run), so in work in all it counts 1/N "
        "of it."
        if batched
        else ""
    )
    return (
        "# Where each cell's runs come from\n\n"
        "Per cell of the runs this report keeps: the code (`commit`), CPU (`cpu`, by its vector "
        "extensions, below), `OPENBLAS_CORETYPE` (`coretype`) and `XLA_FLAGS` with XLA's CPU "
        "thread count (`xla`) its runs recorded in their `environment.json`, how their ensembles were trained (config `model.dealing`), the "
        "program they ran in (`alone`, or `N seeds` advanced together by "
        "`--seeds-per-process N`), whether the fair measures read their evaluation grid "
        "(`grid`) or `metrics.csv`, and how many "
        "runs have each value; `not recorded`: a run whose files do not say (made before the "
        "record or the field existed). made: the days their records start. work per run: "
        "median [min, max] of each run's `wall_s` summed, in minutes of work under whatever load "
        "the run shared its machine with; work in all: the cell's runs' work summed, in hours, "
        f"what the cell cost the machines it ran on.{shared} mixed: the fields in which the cell's runs "
        "differ — its seeds are not one experiment repeated, and a difference between cells may "
        "be one of these. Other realisations of the same seeds: realisations.md. See index.md for the "
        f"definitions.\n\nCPUs:\n\n{legend}\n\n{markdown_table(header, rows)}\n"
    )


def write_provenance(cells: pd.DataFrame, runs: pd.DataFrame, out: Path) -> list[Path]:
    """provenance.csv (:data:`CELL_COLUMNS`) and provenance.md of the cells' ``cells`` and
    ``runs`` (:func:`cell_provenance`, :func:`run_provenance`); nothing without runs."""
    if cells.empty:
        return []
    write_atomically(out / "provenance.csv", cells.to_csv(index=False).encode(), "report file")
    write_atomically(out / "provenance.md", provenance_text(cells, runs).encode(), "report file")
    return [out / "provenance.csv", out / "provenance.md"]


def mixed_cells(claims: pd.DataFrame, cells: pd.DataFrame) -> pd.Series:
    """Per row of ``claims`` (``claims.csv``'s), the mixed cells it compares: ``method: fields``
    for each of its two methods whose cell at its (task, scale) is mixed, joined by ``; ``;
    empty where neither is."""
    mixed = cells.set_index(["task", "scale", "method"])["mixed"].to_dict()

    def of(row: Any) -> str:
        found = [
            f"{method}: {mixed[(row.task, row.scale, method)]}"
            for method in (row.method_a, row.method_b)
            if mixed.get((row.task, row.scale, method))
        ]
        return "; ".join(found)

    return pd.Series([of(row) for row in claims.itertuples()], index=claims.index, dtype=object)
