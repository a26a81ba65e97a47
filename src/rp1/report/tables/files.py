"""A report table's files: its Markdown, its cells and its comparisons as CSV."""

from __future__ import annotations

from pathlib import Path

from rp1.core.storage import write_atomically
from rp1.report.measures import QUANTITY_MEASURES
from rp1.report.tables.cells import CELL_COLUMNS
from rp1.report.tables.markdown import render
from rp1.report.tables.results import TableFrames


def write_table_frames(frames: TableFrames | None, out: Path) -> list[Path]:
    """Write ``<name>.md`` (:func:`~rp1.report.tables.markdown.render`), ``<name>.csv`` (the
    cells of the first measure, :data:`~rp1.report.tables.cells.CELL_COLUMNS`),
    ``<name>_fair.csv`` (the cells of the others, with ``metric``; for tables of returns) and
    ``<name>_ttests.csv`` (:data:`~rp1.report.tables.ttests.TTEST_COLUMNS`); return their
    paths (none for a table without runs)."""
    if frames is None:
        return []
    name, cells = frames.spec.name, frames.cells
    first = cells["metric"] == QUANTITY_MEASURES[frames.spec.quantity][0]
    files = {
        f"{name}.md": render(frames),
        f"{name}.csv": cells[first][list(CELL_COLUMNS)].to_csv(index=False),
        f"{name}_fair.csv": cells[~first].to_csv(index=False) if (~first).any() else None,
        f"{name}_ttests.csv": frames.tests.to_csv(index=False),
    }
    written = [out / file for file, text in files.items() if text is not None]
    for path in written:
        write_atomically(path, files[path.name].encode(), "report file")
    return written
