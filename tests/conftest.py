"""Fixtures shared by the test files: finished tiny runs made once per session. Helpers live in
``helpers.py``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

from helpers import train_args  # after the backend is chosen


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """The uninterrupted tiny ``halfcheetah-rp1`` run of :func:`helpers.train_args` (seed 0,
    1,800 samples), finished. Read it, never change it: tests that damage a run take
    ``copied_run``."""
    from rp1.cli import main

    out = tmp_path_factory.mktemp("finished") / "run"
    assert main(train_args(out)) == 0
    return out


@pytest.fixture
def copied_run(finished_run, tmp_path) -> Path:
    """A copy of ``finished_run`` to change or damage."""
    return Path(shutil.copytree(finished_run, tmp_path / "run"))
