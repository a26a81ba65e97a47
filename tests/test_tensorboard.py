"""``--tensorboard``: the event files read back hold every metrics.csv column (the diagnostics too)
as a scalar at the row's real samples, and the λ values played as a histogram; a resumed run's log holds every row
once, whether the run was killed inside a step or after logging a step it had not checkpointed."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from helpers import EVALUATED_CASES as CASES
from helpers import Crash, crash_after_steps, crash_before_checkpoint, read_events
from rp1.cli import main
from rp1.config import resolve
from rp1.outputs.writer import RunOptions
from rp1.train import run_training

pytest.importorskip("tensorboardX", reason='the tb extra: pip install "ready-policy-one[tb]"')

TB = RunOptions(tensorboard=True)


def config(case: str):
    preset, budget, sets = CASES[case]
    return resolve(preset, seed=2, budget=budget, overrides=sets)


def logged(run: Path) -> tuple[dict[str, list[tuple[int, float]]], dict[int, float]]:
    """``({tag: [(step, value), ...]}, {step: histogram count of lambda_played})``."""
    scalars, histograms = defaultdict(list), {}
    for event in read_events(run / "tensorboard"):
        for value in event.summary.value:
            if value.HasField("simple_value"):
                scalars[value.tag].append((event.step, value.simple_value))
            elif value.HasField("histo"):
                histograms[event.step] = value.histo.num
    return scalars, histograms


def expected(run: Path) -> tuple[dict[str, list[tuple[int, float]]], dict[int, float]]:
    """What metrics.csv says the log must hold: every finite field (scalars are float32 in event files)."""
    with open(run / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    scalars, histograms, played = defaultdict(list), {}, 0
    for row in rows:
        for column, text in row.items():
            if text and math.isfinite(float(text)):
                scalars[column].append((int(row["samples"]), float(np.float32(float(text)))))
        if row["lambda"]:
            played += 1
            histograms[int(row["samples"])] = played
    return scalars, histograms


@pytest.mark.parametrize("case", list(CASES))
def test_event_files_hold_the_metrics(case, tmp_path):
    run = run_training(config(case), tmp_path / "run", progress=False, options=TB)
    scalars, histograms = logged(run)
    want_scalars, want_histograms = expected(run)
    assert dict(scalars) == dict(want_scalars)
    assert set(scalars) >= {
        "eval_return",
        "iteration",
        "wall_s",
        "ppo_approx_kl_mean",
        "ppo_clip_fraction_last",
    }
    assert histograms == want_histograms and (case == "modelfree") == (not histograms)


@pytest.mark.parametrize("crash", ["in a step", "before the checkpoint"])
def test_resumed_log_holds_every_row_once(crash, tmp_path, monkeypatch):
    cfg = config("rp1")
    if crash == "in a step":
        crash_after_steps(monkeypatch, 2)
    else:  # the third step is logged, not checkpointed
        crash_before_checkpoint(monkeypatch, 2)
    with pytest.raises(Crash):
        run_training(cfg, tmp_path / "run", progress=False, options=TB)
    monkeypatch.undo()
    run = run_training(cfg, tmp_path / "run", resume=True, progress=False, options=TB)
    scalars, histograms = logged(run)
    assert dict(scalars) == dict(expected(run)[0]) and histograms == expected(run)[1]


def test_started_without_resumed_with_tensorboard_logs_the_whole_run(tmp_path, monkeypatch, capsys):
    cfg = config("rp1")
    crash_after_steps(monkeypatch, 2)
    with pytest.raises(Crash):
        run_training(cfg, tmp_path / "run", progress=False)
    monkeypatch.undo()
    assert not (tmp_path / "run" / "tensorboard").exists()
    run = run_training(cfg, tmp_path / "run", resume=True, progress=False, options=TB)
    scalars, _ = logged(run)
    assert dict(scalars) == dict(expected(run)[0])


def test_missing_tensorboardx(tmp_path, capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "tensorboardX" else find_spec(name, *a),
    )
    code = main(
        [
            "train",
            "--preset",
            "halfcheetah-rp1",
            "--out",
            str(tmp_path / "run"),
            "--tensorboard",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and 'pip install "ready-policy-one[tb]"' in err[0]
    assert not (tmp_path / "run").exists()
