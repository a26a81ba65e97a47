"""Markdown pieces every file of the report writes: tables and p-values."""

from __future__ import annotations

import math
from typing import Any

BLANK = "—"
"""A Markdown cell without runs, in a row or column that has some."""

FrameRow = Any
"""A row of ``DataFrame.itertuples()``: a namedtuple with the frame's columns as fields."""


def p_text(p: float) -> str:
    """A p-value with 2 significant digits, ``—`` for none."""
    return BLANK if math.isnan(p) else f"{p:.2g}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)
