"""Whether a comparison's difference depends on where its runs were made: ``claims.csv``'s
``blocks`` and ``block_p`` of ``rp1 report``.

A *block* is the runs of one provenance: one commit and one CPU (:mod:`~rp1.report.cell_provenance`'s
``commit`` and labelled ``cpu``), what sets one realisation of a seed apart from another. Where
the two cells of a verdict hold runs of more than one block, ``blocks`` lists each block with its
runs on either side and, where both sides have two or more runs in it, the difference of means
a − b in it; ``block_p`` is the block × method interaction over those blocks: the p of Cochran's
Q that their differences are one (:func:`~rp1.report.stats.heterogeneity`; for two blocks the
normal p of the difference between them over its standard error). A small ``block_p`` says the
verdict's difference is not the same in every block — a difference between commits or CPUs, or
between the seeds each block happens to hold, which one report cannot tell apart. Both are empty
where the cells share one block. Where no block holds runs of both cells, ``block_p`` is empty and
``claims.md`` says the cells share no block: their difference may then also be one between commits
or CPUs (or ones not recorded), which no test here can separate from the methods'.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rp1.report import stats
from rp1.report.cell_provenance import labelled
from rp1.report.claims import block_part, value_text
from rp1.report.measures import MEASURES, RunTables, values_at


def run_blocks(provenance: pd.DataFrame) -> pd.Series:
    """The block of each kept run of ``provenance`` (:func:`~rp1.report.cell_provenance.run_provenance`'s
    rows, other realisations included so that a CPU has one name throughout): ``commit, cpu``,
    by run."""
    runs = labelled(provenance)
    runs = runs[runs["kept"].astype(bool)]
    return pd.Series(
        [f"{commit}, {cpu}" for commit, cpu in zip(runs["commit"], runs["cpu"], strict=True)],
        index=runs["run"].to_numpy(),
        dtype=object,
    )


def side_values(
    values: pd.Series, cells: pd.DataFrame, cell: tuple[str, str, str]
) -> dict[str, np.ndarray]:
    """One side of a verdict: ``values`` (a measure's per-run values at the verdict's sample
    count, by run) of the runs of ``cell`` (task, scale, method), by block (``cells``: per run,
    its task, scale, method and block)."""
    task, scale, method = cell
    mine = cells[(cells["task"] == task) & (cells["scale"] == scale) & (cells["method"] == method)]
    values = values[values.index.isin(mine.index)]
    return {
        block: group.to_numpy(float)
        for block, group in values.groupby(mine["block"].reindex(values.index).to_numpy())
    }


def block_test(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], metric: str
) -> tuple[str, float]:
    """``blocks`` and ``block_p`` of one verdict from each side's values by block (see the module
    docstring); empty and NaN where both sides lie in one block."""
    names = sorted(set(a) | set(b))
    if len(names) < 2:
        return "", math.nan
    parts, differences, errors = [], [], []
    for name in names:
        x, y = a.get(name, np.array([])), b.get(name, np.array([]))
        part = block_part(name, len(x), len(y))
        if len(x) >= 2 and len(y) >= 2:
            difference = float(x.mean() - y.mean())
            part += f", Δ {value_text(difference, metric)}"
            differences.append(difference)
            errors.append(stats.welch_error(x, y)[0])
        parts.append(part)
    return "; ".join(parts), stats.heterogeneity(np.array(differences), np.array(errors))


def block_columns(claims: pd.DataFrame, runs: RunTables, provenance: pd.DataFrame) -> pd.DataFrame:
    """``claims`` (claims.csv's rows, of the kept ``runs``) with ``blocks`` and ``block_p``
    filled from the runs' ``provenance``; a measure's values are read only for verdicts whose
    cells hold more than one block."""
    if claims.empty:
        return claims
    cells = runs.metrics.groupby("run")[["task", "scale", "method"]].first()
    cells = cells.assign(block=run_blocks(provenance).reindex(cells.index))
    spread = cells.groupby(["task", "scale", "method"])["block"].unique().to_dict()
    values: dict[tuple[str, int], pd.Series] = {}
    found = []
    for claim in claims.itertuples():
        a, b = (claim.task, claim.scale, claim.method_a), (claim.task, claim.scale, claim.method_b)
        if len({*spread.get(a, ()), *spread.get(b, ())}) < 2:
            found.append(("", math.nan))
            continue
        key = (claim.metric, claim.samples)
        if key not in values:
            values[key] = values_at(runs, MEASURES[claim.metric], claim.samples)
        side_a, side_b = (side_values(values[key], cells, cell) for cell in (a, b))
        found.append(block_test(side_a, side_b, claim.metric))
    return claims.assign(blocks=[text for text, _ in found], block_p=[p for _, p in found])
