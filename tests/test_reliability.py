"""Issue 12: bad input is refused before anything is written, a run directory is never lost, errors
after the start are one line naming the file and the cause, and Ctrl-C / SIGTERM stop a run at once.

Every run here is the tiny ``halfcheetah-rp1`` of ``test_cli_train.train_cmd`` (seed 0, 1,800
samples): one uninterrupted run (``finished_run``) is the reference that a restarted, resumed or
interrupted run must reproduce, metric for metric except the wall-clock columns.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import metrics_without_timing
from rp1.cli import main
from rp1.config import resolve
from rp1.errors import ConfigError
from rp1.experiments.sweep import plan_sweep
from rp1.runs import CHECKPOINT, CONFIG, FINISHED, METRIC_COLUMNS, METRICS
from test_cli_train import run_cli, snapshot, train_cmd

PRESET = "halfcheetah-rp1"


def train_args(out: Path, *extra: str) -> list[str]:
    """``rp1 train`` arguments (for :func:`main`) of the tiny run in ``out``."""
    return train_cmd(out, *extra)[3:]


def tiny_overrides(args: list[str]) -> dict[str, str]:
    """The ``--set`` values of ``args`` as a dict."""
    return dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--set")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """The uninterrupted tiny run."""
    out = tmp_path_factory.mktemp("reference") / "run"
    assert main(train_args(out)) == 0
    return out


@pytest.fixture
def copied_run(finished_run, tmp_path) -> Path:
    """A copy of the finished run, to damage."""
    return Path(shutil.copytree(finished_run, tmp_path / "run"))


def one_error(code: int, err: list[str], expected_code: int, *fragments: str) -> None:
    """``err`` is the single line ``rp1: error: …`` holding every fragment, and the code is right."""
    assert code == expected_code and len(err) == 1, err
    assert err[0].startswith("rp1: error: ") and all(f in err[0] for f in fragments), err


# --- validation before anything is written (defects 3, 4, 5) -------------------------------------

BAD_VALUES = {
    "batch_steps below the horizon": (["--set", "policy.batch_steps=50"], "policy.batch_steps", ">= 100"),
    "batch_steps zero": (["--set", "policy.batch_steps=0"], "policy.batch_steps", ">= 100"),
    "infinite policy.lr": (["--set", "policy.lr=inf"], "policy.lr", "finite"),
    "infinite policy.action_std": (["--set", "policy.action_std=inf"], "policy.action_std", "finite"),
    "infinite model.lr": (["--set", "model.lr=inf"], "model.lr", "finite"),
    "infinite collect.noise_max": (["--set", "collect.noise_max=inf"], "collect.noise_max", "finite"),
    "negative infinity": (["--set", "collect.alpha=-inf"], "collect.alpha", "finite"),
    "seed too large for the generators": (["--seed", "100000000000000000000"], "seed", "2143289344"),
    "seed just above the bound": (["--seed", str(2**31 - 2**22)], "seed", "2143289344"),
}


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_bad_value_is_refused_before_anything_is_written(case, copied_run, tmp_path, capsys):
    extra, *fragments = BAD_VALUES[case]
    one_error(*run_cli(train_args(tmp_path / "new", *extra), capsys), 2, *fragments)
    assert not (tmp_path / "new").exists()
    before = snapshot(copied_run)
    one_error(*run_cli(train_args(copied_run, "--resume", *extra), capsys), 2, *fragments)
    assert snapshot(copied_run) == before


def test_largest_seed_is_accepted():
    assert resolve(PRESET, seed=2**31 - 2**22 - 1).seed == 2**31 - 2**22 - 1
