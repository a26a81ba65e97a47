"""Model-free PPO in the real env: a tiny run writes metrics, the vectorised collector matches a
sequential one and does not depend on the number of workers, a killed run resumes identically."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from helpers import kill_at_pause, metrics_without_timing, read_rows, set_args
from rp1 import envs
from rp1.agents.modelfree import ModelFreeAgent
from rp1.cli import main
from rp1.config import resolve
from rp1.core.errors import ConfigError
from rp1.core.seeding import episode_seeds
from rp1.realenv import Episodes, RealEnvs, collect
from rp1.rundir.files import TIMING_COLUMNS
from rp1.train import run_training

TINY = {
    "policy.batch_steps": "400",  # 4 HalfCheetah episodes per update
    "policy.hidden": "16,16",
    "modelfree.envs": "2",
    "eval_episodes": "2",
}


def tiny_config(budget: int = 800, **extra: str):
    return resolve("halfcheetah-modelfree", budget=budget, overrides={**TINY, **extra})


def test_presets_list_modelfree_with_budgets(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    for task in ("halfcheetah", "ant", "hopper", "swimmer"):
        assert f"{task}-modelfree" in out
    cfg = resolve("ant-modelfree")
    assert (cfg.method, cfg.budget, cfg.policy.batch_steps, cfg.policy.epochs) == (
        "modelfree",
        1_000_000,
        50_000,
        10,
    )
    assert resolve("ant-modelfree", budget=5_000_000).budget == 5_000_000


def test_envs_must_split_evenly_over_workers():
    with pytest.raises(ConfigError, match=r"multiple of modelfree.workers"):
        tiny_config(**{"modelfree.workers": "3"})


def test_tiny_run_two_updates_writes_metrics(tmp_path):
    run_training(tiny_config(), tmp_path / "run", progress=False)
    rows = read_rows(tmp_path / "run")
    assert [(r["iteration"], r["samples"], r["phase_samples"]) for r in rows] == [
        ("1", "400", "400"),
        ("2", "800", "400"),
    ]
    # eval at the budget
    assert rows[0]["eval_return"] == "" and np.isfinite(float(rows[1]["eval_return"]))
    assert all(float(r["steps_per_s"]) > 0 for r in rows)
    for column in ("lambda", "model_return", "model_error", "val_loss", "residual", "model_epochs"):
        assert all(r[column] == "" for r in rows), column
    assert (tmp_path / "run" / "finished").exists()


def padded(act_fn, slots: int):
    """``act_fn`` for one observation, called with a batch of ``slots`` copies of it: XLA computes
    a single row with another summation order than a batch, and HalfCheetah grows such 1e-8
    differences to O(1) within 60 steps, so the reference keeps the collector's batch shape."""

    def act_one(obs, episode, t):
        act, logp = act_fn(np.repeat(obs[None], slots, 0), np.full(slots, episode), t)
        return act[0], logp[0]

    return act_one


def collect_sequential(task_name: str, act_one, seeds: np.ndarray) -> Episodes:
    """Reference for :func:`collect`: one plain Gymnasium environment, one episode after another;
    ``act_one`` gets ``obs [obs_dim]``, the episode index and ``t`` and returns ``(action [act_dim], log π)``."""
    env, task = envs.make(task_name)
    batch = Episodes.empty(task, task.horizon, len(seeds))
    low, high = task.action_bounds
    for k, seed in enumerate(seeds):
        obs, _ = env.reset(seed=int(seed))
        for t in range(task.horizon):
            act, logp = act_one(obs, k, t)
            next_obs, reward, terminated, truncated, _ = env.step(np.clip(act, low, high))
            batch.obs[t, k], batch.act[t, k], batch.logp[t, k], batch.next_obs[t, k] = (
                obs,
                act,
                logp,
                next_obs,
            )
            batch.reward[t, k], batch.done[t, k], batch.valid[t, k] = reward, terminated, True
            if terminated or truncated:
                break
            obs = next_obs
    env.close()
    return batch


@pytest.mark.slow
@pytest.mark.parametrize("task", ["halfcheetah", "ant"])
def test_vectorised_collector_matches_sequential_for_any_workers(task):
    agent = ModelFreeAgent(
        resolve(f"{task}-modelfree", overrides={**TINY, "policy.batch_steps": "300"})
    )
    state = agent.initial_state()
    act_fn = agent.sampling(state)
    seeds = episode_seeds(0, 0, 0, 3)  # 3 episodes in 2 slots: the second round has an unused slot
    reference = collect_sequential(task, padded(act_fn, 2), seeds)
    for workers in (1, 2):
        real = RealEnvs(task, 2, workers)
        try:
            batch = collect(real, act_fn, seeds)
        finally:
            real.close()
        for name, ref, got in zip(Episodes._fields, reference, batch, strict=True):
            np.testing.assert_array_equal(got, ref, err_msg=f"{name}, workers={workers}")
    if task == "ant":  # an early termination is covered
        assert reference.done.any() and not reference.valid.all()
    else:
        assert reference.valid.all()
    agent.close()


def test_first_steps_keeps_the_first_steps_episode_by_episode():
    h, n = 4, 3
    valid = np.ones((h, n), bool)
    valid[2:, 1] = False  # episode 1 terminated after 2 steps
    done = np.zeros((h, n), bool)
    done[1, 1] = True
    batch = Episodes(
        obs=np.ones((h, n, 2), np.float32),
        act=np.ones((h, n, 1), np.float32),
        logp=np.ones((h, n), np.float32),
        reward=np.where(valid, 1.0, 0.0).astype(np.float32),
        next_obs=np.ones((h, n, 2), np.float32),
        done=done,
        valid=valid,
    )
    cut = batch.first_steps(7)  # 4 + 2 + 1 of the 10 steps
    assert cut.valid.sum(0).tolist() == [4, 2, 1]
    assert cut.done[1, 1] and cut.done.sum() == 1
    assert cut.reward.sum() == 7 and cut.obs[1:, 2].sum() == 0 and cut.next_obs[1:, 2].sum() == 0
    assert batch.first_steps(100).valid.sum() == 10


def test_checkpoint_round_trip_continues_identically_and_step_leaves_its_input():
    cfg = tiny_config(budget=1200)
    agent = ModelFreeAgent(cfg)
    state, _ = agent.step(agent.initial_state())
    restored = agent.restore(agent.checkpoint(state))
    strip = lambda row: {k: v for k, v in row.items() if k not in TIMING_COLUMNS}  # noqa: E731
    _, a = agent.step(state)
    _, b = agent.step(restored)
    _, c = agent.step(state)  # step is pure: the state stepped before is as it was
    assert strip(a) == strip(b) == strip(c)
    assert (state.update, state.samples, len(state.rows)) == (1, 400, 1)
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(restored.learner))
    agent.close()


RESUME_BUDGET = 4000  # 10 updates
RESUME_SETS = {"modelfree.eval_every": "2"}


def train_args(out, *extra: str) -> list[str]:
    sets = set_args([f"{k}={v}" for k, v in {**TINY, **RESUME_SETS}.items()])
    return [
        "train",
        "--preset",
        "halfcheetah-modelfree",
        "--out",
        str(out),
        "--budget",
        str(RESUME_BUDGET),
        "--quiet",
        *sets,
        *extra,
    ]


@pytest.mark.slow
def test_kill_and_resume_gives_identical_metrics(tmp_path):
    reference = tmp_path / "reference"  # in this process, one worker; the killed run has two
    run_training(tiny_config(RESUME_BUDGET, **RESUME_SETS), reference, progress=False)

    killed = tmp_path / "killed"
    kill_at_pause(
        train_args(killed, "--env-workers", "2"),
        tmp_path / "ready",
        "--pause-after-row",
        "3",
        "--at",
        "metrics",
    )
    assert main(train_args(killed, "--resume", "--env-workers", "2")) == 0

    assert metrics_without_timing(killed) == metrics_without_timing(reference)
    assert len(metrics_without_timing(reference)) == 10
