"""Check that runs made again reproduce earlier ones bit for bit.

For every run directory under ``OLD`` (a folder holding ``metrics.csv``), the run at the same
relative path under ``NEW`` must have the same rows and, in every column of the old file but the
wall-clock ones (``rp1.rundir.files.TIMING_COLUMNS``), the same text: rp1 writes floats with
``repr``, so equal text is equal bits. Columns only the new run has (a metric added since, e.g.
``test_model_error``) are not compared. Prints one line per run and exits 1 if any differs or is
missing.

Usage::

    python benchmarks/identical_runs.py OLD NEW
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from rp1.rundir.files import METRICS, TIMING_COLUMNS


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a ``metrics.csv`` as text, column name to field."""
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def first_difference(old: list[dict[str, str]], new: list[dict[str, str]]) -> str | None:
    """Where ``new`` first departs from ``old`` in ``old``'s non-timing columns, or None."""
    if len(old) != len(new):
        return f"{len(old)} rows, now {len(new)}"
    for number, (before, after) in enumerate(zip(old, new, strict=True)):
        for column, value in before.items():
            if column in TIMING_COLUMNS:
                continue
            if column not in after:
                return f"column {column} missing"
            if after[column] != value:
                return f"row {number}, {column}: {value} then {after[column]}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    failed = 0
    for old_file in sorted(args.old.rglob(METRICS)):
        run = old_file.parent.relative_to(args.old)
        new_file = args.new / run / METRICS
        if not new_file.exists():
            print(f"{run}: missing under {args.new}")
            failed += 1
            continue
        difference = first_difference(read_rows(old_file), read_rows(new_file))
        print(f"{run}: {'identical' if difference is None else 'differs, ' + difference}")
        failed += difference is not None
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
