"""The results pages, rendered from the committed reports: ``docs/results.md`` and README's
"Results at a glance", so that every number on them is a report's.

A page is made from a template (:data:`PAGES`): Markdown whose numbers are placeholders,
``{{directive argument … key=value …}}``, that read the files of the committed reports
(``docs/<name>/``, :data:`REPORTS`). Directives:

- ``claim REPORT ID TASK SAMPLES MEASURE [FIELD] [scale=S] [expect=KIND] [robust=yes|no]
  [firm=yes|no]``: one verdict of the report's ``claims.csv`` (``ID`` a comparison's id,
  ``MEASURE`` its ``metric``).
  FIELD: ``cell`` (the default: the verdict, Δ with its interval and p_H, as claims.md writes it),
  ``brief`` (its kind, and Δ in whole units where it decides), ``verdict`` (its words), ``kind``,
  ``diff`` (``Δ x [low, high]``), ``medians`` (``a vs b``), a column of claims.csv (``median_a``,
  ``p_holm``, ``gain_p_a``, …), ``firmness`` (whether one seed moves it, in words), or ``check``
  (nothing: the placeholder only checks). ``expect``: the verdict's kind (``holds``, ``holds-but`` for one whose winner is not shown above its
  untrained policy, ``does-not-hold``, ``equivalent``, ``inconclusive``, ``nothing-learned``);
  the page is not made where the report says otherwise, since the prose around it then says
  something the report does not. ``robust`` checks ``robust_to_realisation`` likewise, and
  ``firm=yes|no`` whether no single seed moves the verdict (claims.csv's ``fragile_without``).
- ``matrix REPORT SAMPLES ID[,ID…] [tasks=T,…] [scale=S]``: a table of those claims' verdicts, a
  row per claim and task, a column per measure (the paper's metric labelled as such).
- ``learning REPORT SAMPLES``: per task, the untrained policy's return and whether any method
  learned by then (the report's ``learning.csv``).
- ``realisations REPORT``: the verdicts that move with another realisation of the same seeds
  (``realisations.csv``), after a line counting them.
- ``replication ORIGINAL REPLICATION SAMPLES ID[,ID…] [tasks=T,…] [scale=S]``: a claim of the
  original report read against the same comparison in its replication (fresh seeds, reported on
  their own): a row per comparison, both verdicts in brief (each with Δ and its interval),
  whether the original's "holds" is replicated, not replicated or reversed, and the p that both
  seed ranges give one difference (:mod:`rp1.report.replication`).
- ``provenance REPORT [mixed]``: where each cell's runs come from (``provenance.csv``), only the
  mixed cells with ``mixed``.
- ``returns REPORT SAMPLES [REPORT SAMPLES …] [methods=M,…] [scale=S]``: the returns of the
  paper's Table 1 (the report's ``table1_fair.csv`` and ``table1.csv``), a row per task and sample
  count, a column per method (those of the reports, or ``methods=``): each cell the median
  [25th, 75th percentile] over seeds of the return at N, then of the paper's best with the paper's
  median beside it.
- ``table REPORT FILE COLUMN[,COLUMN…] [COLUMN=VALUE …] [fmt=FORMAT]``: those columns of the rows
  of a report's CSV file that the filters leave, as a table.
- ``value REPORT FILE [COLUMN=VALUE …] COLUMN [fmt=FORMAT] [agg=sum|count|min|max|median]``: one
  number of a report's CSV file, on the one row the filters leave (``COLUMN^=PREFIX`` matches a
  prefix), or aggregated over the rows they leave; ``fmt``: a Python format spec (returns: one
  decimal by default).

``python docs/tooling/results_page.py`` writes the pages; ``--remake [NAME …]`` first makes
those reports (all by default) again from their runs, as ``rp1 report ROOT… --out docs/NAME``
would; ``--check`` writes nothing and exits 1 where a page is not what its template and the
reports give. A placeholder that names no report, file, row or column, or whose ``expect`` does
not hold, stops it with one line saying which (exit 2).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from rp1.config.methods import method_label
from rp1.core.storage import write_atomically
from rp1.report.cell_provenance import WORK_HEADER, hours
from rp1.report.claims import fragile_seeds, value_text, verdict_cell
from rp1.report.markdown import BLANK, markdown_table, p_text
from rp1.report.measures import MEASURES, QUANTITY_MEASURES
from rp1.report.replication import replication_readings
from rp1.report.significance import EQUIVALENT, FAILS, HOLDS, qualified, verdict_kind

REPORTS: dict[str, str] = {
    "laptop-scale": "docs/laptop-scale/runs",
    "controls": "docs",
    "gpu-pilot": "docs/gpu-pilot/runs",
    "pilot-1e5": "benchmarks/runs/pilot1e5",
    "replication-1e5": "benchmarks/runs/replication1e5",
    "pooled-1e5": "benchmarks/runs/pilot1e5 benchmarks/runs/replication1e5",
}
"""The committed reports, by name: each is ``rp1 report ROOT… --out docs/NAME`` of the runs under
its roots (relative to the repository, separated by spaces)."""


class Page(NamedTuple):
    """A page made from a template (paths relative to the repository): the whole ``target``, or
    the part of it between ``<!-- marker -->`` and ``<!-- /marker -->`` where ``marker`` is set."""

    template: str
    target: str
    marker: str | None = None


PAGES: tuple[Page, ...] = (
    Page("docs/templates/results.md", "docs/results.md"),
    Page("docs/templates/readme-results.md", "README.md", "results-at-a-glance"),
)
"""The pages made from the reports."""

PLACEHOLDER = re.compile(r"\{\{(.+?)\}\}")
"""A placeholder in a template: ``{{…}}`` on one line."""


class PlaceholderError(ValueError):
    """A placeholder that cannot be filled: it names nothing the reports have, or its expectation
    does not hold."""


class Reports:
    """The committed reports under a repository's ``docs/``: their CSV files, each read once."""

    def __init__(self, repository: Path):
        self.docs = Path(repository) / "docs"
        self._files: dict[tuple[str, str], pd.DataFrame] = {}

    def csv(self, report: str, file: str) -> pd.DataFrame:
        """``docs/<report>/<file>``; PlaceholderError where there is no such report or file."""
        if report not in REPORTS:
            raise PlaceholderError(f"no report {report!r}; the reports: {', '.join(REPORTS)}")
        if (report, file) not in self._files:
            path = self.docs / report / file
            if not path.is_file():
                raise PlaceholderError(f"{path}: no such file (rp1 report makes it)")
            table = pd.read_csv(path, keep_default_na=False, na_values=[""])
            self._files[report, file] = table
        return self._files[report, file]


def split_arguments(text: str) -> tuple[list[str], dict[str, str]]:
    """A placeholder's words: the positional ones, and the ``key=value`` options (shell quoting
    for values with spaces)."""
    positional, options = [], {}
    for word in shlex.split(text):
        key, equals, value = word.partition("=")
        if equals and re.fullmatch(r"[a-z_]+\^?", key):
            options[key] = value
        else:
            positional.append(word)
    return positional, options


def matching(table: pd.DataFrame, filters: dict[str, str], where: str) -> pd.DataFrame:
    """The rows of ``table`` whose columns equal the ``filters`` (a key ending in ``^``: starts
    with); PlaceholderError naming a column the table lacks."""
    rows = table
    for key, wanted in filters.items():
        column = key.rstrip("^")
        if column not in table.columns:
            raise PlaceholderError(f"{where}: no column {column!r}")
        text = rows[column].map(cell_string)
        rows = rows[text.str.startswith(wanted) if key.endswith("^") else text == wanted]
    return rows


def cell_string(value: object) -> str:
    """A CSV value as a filter compares it: an integral number without decimals."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def fill_empty(row: pd.Series) -> pd.Series:
    """A claims.csv row with its empty text fields as empty strings, not NaN."""
    return row.fillna(
        {"robust_to_realisation": "", "mixed_cells": "", "fragile_without": "", "blocks": ""}
    )


EXPECTED: dict[str, tuple[str, bool]] = {
    "holds": ("holds", False),
    "holds-but": ("holds", True),
    "does-not-hold": ("does not hold", False),
    "does-not-hold-but": ("does not hold", True),
    "equivalent": ("equivalent", False),
    "inconclusive": ("inconclusive", False),
    "nothing-learned": ("nothing learned", False),
}
"""``expect=`` values: the verdict's kind and whether it carries a winner's note."""


def claim_row(reports: Reports, words: list[str], options: dict[str, str]) -> pd.Series:
    """The row of ``claims.csv`` a ``claim`` placeholder names (report, id, task, samples,
    measure, ``scale=``)."""
    if len(words) < 5:
        raise PlaceholderError("claim needs REPORT ID TASK SAMPLES MEASURE")
    report, claim_id, task, samples, metric = words[:5]
    filters = {"id": claim_id, "task": task, "samples": samples, "metric": metric}
    if "scale" in options:
        filters["scale"] = options["scale"]
    rows = matching(reports.csv(report, "claims.csv"), filters, f"{report}/claims.csv")
    if len(rows) != 1:
        found = "no verdict" if rows.empty else f"{len(rows)} verdicts (give scale=)"
        raise PlaceholderError(f"{report}/claims.csv: {found} for {' '.join(words[1:5])}")
    return fill_empty(rows.iloc[0])


def check_expected(row: pd.Series, expected: str, where: str) -> None:
    """PlaceholderError unless the verdict of ``row`` is of the kind ``expected`` names."""
    if expected not in EXPECTED:
        raise PlaceholderError(f"{where}: expect= takes {', '.join(EXPECTED)}")
    actual = (verdict_kind(row["verdict"]), qualified(row["verdict"]))
    if actual != EXPECTED[expected]:
        raise PlaceholderError(
            f"{where}: the report says {row['verdict']!r}, the page expects {expected}: "
            "rewrite the prose around it"
        )


P_VALUES = (
    *("p", "p_holm", "p_holm_all", "gain_p_a", "gain_p_b", "fall_p_a", "fall_p_b", "block_p"),
)
"""The columns of claims.csv that hold a p-value (two significant digits)."""


def claim_field(row: pd.Series, field: str) -> str:
    """One field of a verdict as a page writes it (see the module docstring)."""
    value = lambda number: value_text(number, row["metric"])  # noqa: E731
    fields: dict[str, Callable[[], str]] = {
        "cell": lambda: verdict_cell(row_tuple(row)),
        "brief": lambda: brief_verdict(row),
        "verdict": lambda: str(row["verdict"]),
        "kind": lambda: verdict_kind(row["verdict"]),
        "diff": lambda: (
            f"Δ {value(row['diff'])} [{value(row['diff_low'])}, {value(row['diff_high'])}]"
        ),
        "medians": lambda: f"{value(row['median_a'])} vs {value(row['median_b'])}",
        "firmness": lambda: firmness(row),
    }
    if field in fields:
        return fields[field]()
    if field not in row.index:
        raise PlaceholderError(f"claims.csv has no column {field!r}")
    number = row[field]
    if field in P_VALUES:
        return p_text(float(number))
    if field in (
        "median_a",
        "median_b",
        "diff",
        "diff_low",
        "diff_high",
        "margin",
        "gain_a",
        "gain_b",
    ):
        return value(float(number))
    return formatted(number, None)


def brief_verdict(row: pd.Series, every: bool = False) -> str:
    """A verdict in a few words, for a small table: its kind, Δ with its interval rounded to whole
    units where it decides (``every``: whatever it says, where the report has them), the worse
    method's fall where that is why it decides."""
    kind = verdict_kind(row["verdict"])
    decides = kind in (HOLDS, FAILS, EQUIVALENT)
    if not decides and not (every and pd.notna(row["diff"]) and pd.notna(row["diff_low"])):
        return kind
    whole = lambda number: formatted(number, ".0f")  # noqa: E731
    text = f"{kind}, Δ {whole(row['diff'])} [{whole(row['diff_low'])}, {whole(row['diff_high'])}]"
    if qualified(row["verdict"]):
        text += f" ({row['verdict'].split(', but ', 1)[1].removeprefix('only because ')})"
    return text


def row_tuple(row: pd.Series) -> Any:
    """A claims.csv row as :func:`~rp1.report.claims.verdict_cell` reads it."""
    return next(pd.DataFrame([row]).itertuples(index=False))


def formatted(value: object, spec: str | None) -> str:
    """A number as a page writes it: by the format ``spec``, else an integral one with thousands
    separators and any other with one decimal; a minus as the unicode minus."""
    if isinstance(value, str):
        return value
    number = float(value)  # type: ignore[arg-type]
    if spec is not None:
        text = format(number, spec)
    elif number.is_integer():
        text = f"{int(number):,}"
    else:
        text = f"{number:.1f}"
    return text.replace("-", "−")


def claim_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``claim`` placeholder's text (``check``: none, for a placeholder that only checks)."""
    row = claim_row(reports, words, options)
    where = " ".join(words[:5])
    if "expect" in options:
        check_expected(row, options["expect"], where)
    if "robust" in options and row["robust_to_realisation"] != options["robust"]:
        raise PlaceholderError(
            f"{where}: robust_to_realisation is {row['robust_to_realisation']!r}, the page "
            f"expects {options['robust']!r}: rewrite the prose around it"
        )
    if "firm" in options:
        check_firm(row, options["firm"], where)
    field = words[5] if len(words) > 5 else "cell"
    return "" if field == "check" else claim_field(row, field)


def firmness(row: pd.Series) -> str:
    """Whether one seed moves a verdict, in words: ``no single seed moves it`` or ``it moves
    without seed 8`` (``seeds 3, 8``): :mod:`rp1.report.fragility`."""
    seeds = fragile_seeds(row["fragile_without"])
    if not seeds:
        return "no single seed moves it"
    return f"it moves without seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)}"


def check_firm(row: pd.Series, expected: str, where: str) -> None:
    """PlaceholderError unless ``firm=yes`` names a verdict no single seed moves, or ``firm=no``
    one that some seed does."""
    if expected not in ("yes", "no"):
        raise PlaceholderError(f"{where}: firm= takes yes or no")
    if (expected == "yes") != (not fragile_seeds(row["fragile_without"])):
        raise PlaceholderError(
            f"{where}: {firmness(row)}, the page expects firm={expected}: rewrite the prose "
            "around it"
        )


def matrix_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``matrix`` placeholder's table (see the module docstring)."""
    if len(words) != 3:
        raise PlaceholderError("matrix needs REPORT SAMPLES ID[,ID…]")
    report, samples, ids = words
    claims = reports.csv(report, "claims.csv")
    filters = {"samples": samples, **({"scale": options["scale"]} if "scale" in options else {})}
    claims = matching(claims, filters, f"{report}/claims.csv")
    wanted = ids.split(",")
    tasks = options["tasks"].split(",") if "tasks" in options else None
    missing = [i for i in wanted if i not in set(claims["id"])]
    if missing:
        raise PlaceholderError(
            f"{report}/claims.csv: no verdict at {samples} for {', '.join(missing)}"
        )
    claims = claims[claims["id"].isin(wanted) & (claims["task"].isin(tasks) if tasks else True)]
    measures = [m for q in QUANTITY_MEASURES.values() for m in q if m in set(claims["metric"])]
    rows, mixed = [], False
    order = {claim_id: i for i, claim_id in enumerate(wanted)}
    keys = claims[["id", "task", "scale"]].drop_duplicates()
    keys = keys.assign(order=keys["id"].map(order)).sort_values("order", kind="stable")
    for key in keys.itertuples(index=False):
        cell = claims[
            (claims["id"] == key.id) & (claims["task"] == key.task) & (claims["scale"] == key.scale)
        ]
        by_measure = {row["metric"]: fill_empty(row) for _, row in cell.iterrows()}
        first = next(iter(by_measure.values()))
        mixed |= bool(first["mixed_cells"])
        rows.append(
            [first["claim"], key.task, f"{first['n_a']:.0f} vs {first['n_b']:.0f}"]
            + [verdict_cell(row_tuple(by_measure[m])) if m in by_measure else "—" for m in measures]
            + [first["mixed_cells"] or "—"]
        )
    labels = [
        f"{MEASURES[m].label} (the paper's metric)" if m == "paper_best" else MEASURES[m].label
        for m in measures
    ]
    header = ["claim", "task", "seeds", *labels, "mixed cells"]
    if not mixed:
        header, rows = header[:-1], [row[:-1] for row in rows]
    return markdown_table(header, rows)


def learning_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``learning`` placeholder's table."""
    if len(words) != 2:
        raise PlaceholderError("learning needs REPORT SAMPLES")
    report, samples = words
    rows = matching(
        reports.csv(report, "learning.csv"), {"samples": samples}, f"{report}/learning.csv"
    )
    return markdown_table(
        ["task", "scale", "untrained", "clearest gain: return at N", "p", "learned"],
        [
            [
                row.task,
                row.scale,
                formatted(row.untrained, ".1f"),
                f"{method_label(row.top_method)}: {formatted(row.top_median, '.1f')}",
                p_text(float(row.gain_p)),
                "yes" if str(row.learned) == "True" else "**nothing learned**",
            ]
            for row in rows.itertuples()
        ],
    )


RETURNS_TABLE = "table1"
"""The report's table whose returns a ``returns`` placeholder shows: the paper's Table 1 (RP1,
Greedy, V+R)."""

ReturnsCell = tuple[pd.Series, pd.Series]
"""A method's cell of a ``returns`` table: its rows of ``table1_fair.csv`` (the return at N) and of
``table1.csv`` (the paper's best)."""


def returns_cells(
    reports: Reports, report: str, samples: str, options: dict[str, str]
) -> dict[tuple[str, str], dict[str, ReturnsCell]]:
    """The cells of a report's Table 1 at ``samples`` (``scale=`` filters), by task and samples,
    then method; PlaceholderError where there are none, or more than one of a task and method."""
    filters = {"samples": samples, **({"scale": options["scale"]} if "scale" in options else {})}
    where = f"{report}/{RETURNS_TABLE}"
    best = matching(reports.csv(report, f"{RETURNS_TABLE}.csv"), filters, f"{where}.csv")
    fair = matching(
        reports.csv(report, f"{RETURNS_TABLE}_fair.csv"),
        {**filters, "metric": "return_at"},
        f"{where}_fair.csv",
    )
    if best.empty:
        raise PlaceholderError(f"{where}.csv: no returns at {samples}")
    key = ["task", "method"]
    if best.duplicated(key).any() or fair.duplicated(key).any():
        raise PlaceholderError(f"{where}: several scales at {samples} (give scale=)")
    fair_of = {(row["task"], row["method"]): row for _, row in fair.iterrows()}
    cells: dict[tuple[str, str], dict[str, ReturnsCell]] = {}
    for _, row in best.iterrows():
        if (row["task"], row["method"]) not in fair_of:
            raise PlaceholderError(
                f"{where}_fair.csv: no return at {samples} of {row['task']} and {row['method']}"
            )
        cells.setdefault((row["task"], samples), {})[row["method"]] = (
            fair_of[row["task"], row["method"]],
            row,
        )
    return cells


def returns_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``returns`` placeholder's table (see the module docstring); ``—`` where a method has no
    runs."""
    if not words or len(words) % 2:
        raise PlaceholderError("returns needs REPORT SAMPLES [REPORT SAMPLES …]")
    cells: dict[tuple[str, str], dict[str, ReturnsCell]] = {}
    for report, samples in zip(words[::2], words[1::2], strict=True):
        cells.update(returns_cells(reports, report, samples, options))
    found = list(dict.fromkeys(m for by_method in cells.values() for m in by_method))
    methods = options["methods"].split(",") if "methods" in options else found
    unknown = [m for m in methods if m not in found]
    if unknown:
        raise PlaceholderError(f"{RETURNS_TABLE}: no returns of {', '.join(unknown)}")
    rows = []
    for (task, samples), by_method in cells.items():
        seeds = sorted({int(best["n_seeds"]) for _, best in by_method.values()})
        seeds_text = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
        rows.append(
            [task, formatted(int(samples), None), seeds_text]
            + [returns_cell(*by_method[m]) if m in by_method else BLANK for m in methods]
        )
    header = ["task", "N", "seeds", *(method_label(m, short=True) for m in methods)]
    return markdown_table(header, rows)


def returns_cell(fair: pd.Series, best: pd.Series) -> str:
    """A cell of a ``returns`` table: the return at N and the paper's best, each a median
    [25th, 75th percentile] with one decimal, then the paper's median as the paper writes it."""
    quartiles = lambda row: (  # noqa: E731
        f"{formatted(row['median'], '.1f')} "
        f"[{formatted(row['q25'], '.1f')}, {formatted(row['q75'], '.1f')}]"
    )
    paper = best["paper_median"]
    beside = "" if pd.isna(paper) else f" (paper {formatted(paper, 'g')})"
    return f"{quartiles(fair)} · {quartiles(best)}{beside}"


def realisations_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``realisations`` placeholder's count and table."""
    if len(words) != 1:
        raise PlaceholderError("realisations needs REPORT")
    moves = reports.csv(words[0], "realisations.csv")
    if moves.empty:
        return "No seed of this report has a second realisation."
    touched = moves.drop_duplicates(["id", "task", "scale", "samples", "metric"])
    moved = moves[moves["moves"].astype(str) == "True"]
    count = (
        f"Other realisations touch {len(touched)} verdicts; {len(moved.drop_duplicates(['id', 'task', 'scale', 'samples', 'metric']))} "
        "of them move under at least one."
    )
    if moved.empty:
        return count
    table = markdown_table(
        ["swapped in", "claim", "task", "measure", "kept", "with the other realisation"],
        [
            [
                row.variant,
                row.claim,
                row.task,
                MEASURES[row.metric].label,
                f"{verdict_kind(row.verdict)} (p_H {p_text(float(row.p_holm))})",
                f"{verdict_kind(row.verdict_other)} (p_H {p_text(float(row.p_holm_other))})",
            ]
            for row in moved.itertuples()
        ],
    )
    return f"{count}\n\n{table}"


def replication_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``replication`` placeholder's table: each comparison ``ID[,ID…]`` at SAMPLES in the
    original report and in its replication (:func:`rp1.report.replication.replication_readings`),
    both verdicts in brief, each with Δ and its interval (an inconclusive one too, so that a claim
    not replicated shows what the fresh seeds allow), the reading (replicated, not replicated,
    reversed, no claim) and the p that the two seed ranges give one difference (``same_p``)."""
    if len(words) != 4:
        raise PlaceholderError("replication needs ORIGINAL REPLICATION SAMPLES ID[,ID…]")
    *names, samples, ids = words
    frames = []
    for name in names:
        claims = reports.csv(name, "claims.csv")
        keep = claims["id"].isin(ids.split(",")) & (claims["samples"] == int(samples))
        if "tasks" in options:
            keep &= claims["task"].isin(options["tasks"].split(","))
        if "scale" in options:
            keep &= claims["scale"] == options["scale"]
        frames.append(claims[keep])
    if any(frame.empty for frame in frames):
        raise PlaceholderError(
            f"replication: no verdict of {ids} at {samples} in {' or '.join(names)}"
        )
    read = replication_readings(*frames)

    def side(row: pd.Series, suffix: str) -> str:
        """One report's verdict in brief with its Δ and interval, decided or not
        (:func:`brief_verdict`), ``—`` where it has none."""
        if not row[f"verdict{suffix}"]:
            return "—"
        fields = ("verdict", "diff", "diff_low", "diff_high")
        verdict = pd.Series({field: row[f"{field}{suffix}"] for field in fields})
        return brief_verdict(verdict, every=True)

    return markdown_table(
        ["claim", "task", "measure", names[0], names[1], "reading", "p, one Δ"],
        [
            [
                row["claim"],
                row["task"],
                MEASURES[row["metric"]].label,
                side(row, ""),
                side(row, "_replication"),
                row["reading"],
                p_text(row["same_p"]),
            ]
            for _, row in read.iterrows()
        ],
    )


PROVENANCE_SHOWN: tuple[str, ...] = (
    *("commit", "cpu", "coretype", "xla", "dealing", "program", "scoring", "made"),
)
"""The fields of provenance.csv a ``provenance`` placeholder shows, then the work per run and in
all, and ``mixed``."""


def work_text(row: pd.Series) -> tuple[str, str]:
    """A cell's work per run in minutes: the median, and ``[min, max]`` (``—`` where its runs
    recorded none)."""
    if pd.isna(row["work_median_s"]):
        return "—", ""
    low, high = (formatted(row[f"work_{end}_s"] / 60, ".1f") for end in ("min", "max"))
    return formatted(row["work_median_s"] / 60, ".1f"), f"[{low}, {high}]"


def provenance_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``provenance`` placeholder's table."""
    if not words or len(words) > 2 or words[1:] not in ([], ["mixed"]):
        raise PlaceholderError("provenance needs REPORT [mixed]")
    cells = reports.csv(words[0], "provenance.csv")
    cells = cells.assign(mixed=cells["mixed"].astype(object).where(cells["mixed"].notna(), ""))
    if words[1:] == ["mixed"]:
        cells = cells[cells["mixed"] != ""]
    return markdown_table(
        ["task", "scale", "method", "runs", *PROVENANCE_SHOWN, *WORK_HEADER],
        [
            [row["task"], row["scale"], method_label(row["method"]), str(row["runs"])]
            + [str(row[field]) for field in PROVENANCE_SHOWN]
            + [" ".join(work_text(row)).strip(), hours(row["work_total_s"])]
            + [row["mixed"] or "—"]
            for _, row in cells.iterrows()
        ],
    )


def table_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``table`` placeholder's table: the named columns of the rows of a report's CSV file that
    the filters leave, numbers by :func:`formatted` (``fmt`` for those that are not whole)."""
    if len(words) != 3:
        raise PlaceholderError("table needs REPORT FILE COLUMN[,COLUMN…] [COLUMN=VALUE …]")
    report, file, columns = words
    filters = {k: v for k, v in options.items() if k != "fmt"}
    rows = matching(reports.csv(report, file), filters, f"{report}/{file}")
    wanted = columns.split(",")
    missing = [column for column in wanted if column not in rows.columns]
    if missing:
        raise PlaceholderError(f"{report}/{file}: no column {', '.join(missing)}")
    spec = options.get("fmt")

    def shown(value: object) -> str:
        whole = isinstance(value, int | float) and float(value).is_integer()
        return formatted(value, None if whole else spec)

    return markdown_table(
        wanted, [[shown(v) for v in row] for row in rows[wanted].itertuples(index=False)]
    )


AGGREGATES: dict[str, Callable[[pd.Series], float]] = {
    "sum": lambda s: float(s.sum()),
    "count": lambda s: float(len(s)),
    "min": lambda s: float(s.min()),
    "max": lambda s: float(s.max()),
    "median": lambda s: float(s.median()),
}


def value_placeholder(reports: Reports, words: list[str], options: dict[str, str]) -> str:
    """A ``value`` placeholder's number."""
    if len(words) != 3:
        raise PlaceholderError("value needs REPORT FILE [COLUMN=VALUE …] COLUMN")
    report, file, column = words
    filters = {k: v for k, v in options.items() if k not in ("fmt", "agg")}
    rows = matching(reports.csv(report, file), filters, f"{report}/{file}")
    if column not in rows.columns:
        raise PlaceholderError(f"{report}/{file}: no column {column!r}")
    if "agg" in options:
        if options["agg"] not in AGGREGATES:
            raise PlaceholderError(f"agg= takes {', '.join(AGGREGATES)}")
        return formatted(AGGREGATES[options["agg"]](rows[column]), options.get("fmt"))
    if len(rows) != 1:
        raise PlaceholderError(f"{report}/{file}: {len(rows)} rows for {filters}, not one")
    return formatted(rows[column].iloc[0], options.get("fmt"))


DIRECTIVES: dict[str, Callable[[Reports, list[str], dict[str, str]], str]] = {
    "claim": claim_placeholder,
    "matrix": matrix_placeholder,
    "learning": learning_placeholder,
    "realisations": realisations_placeholder,
    "replication": replication_placeholder,
    "provenance": provenance_placeholder,
    "returns": returns_placeholder,
    "table": table_placeholder,
    "value": value_placeholder,
}


def render(template: str, reports: Reports, name: str = "template") -> str:
    """``template`` with every placeholder filled from ``reports``; PlaceholderError naming the
    template's line where one cannot be."""
    lines = []
    for number, line in enumerate(template.splitlines(keepends=True), 1):

        def fill(match: re.Match[str], number: int = number) -> str:
            directive, *positional = split_arguments(match.group(1))[0] or [""]
            if directive not in DIRECTIVES:
                raise PlaceholderError(f"{name}:{number}: no directive {directive!r}")
            options = split_arguments(match.group(1))[1]
            try:
                return DIRECTIVES[directive](reports, positional, options)
            except PlaceholderError as err:
                raise PlaceholderError(f"{name}:{number}: {err}") from None

        lines.append(PLACEHOLDER.sub(fill, line))
    return "".join(lines)


def page_text(page: Page, repository: Path, reports: Reports) -> str:
    """What ``page.target`` should hold: its template rendered, the whole file or, for a marked
    part, the target with that part replaced."""
    template = (repository / page.template).read_text(encoding="utf-8")
    text = render(template, reports, page.template)
    if page.marker is None:
        return text
    current = (repository / page.target).read_text(encoding="utf-8")
    start, end = f"<!-- {page.marker} -->\n", f"<!-- /{page.marker} -->"
    if start not in current or end not in current:
        raise PlaceholderError(f"{page.target}: no {start.strip()} … {end} part")
    before, rest = current.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}{text}{end}{after}"


def remake(names: list[str], repository: Path) -> None:
    """``rp1 report`` of each named report (:data:`REPORTS`) into ``docs/<name>``."""
    from rp1.report.write import write_report

    for name in names:
        roots, out = (
            [repository / root for root in REPORTS[name].split()],
            repository / "docs" / name,
        )
        written = write_report(roots, out)
        print(f"{name}: wrote {len(written)} files to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python docs/tooling/results_page.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--repository", type=Path, default=Path("."), help="the checkout (default: .)"
    )
    parser.add_argument(
        "--remake",
        nargs="*",
        choices=list(REPORTS),
        help="first make these reports again from their runs (all when none is named)",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 where a page differs"
    )
    args = parser.parse_args(argv)
    if args.remake is not None:
        remake(args.remake or list(REPORTS), args.repository)
    reports = Reports(args.repository)
    try:
        texts = {page.target: page_text(page, args.repository, reports) for page in PAGES}
    except PlaceholderError as err:
        print(f"results_page: error: {err}", file=sys.stderr)
        return 2
    stale = []
    for target, text in texts.items():
        path = args.repository / target
        if path.read_text(encoding="utf-8") == text:
            continue
        stale.append(target)
        if not args.check:
            write_atomically(path, text.encode(), "page")
    if not stale:
        print("every page is what the reports give")
    else:
        print(f"{'not what the reports give' if args.check else 'wrote'}: {', '.join(stale)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
