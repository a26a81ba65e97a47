"""In-process round trip through the real msgpack checkpoint: a run that dies after a few
iterations and is resumed writes exactly the metrics of an uninterrupted run (every column but
the wall-clock ones), for a model-based and a model-free agent."""

from __future__ import annotations

import pytest
from conftest import TINY, Crash, crash_after_steps, metrics_without_timing

from rp1.config import resolve
from rp1.train import run_training

CASES = {
    # α = 0 keeps the number of iterations independent of the data: 4 phases of 300 samples
    "rp1": ("halfcheetah-rp1", 1200, {**TINY, "collect.alpha": "0"}),
    "modelfree": ("halfcheetah-modelfree", 3000, {**TINY, "policy.batch_steps": "500", "modelfree.envs": "5"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_resumed_run_equals_uninterrupted_run(case, tmp_path, monkeypatch):
    preset, budget, sets = CASES[case]
    cfg = resolve(preset, seed=3, budget=budget, overrides=sets)
    run_training(cfg, tmp_path / "reference", progress=False)

    crash_after_steps(monkeypatch, 2)
    with pytest.raises(Crash):
        run_training(cfg, tmp_path / "resumed", progress=False)
    monkeypatch.undo()
    assert len(metrics_without_timing(tmp_path / "resumed")) == 2
    run_training(cfg, tmp_path / "resumed", resume=True, progress=False)

    reference = metrics_without_timing(tmp_path / "reference")
    assert len(reference) > 2  # the crash came before the end
    assert metrics_without_timing(tmp_path / "resumed") == reference
