"""How much each verdict rests on one seed: ``claims.csv``'s ``fragility`` and ``fragile_without``
of ``rp1 report``.

A *leave-out* drops one seed from every cell of one task (every method and scale of it: seed ``s``
of the task is gone from the report) and judges every claim again. A verdict *moves* where what it
says changes (:func:`~rp1.report.realisations.verdict_class`: its kind, or whether its winner
is shown above its untrained policy), or where it can no longer be made. ``fragility`` counts the
leave-outs of a verdict's own task that move it; ``fragile_without`` lists their seeds, ascending
and space-separated: ``0`` and empty for a verdict no single seed moves. Leave-outs of another
task can change a verdict's adjusted p through a Holm family shared across tasks; they are not
counted, since they do not touch the verdict's own data.

A leave-out makes again only its task's part of each table and splices it into the report's
(:func:`spliced`): every other task's per-seed values, tests and learning rows are its own, and
the Holm families are adjusted again over all tasks, exactly as if every table were made anew
from the runs without that seed.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from rp1.report.claims import claim_table
from rp1.report.measures import RunTables
from rp1.report.realisations import CLAIM_KEY, verdict_class
from rp1.report.tables.results import TableFrames, table_frames
from rp1.report.tables.ttests import TTEST_COLUMNS, judged

UNJUDGED: list[str] = list(TTEST_COLUMNS[:-3])
"""A table's test columns before :func:`~rp1.report.tables.ttests.judged` adds ``learned``,
``p_holm`` and ``verdict``."""


def leave_outs(runs: RunTables, tasks: tuple[str, ...]) -> list[tuple[str, int]]:
    """Every (task, seed) of ``runs``: ``tasks`` in order, each task's seeds ascending."""
    seeds = runs.metrics.groupby("task")["seed"].unique()
    return [(task, int(seed)) for task in tasks if task in seeds for seed in sorted(seeds[task])]


def without(runs: RunTables, task: str, seed: int) -> RunTables:
    """``runs`` less every run of ``task`` with ``seed`` (metrics and grid rows alike)."""
    metrics = runs.metrics
    gone = set(metrics.loc[(metrics["task"] == task) & (metrics["seed"] == seed), "run"])
    return RunTables(metrics[~metrics["run"].isin(gone)], runs.grid[~runs.grid["run"].isin(gone)])


def spliced(frame: TableFrames, runs: RunTables, task: str) -> TableFrames:
    """``frame`` (a table of the report) with ``task``'s part made again from ``runs``: its
    per-seed values, cells, tests and learning rows replaced by those of ``runs``, every other
    task's kept, and the tests judged again (Holm over the families across all tasks)."""
    part = table_frames(runs, frame.spec, (task,))
    others = {key: values for key, values in frame.bests.items() if key[1] != task}
    tests = frame.tests.loc[frame.tests["task"] != task, UNJUDGED]
    cells = frame.cells[frame.cells["task"] != task]
    learning = frame.learning[frame.learning["task"] != task]
    if part is not None:
        others.update(part.bests)
        tests = pd.concat([tests, part.tests[UNJUDGED]], ignore_index=True)
        cells = pd.concat([cells, part.cells], ignore_index=True)
        learning = pd.concat([learning, part.learning], ignore_index=True)
    return TableFrames(frame.spec, others, cells, judged(tests, learning), learning)


def leave_out_claims(
    frames: Mapping[str, TableFrames], runs: RunTables, task: str, seed: int
) -> pd.DataFrame:
    """The claims table (:func:`~rp1.report.claims.claim_table`) of the report's ``frames``
    judged without ``task``'s ``seed``."""
    less = without(runs, task, seed)
    return claim_table({name: spliced(frame, less, task) for name, frame in frames.items()})


def moved(base: pd.DataFrame, other: pd.DataFrame, task: str) -> pd.Series:
    """Per row of ``base`` (claims.csv's rows), whether ``other`` (the claims of a leave-out of
    ``task``) moves it: a verdict of ``task`` whose class differs or that ``other`` lacks."""
    verdicts = other.set_index(CLAIM_KEY)["verdict"]
    keys = pd.MultiIndex.from_frame(base[CLAIM_KEY])
    again = verdicts.reindex(keys).to_numpy()
    moves = [
        row_task == task and (not isinstance(new, str) or verdict_class(new) != verdict_class(old))
        for row_task, old, new in zip(base["task"], base["verdict"], again, strict=True)
    ]
    return pd.Series(moves, index=base.index)


def fragility(
    claims: pd.DataFrame,
    frames: Mapping[str, TableFrames],
    runs: RunTables,
    tasks: tuple[str, ...],
) -> pd.DataFrame:
    """``claims`` (claims.csv's rows, judged on ``frames`` made from ``runs``) with
    ``fragility`` (how many leave-outs of the verdict's task move it) and ``fragile_without``
    (their seeds) filled; see the module docstring."""
    if claims.empty:
        return claims
    seeds: list[list[str]] = [[] for _ in range(len(claims))]
    for task, seed in leave_outs(runs, tasks):
        hit = moved(claims, leave_out_claims(frames, runs, task, seed), task).to_numpy()
        for index in hit.nonzero()[0]:
            seeds[index].append(str(seed))
    return claims.assign(
        fragility=[len(found) for found in seeds],
        fragile_without=[" ".join(found) for found in seeds],
    )
