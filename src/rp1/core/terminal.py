"""Tables on the terminal (``rp1 config``, ``rp1 presets``): aligned columns whose last, the text,
wraps to the terminal's width (:func:`terminal_width`). Into a pipe or a file each row stays one
line, for ``grep``.

Example::

    print(table([("key", "value", "meaning"), ("seed", "0", "the seed ...")], terminal_width()))
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence

GAP = "  "
"""What separates two columns."""
NARROWEST = 30
"""The fewest columns the text may wrap into beside the other cells; with fewer, it goes under
them, indented by :data:`INDENT`."""
INDENT = "    "


def terminal_width() -> int | None:
    """The width to wrap stdout's lines at: the terminal's (``shutil.get_terminal_size``, which
    takes ``COLUMNS`` where set), where stdout is a terminal or ``COLUMNS`` is set; ``None``
    otherwise (a pipe, a file)."""
    if not (sys.stdout.isatty() or os.environ.get("COLUMNS")):
        return None
    return shutil.get_terminal_size().columns


def table(rows: Sequence[Sequence[str]], width: int | None) -> str:
    """``rows`` (one or more, of as many cells each) as columns :data:`GAP` apart, each as wide as its widest cell, the last
    cell of a row (its text) unwrapped if ``width`` is ``None``, else wrapped at ``width``: beside
    the other cells where that leaves it :data:`NARROWEST` columns or more, else under them. No
    word is broken; a word longer than the line is left whole."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    start = sum(widths) + len(GAP) * len(widths)
    lines = []
    for *cells, text in rows:
        head = "".join(cell.ljust(w) + GAP for cell, w in zip(cells, widths, strict=True))
        if width is None:
            lines.append(head + text)
        elif width - start >= NARROWEST:
            lines += _wrap(text, width, head, " " * start)
        else:
            lines += _wrap(head.rstrip(), width, "", INDENT) + _wrap(text, width, INDENT, INDENT)
    return "\n".join(lines)


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """``text`` in lines of at most ``width`` characters, the first led by ``first``, the others
    by ``rest``; breaking between words only (at spaces, not hyphens: ``1-16``, ``rp1-noadapt``).
    An empty ``text`` is its lead alone, or no line without one."""
    lines = textwrap.wrap(
        text,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
    if lines or not first.strip():
        return lines
    return [first.rstrip()]
