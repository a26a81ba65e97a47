"""A run's TensorBoard log, ``RUN/tensorboard/`` (``--tensorboard``; tensorboardX, the ``tb`` extra).

Every value of every metrics row (every ``metrics.csv`` column the row fills) is a scalar (tag: the
column's name) at step = the row's real samples; ``lambda_played`` is a histogram of the λ values
played up to that row (model-based methods); ``best_policy`` is a video (an animated GIF,
TensorBoard's format for videos) of each new best policy where ``--video`` rendered one.

The log is rewritten from the checkpointed rows when a run starts or resumes: its event files are
deleted and the rows written again (with the videos still in ``RUN/videos/``), so a run killed
after logging an iteration but before checkpointing it shows that iteration once after
``--resume``, and a run started without ``--tensorboard`` gets its whole history when resumed with
it. (The rewritten events carry the time of the rewrite, not of the iterations.)
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

from rp1.core.errors import ConfigError

EVENT_FILES = "events.out.tfevents.*"


def check_tensorboard() -> None:
    """ConfigError naming the extra to install unless tensorboardX is installed."""
    if importlib.util.find_spec("tensorboardX") is None:
        raise ConfigError('--tensorboard needs tensorboardX: pip install "ready-policy-one[tb]"')


class TensorBoardLog:
    """The event file of ``directory``, replacing any there; see the module docstring."""

    def __init__(self, directory: Path):
        from tensorboardX import FileWriter

        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob(EVENT_FILES):
            old.unlink()
        self._writer = FileWriter(str(directory))
        self._lambdas: list[float] = []

    def add_row(self, row: dict[str, Any]) -> None:
        """The row's values as scalars (all of them but the empty and non-finite ones), and the λ
        values played so far as a histogram, at the row's samples."""
        from tensorboardX import summary

        step = int(row["samples"])
        for column, value in row.items():
            if value is not None and math.isfinite(value):
                self._writer.add_summary(summary.scalar(column, float(value)), step)
        if row.get("lambda") is not None:
            self._lambdas.append(float(row["lambda"]))
            self._writer.add_summary(
                summary.histogram("lambda_played", self._lambdas, "auto"), step
            )

    def add_video(
        self, gif: bytes, size: tuple[int, int], step: int, tag: str = "best_policy"
    ) -> None:
        """An animated GIF of ``size = (width, height)`` at ``step``."""
        from tensorboardX.proto.summary_pb2 import Summary

        image = Summary.Image(height=size[1], width=size[0], colorspace=3, encoded_image_string=gif)
        self._writer.add_summary(Summary(value=[Summary.Value(tag=tag, image=image)]), step)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
