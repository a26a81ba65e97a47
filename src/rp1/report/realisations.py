"""How the verdicts depend on which realisation of a seed the report keeps: ``realisations.csv``
and ``realisations.md`` of ``rp1 report``, and ``claims.csv``'s ``robust_to_realisation``.

One config and seed run on another CPU, or by other code, can give another *realisation*: the
same experiment, numerics that differ in their last bits and then diverge (Swimmer's policies do
on two EPYCs). Of several realisations of one (task, scale, method, seed) the report keeps one by
a rule of what each run holds, never of its returns (:func:`~rp1.report.runs_table.drop_duplicates`):
most samples reached, then most metric columns logged, then most grid evaluations, then the first
by path. The verdicts rest on that choice, and this module says how much.

A *variant* of the report swaps other realisations in: per cell (task, scale, method) and folder
holding other realisations of its seeds, one variant judges every claim again with those runs in
place of the ones kept (the cell's other seeds as they are); where there are several such
folders, one more variant swaps every seed that has another realisation for its first other one
(in the rule's order). A verdict is *touched* by a variant where any of its numbers changes, and
*moves* where what it says changes (:func:`verdict_class`: its kind, and whether its winner is
shown above its untrained policy). ``robust_to_realisation``: ``yes`` where some variant touches
a verdict and none moves it, ``no`` where one moves it, empty where none touches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import numpy as np
import pandas as pd

from rp1.config.methods import method_label
from rp1.core.storage import write_atomically
from rp1.report.cell_provenance import counted, labelled
from rp1.report.claims import claim_table
from rp1.report.fair import policy_grid
from rp1.report.learning import learning_table
from rp1.report.markdown import markdown_table, p_text
from rp1.report.measures import MEASURES, RETURN, RunTables
from rp1.report.runs_table import RUN_KEY, LoadedRuns
from rp1.report.significance import qualified, verdict_kind
from rp1.report.tables.cells import table_rows
from rp1.report.tables.results import TableFrames, table_frames

CLAIM_KEY: list[str] = ["id", "task", "scale", "samples", "metric"]
"""What names one verdict of ``claims.csv``."""

COMPARED: tuple[str, ...] = ("verdict", "learned", "n_a", "n_b", "diff", "t", "p", "p_holm")
"""The numbers of a verdict whose change means a variant touched it."""

VARIANT_COLUMNS: tuple[str, ...] = (
    *("variant", "id", "claim", "task", "scale", "samples", "metric"),
    *("verdict", "p_holm", "verdict_other", "p_holm_other", "moves"),
)
"""The columns of ``realisations.csv``: one row per variant and verdict it touches."""


class Variant(NamedTuple):
    """One swap of realisations: ``name`` (the cell and the folder of the runs swapped in, or
    ``every other realisation``), the runs it swaps out (``kept``) and in (``others``), by run
    path, in the same order."""

    name: str
    kept: tuple[str, ...]
    others: tuple[str, ...]


def folder(run: str) -> str:
    """The folder of a run's directory (its path relative to the report's root, without
    ``seed<k>``)."""
    return PurePosixPath(run).parent.as_posix()


def variants(loaded: LoadedRuns) -> list[Variant]:
    """The variants of ``loaded`` (see the module docstring), by the path of the runs they swap
    in, then the one that swaps all; none without other realisations."""
    if loaded.others.empty:
        return []
    kept = loaded.metrics.groupby("run")[list(RUN_KEY)].first().reset_index()
    kept_run = {tuple(row[list(RUN_KEY)]): row["run"] for _, row in kept.iterrows()}
    others = loaded.others.groupby("run", sort=False)[list(RUN_KEY)].first().reset_index()
    others = others.assign(
        folder=others["run"].map(folder),
        kept=[kept_run[tuple(row[list(RUN_KEY)])] for _, row in others.iterrows()],
    )
    found = []
    for (task, scale, method, where), group in others.sort_values("run").groupby(
        ["task", "scale", "method", "folder"], sort=False
    ):
        group = group.drop_duplicates("kept")
        name = f"{task}, {scale}, {method_label(method)}: {where}"
        found.append(Variant(name, tuple(group["kept"]), tuple(group["run"])))
    if len(found) > 1:
        first = others.drop_duplicates("kept")
        found.append(Variant("every other realisation", tuple(first["kept"]), tuple(first["run"])))
    return found


def swapped(loaded: LoadedRuns, runs: RunTables, variant: Variant) -> RunTables:
    """``runs`` (the tables of ``loaded``'s kept runs) with ``variant``'s runs swapped in."""
    metrics = pd.concat(
        [
            loaded.metrics[~loaded.metrics["run"].isin(variant.kept)],
            loaded.others[loaded.others["run"].isin(variant.others)],
        ],
        ignore_index=True,
    )
    grid = pd.concat(
        [
            runs.grid[~runs.grid["run"].isin(variant.kept)],
            policy_grid(
                loaded.others[loaded.others["run"].isin(variant.others)],
                loaded.other_evaluations[loaded.other_evaluations["run"].isin(variant.others)],
            ),
        ],
        ignore_index=True,
    )
    return RunTables(metrics, grid.sort_values(["run", "samples"], kind="stable"))


def learning_moves(frame: TableFrames, runs: RunTables) -> bool:
    """Whether a table of returns would judge another task as learned, or not, on ``runs``."""
    if frame.spec.quantity != RETURN or frame.learning.empty:
        return False
    again = learning_table(runs, table_rows(frame.bests))
    keys = ["metric", "task", "scale", "samples"]
    before = frame.learning.set_index(keys)["learned"].sort_index()
    return not before.equals(again.set_index(keys)["learned"].sort_index())


def variant_claims(
    frames: Mapping[str, TableFrames],
    loaded: LoadedRuns,
    runs: RunTables,
    variant: Variant,
    tasks: tuple[str, ...],
) -> pd.DataFrame:
    """The claims table (:func:`~rp1.report.claims.claim_table`) of the report's ``frames``
    judged on ``variant``'s runs: a table is made again where it shows a method whose runs the
    variant swaps or where it would judge a task's learning otherwise; the others are as they
    were."""
    runs = swapped(loaded, runs, variant)
    methods = set(loaded.metrics.loc[loaded.metrics["run"].isin(variant.kept), "method"])
    again: dict[str, TableFrames | None] = {}
    for name, frame in frames.items():
        shown = {method for method, _ in frame.spec.columns()}
        redo = bool(methods & shown) or learning_moves(frame, runs)
        again[name] = table_frames(runs, frame.spec, tasks) if redo else frame
    return claim_table(again)


def verdict_class(text: str) -> tuple[str, bool]:
    """What a verdict says: its kind and whether its winner is not shown above its untrained
    policy (:func:`~rp1.report.significance.qualified`)."""
    return verdict_kind(text), qualified(text)


def touched(base: pd.DataFrame, other: pd.DataFrame) -> pd.Series:
    """Per verdict of ``base`` (indexed by :data:`CLAIM_KEY`), whether ``other`` (the same claims
    judged on a variant, same index) differs in any of :data:`COMPARED` (NaN equal to NaN); a
    verdict missing from ``other`` is touched."""
    other = other.reindex(base.index)
    differs = pd.Series(other["verdict"].isna(), index=base.index)
    for column in COMPARED:
        a, b = base[column], other[column]
        if column in ("verdict", "learned"):
            differs |= a.astype(str) != b.astype(str)
        else:
            x, y = a.to_numpy(dtype=float), b.to_numpy(dtype=float)
            differs |= ~((x == y) | (np.isnan(x) & np.isnan(y)))
    return differs


def compare(base: pd.DataFrame, judged: list[tuple[Variant, pd.DataFrame]]) -> pd.DataFrame:
    """:data:`VARIANT_COLUMNS` for every verdict of ``base`` (claims.csv's rows) that each variant
    (with its claims) touches."""
    before = base.set_index(CLAIM_KEY)
    rows = []
    for variant, claims in judged:
        after = claims.set_index(CLAIM_KEY).reindex(before.index)
        hit = touched(before, after)
        for key in before.index[hit.to_numpy()]:
            old, new = before.loc[key], after.loc[key]
            new_verdict = new["verdict"] if isinstance(new["verdict"], str) else "—"
            rows.append(
                (variant.name, key[0], old["claim"], *key[1:])
                + (old["verdict"], old["p_holm"], new_verdict, new["p_holm"])
                + (verdict_class(old["verdict"]) != verdict_class(new_verdict),)
            )
    return pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))


def robustness(base: pd.DataFrame, moves: pd.DataFrame) -> pd.Series:
    """``claims.csv``'s ``robust_to_realisation`` per row of ``base``: ``no`` where a variant
    moves it, ``yes`` where variants touch it and none moves it, empty where none touches it
    (``moves``: :func:`compare`'s rows)."""
    hit = {tuple(key) for key in moves[CLAIM_KEY].itertuples(index=False)}
    moved = {
        tuple(key)
        for key in moves.loc[moves["moves"].astype(bool), CLAIM_KEY].itertuples(index=False)
    }
    keys = base[CLAIM_KEY].itertuples(index=False)
    return pd.Series(
        ["no" if tuple(key) in moved else "yes" if tuple(key) in hit else "" for key in keys],
        index=base.index,
        dtype=object,
    )


def side_text(runs: pd.DataFrame) -> str:
    """One side of a variant, from :func:`~rp1.report.cell_provenance.run_provenance`'s rows (CPUs
    labelled): its folders, commits and CPUs with their counts."""
    return "; ".join(
        counted(values) for values in (runs["run"].map(folder), runs["commit"], runs["cpu"])
    )


def variants_text(found: list[Variant], moves: pd.DataFrame, provenance: pd.DataFrame) -> str:
    """realisations.md: what a variant is, a row per variant (what it swaps, the provenance of
    both sides, the verdicts it touches and moves), then every verdict that moves."""
    intro = (
        "# Verdicts and the realisation of a seed\n\n"
        "Where one seed of a cell (task, scale, method) has several realisations — the same "
        "config and seed run on another CPU or by other code, whose numerics differ in their last "
        "bits and may then diverge — the report keeps one by a rule of what each run holds, never "
        "of its returns: the most samples reached, then the most metric columns logged, then the "
        "most grid evaluations, then the first by path (index.md's duplicates). A *variant* "
        "judges every claim again with another realisation in place of the kept one: per cell "
        "and folder of other realisations, and, where there are several such folders, with every "
        "seed's first other realisation at once. A verdict is *touched* where any of its numbers "
        "changes, and *moves* where what it says changes (its kind, or whether its winner is "
        "shown above its untrained policy); claims.csv's `robust_to_realisation` is `yes` where "
        "variants touch it and none moves it, `no` where one moves it. The other runs' "
        "provenance: folder; commit; CPU (provenance.md names the CPUs). See index.md for the "
        "definitions.\n\n"
    )
    if not found:
        return intro + "No seed of this report has a second realisation.\n"
    kind = labelled(provenance).set_index("run")
    rows = []
    for variant in found:
        mine = moves[moves["variant"] == variant.name]
        rows.append(
            [
                variant.name,
                str(len(variant.others)),
                side_text(kind.loc[list(variant.kept)].reset_index()),
                side_text(kind.loc[list(variant.others)].reset_index()),
                str(len(mine)),
                str(int(mine["moves"].astype(bool).sum())),
            ]
        )
    header = ["variant", "seeds", "kept", "swapped in", "verdicts touched", "moved"]
    table = markdown_table(header, rows)
    moved = moves[moves["moves"].astype(bool)]
    if moved.empty:
        listing = "No verdict moves."
    else:
        listing = markdown_table(
            ["variant", "claim", "task", "scale", "samples", "measure", "kept", "swapped in"],
            [
                [
                    row.variant,
                    row.claim,
                    row.task,
                    row.scale,
                    f"{row.samples:,}",
                    MEASURES[row.metric].label,
                    f"{row.verdict} (p_H {p_text(row.p_holm)})",
                    f"{row.verdict_other} (p_H {p_text(row.p_holm_other)})",
                ]
                for row in moved.itertuples()
            ],
        )
    return f"{intro}{table}\n\n## Verdicts that move\n\n{listing}\n"


def write_realisations(
    found: list[Variant], moves: pd.DataFrame, provenance: pd.DataFrame, out: Path
) -> list[Path]:
    """realisations.csv (:data:`VARIANT_COLUMNS`) and realisations.md of the variants ``found``,
    the verdicts they touch (``moves``) and the runs' ``provenance``; nothing without runs."""
    if provenance.empty:
        return []
    write_atomically(out / "realisations.csv", moves.to_csv(index=False).encode(), "report file")
    text = variants_text(found, moves, provenance)
    write_atomically(out / "realisations.md", text.encode(), "report file")
    return [out / "realisations.csv", out / "realisations.md"]
