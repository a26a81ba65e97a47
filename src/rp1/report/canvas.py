"""Matplotlib figures on an Agg canvas (no pyplot global state) and their PNG files written
atomically: what every figure of rp1 is drawn on."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rp1.core.storage import write_atomically


def new_figure(
    nrows: int = 1, ncols: int = 1, panel: tuple[float, float] = (6.4, 4.2)
) -> tuple[Figure, np.ndarray]:
    """A figure on an Agg canvas with an ``[nrows, ncols]`` array of axes; ``panel`` in inches."""
    figure = Figure(figsize=(panel[0] * ncols, panel[1] * nrows), layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.subplots(nrows, ncols, squeeze=False)


def save(figure: Figure, path: Path) -> Path:
    """Write the figure as PNG, atomically (StorageError naming the file if the machine fails), and
    return the path."""
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=110)
    write_atomically(path, png.getvalue(), "figure")
    return path
