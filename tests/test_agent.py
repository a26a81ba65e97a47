"""The outer loop for every model-based method on a tiny config (SPEC §7–§8)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from rp1.config import LAMBDA_ARMS, MODEL_BASED_METHODS, resolve
from rp1.runs import METRIC_COLUMNS
from rp1.train import run_training
from conftest import TINY

ALWAYS_FILLED = ("iteration", "samples", "eval_return", "model_error", "phase_samples", "wall_s")
AFTER_FIRST = ("lambda", "model_return", "val_loss", "policy_updates", "model_epochs")


def read_rows(run):
    with open(run / "metrics.csv") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == METRIC_COLUMNS
        return list(reader)


def tiny(method: str, budget: int, **extra):
    return resolve(f"halfcheetah-{method}", seed=0, budget=budget, overrides={**TINY, **extra})


@pytest.mark.parametrize("method", list(MODEL_BASED_METHODS))
def test_one_iteration_per_method_writes_a_full_row(method, tmp_path):
    run = run_training(tiny(method, budget=600), tmp_path / method, progress=False)
    rows = read_rows(run)
    assert [int(r["iteration"]) for r in rows] == [0, 1]
    assert [int(r["samples"]) for r in rows] == [0, 300]
    for row in rows:
        assert all(row[c] != "" for c in ALWAYS_FILLED)
        assert np.isfinite(float(row["eval_return"]))
    assert all(rows[1][c] != "" for c in AFTER_FIRST)
    assert (run / "finished").exists() and (run / "checkpoint" / "state.msgpack").exists()


def lambdas(run):
    return [float(r["lambda"]) for r in read_rows(run)[1:]]


@pytest.mark.slow
def test_lambda_schedules(tmp_path):
    greedy = run_training(tiny("greedy", 1500), tmp_path / "g", progress=False)
    vr = run_training(tiny("vr", 1500), tmp_path / "v", progress=False)
    rp1 = run_training(tiny("rp1", 3000, **{"collect.alpha": "0"}), tmp_path / "r", progress=False)
    assert lambdas(greedy) == [0.0] * 4
    assert lambdas(vr) == [0.5] * 4
    lam = lambdas(rp1)
    assert lam[0] == 0.0  # the first outer iteration uses λ = 0
    assert set(lam) <= set(LAMBDA_ARMS) and len(set(lam)) > 1
    assert all(r["g_hat"] != "" for r in read_rows(rp1))
