"""The evaluation grid (rp1.agents.grid): an evaluation at every multiple of ``eval.every`` real
samples of the policy that collected that sample, for methods of short and long phases alike,
leaving every column of ``metrics.csv`` as it is without the grid."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from helpers import TINY, metrics_without_timing
from rp1.agents.grid import GRID_STREAM, grid_points
from rp1.config import resolve
from rp1.core.seeding import episode_seeds
from rp1.rundir.files import EVALUATION_COLUMNS, EVALUATIONS
from rp1.train import run_training

EVERY = 300
BUDGET = 1800
PHASES = {"short": "150", "long": "900"}  # collect.phase_cap: 12 and 2 phases by the budget


def read_evaluations(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / EVALUATIONS, newline="") as f:
        return list(csv.DictReader(f))


def tiny_run(out: Path, phase_cap: str, every: int, method: str = "rp1") -> Path:
    overrides = {
        **TINY,
        "collect.alpha": "0",
        "collect.phase_cap": phase_cap,
        "eval.every": str(every),
    }
    cfg = resolve(f"halfcheetah-{method}", seed=1, budget=BUDGET, overrides=overrides)
    return run_training(cfg, out, progress=False)


def test_grid_points_are_the_multiples_in_the_collected_interval():
    assert list(grid_points(0, 3000, 1000)) == [1, 2, 3]
    assert list(grid_points(900, 1000, 1000)) == [1]  # the policy that collected sample 1,000
    assert list(grid_points(1000, 1999, 1000)) == []
    assert list(grid_points(1000, 2000, 1000)) == [2]
    assert list(grid_points(0, 3000, 0)) == []  # no grid


def test_grid_episodes_are_seeded_by_point_not_by_method():
    """A grid point's episodes depend on the seed and the point only: every method of a seed is
    evaluated on the same episodes there, and other points on others."""
    first = episode_seeds(7, GRID_STREAM, 3, 10)
    assert (first == episode_seeds(7, GRID_STREAM, 3, 10)).all()
    assert not (first == episode_seeds(7, GRID_STREAM, 4, 10)).all()


@pytest.mark.slow
@pytest.mark.parametrize("phases", list(PHASES))
def test_grid_evaluates_the_policy_in_force_at_every_multiple(phases, tmp_path):
    run = tiny_run(tmp_path / phases, PHASES[phases], EVERY)
    grid = read_evaluations(run)
    assert list(grid[0]) == list(EVALUATION_COLUMNS)
    assert [int(row["samples"]) for row in grid] == list(range(EVERY, BUDGET + 1, EVERY))
    metrics = {int(row["iteration"]): row for row in metrics_without_timing(run)}
    for row in grid:
        # the iteration whose policy collected the grid point's sample, trained on its samples
        collected = metrics[int(row["iteration"])]
        start = int(collected["samples"])
        assert int(row["trained_on"]) == start
        assert start < int(row["samples"]) <= start + int(collected["phase_samples"])
    if phases == "long":  # three points share each 900-sample phase's policy, on other episodes
        assert len({row["eval_return"] for row in grid[:3]}) == 3


@pytest.mark.slow
def test_the_grid_leaves_every_metrics_column_as_it_is_without_it(tmp_path):
    with_grid = tiny_run(tmp_path / "grid", PHASES["short"], EVERY)
    without = tiny_run(tmp_path / "none", PHASES["short"], 0)
    assert not (without / EVALUATIONS).exists()
    assert metrics_without_timing(with_grid) == metrics_without_timing(without)


@pytest.mark.slow
def test_model_free_runs_are_evaluated_on_the_grid(tmp_path):
    overrides = {
        "policy.hidden": "16,16",
        "policy.batch_steps": "500",
        "modelfree.envs": "5",
        "eval_episodes": "2",
        "eval.every": "250",
    }
    cfg = resolve("halfcheetah-modelfree", seed=1, budget=1500, overrides=overrides)
    run = run_training(cfg, tmp_path / "mf", progress=False)
    grid = read_evaluations(run)
    assert [int(row["samples"]) for row in grid] == list(range(250, 1501, 250))
    # PPO updates of 500 steps: the policy of update u collected samples 500u to 500(u + 1)
    assert [int(row["iteration"]) for row in grid] == [0, 0, 1, 1, 2, 2]
    assert [int(row["trained_on"]) for row in grid] == [0, 0, 500, 500, 1000, 1000]
