"""Learned reward and termination heads (an rp1 extension): what they learn from real data, how
imagination uses them, config resolution, and a run with both learned that resumes identically."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import TINY, Crash, crash_after_steps, metrics_without_timing, set_args, train_args
from rp1 import envs
from rp1.config import env_config, resolve
from rp1.core.errors import ConfigError
from rp1.core.nn import mlp_apply
from rp1.dynamics import (
    FitSettings,
    TransitionStore,
    ensemble_init,
    fit,
    init_model_opt_state,
    predict_heads,
    refresh_delta_normalizer,
    refresh_reward_normalizer,
    update_input_normalizers,
    with_heads,
)
from rp1.dynamics.heads import DONE, head_inputs
from rp1.dynamics.store import Transitions
from rp1.envs import rewards
from rp1.envs.task import Task
from rp1.imagination import imagine, make_imagination, member_returns
from rp1.policy import policy_init
from rp1.realenv import RealEnvs, collect, noisy_policy
from rp1.train import run_training


def real_transitions(task_name: str, episodes: int, seed: int) -> list[Transitions]:
    """``episodes`` real episodes of ``task_name`` under N(0, 1) actions (clipped by the env)."""
    real = RealEnvs(task_name, 1, seed=seed)
    act_dim = real.task.act_dim
    act_fn = noisy_policy(
        lambda obs: np.zeros((len(obs), act_dim)), 1.0, np.random.default_rng(seed)
    )
    seeds = np.arange(episodes) + 1000 * seed
    out = collect(real, act_fn, seeds).transitions(real.task)
    real.close()
    return out


def fitted_model(store: TransitionStore, obs_dim: int, act_dim: int, key: int = 0):
    """A small ensemble with heads, normalisers set from ``store`` and fitted as the agent does."""
    t = store.transitions()
    k_model, k_heads, k_fit = jax.random.split(jax.random.key(key), 3)
    model = with_heads(
        ensemble_init(k_model, obs_dim, act_dim, members=2, hidden=(16,)), k_heads, (64, 64)
    )
    model = update_input_normalizers(model, np.concatenate([t.obs, t.next_obs]), t.act)
    model = refresh_delta_normalizer(model, t.obs, t.next_obs)
    model = refresh_reward_normalizer(model, t.rew)
    train = store.train_set(np.random.default_rng(0))
    settings = FitSettings(batch_size=256, max_epochs=300)
    model, _, result = fit(
        model, init_model_opt_state(model), train, store.val_set(), k_fit, settings
    )
    assert result.head_val_losses.shape == (2,) and np.isfinite(result.head_val_losses).all()
    return model


@pytest.mark.slow
def test_reward_head_predicts_halfcheetahs_reward_on_held_out_transitions():
    env, task = envs.make("halfcheetah")
    env.close()
    store = TransitionStore.empty(task.obs_dim, task.act_dim)
    # 3,000 transitions, 10 rollouts for validation
    store = store.add_phase(real_transitions("halfcheetah", 30, seed=0))
    model = fitted_model(store, task.obs_dim, task.act_dim)
    test = Transitions(
        *(np.concatenate(x) for x in zip(*real_transitions("halfcheetah", 10, seed=1), strict=True))
    )
    predicted, _ = predict_heads(
        model, test.obs, test.act, jnp.broadcast_to(test.next_obs, (2, *test.next_obs.shape))
    )
    residual = np.mean((np.asarray(predicted) - test.rew) ** 2, axis=1)
    r2 = 1.0 - residual / np.var(test.rew)
    # Both members reach R² ≈ 0.97 (0.975, 0.973) on 1,000 held-out transitions (2-core CPU).
    assert r2.min() > 0.9, r2


def relabelled(t: Transitions, healthy: bool, rng: np.random.Generator) -> Transitions:
    """``t`` with the torso height ``z`` of every next state redrawn inside Ant's healthy range
    [0.2, 1.0] (``healthy``) or outside it, 0.05 away from its ends, and the done flags that Ant's
    termination function gives the new states."""
    n = len(t.obs)
    if healthy:
        z = rng.uniform(0.25, 0.95, n)
    else:
        z = np.where(rng.random(n) < 0.5, rng.uniform(0.0, 0.15, n), rng.uniform(1.05, 1.3, n))
    next_obs = t.next_obs.copy()
    next_obs[:, 0] = z
    return t._replace(next_obs=next_obs, done=np.asarray(rewards.ant_done(next_obs)))


def balanced(parts: list[Transitions], rng: np.random.Generator) -> list[Transitions]:
    """A healthy and a terminal copy of every rollout (:func:`relabelled`), so that both splits
    hold half terminal rows and both classes cover the state space the rollouts visit."""
    return [relabelled(t, healthy, rng) for t in parts for healthy in (True, False)]


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve of ``scores [N]`` for binary ``labels [N]`` (Mann–Whitney U)."""
    ranks = np.argsort(np.argsort(scores)) + 1
    positives = labels.sum()
    negatives = len(labels) - positives
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


@pytest.mark.slow
def test_termination_head_separates_terminal_from_healthy_ant_transitions():
    env, task = envs.make("ant")
    env.close()
    rng = np.random.default_rng(0)
    store = TransitionStore.empty(task.obs_dim, task.act_dim)
    store = store.add_phase(balanced(real_transitions("ant", 40, seed=0), rng))  # 2 × 40 rollouts
    assert 0.45 < store.train.done.mean() < 0.55
    model = fitted_model(store, task.obs_dim, task.act_dim)
    test = Transitions(
        *(
            np.concatenate(x)
            for x in zip(*balanced(real_transitions("ant", 5, seed=1), rng), strict=True)
        )
    )
    assert test.done.mean() == pytest.approx(0.5, abs=0.02)
    _, flags = predict_heads(
        model, test.obs, test.act, jnp.broadcast_to(test.next_obs, (2, *test.next_obs.shape))
    )
    accuracy = np.mean(np.asarray(flags) == test.done, axis=1)
    logits = jax.vmap(mlp_apply, in_axes=(0, None))(
        model.heads, head_inputs(model, test.obs, test.act, test.next_obs)
    )
    aucs = [auc(np.asarray(member[:, DONE]), test.done) for member in logits]
    # Both members: accuracy ≈ 0.98 (0.978, 0.986), AUC ≈ 0.998 on the balanced held-out set (2-core CPU).
    assert accuracy.min() > 0.9 and min(aucs) > 0.95, (accuracy, aucs)


def constant_heads_model(rewards_by_member: list[float], done_by_member: list[bool]):
    """A 2-member model on a 3-d state whose heads ignore their inputs: member ``j`` predicts
    reward ``rewards_by_member[j]`` and terminates iff ``done_by_member[j]``."""
    model = with_heads(
        ensemble_init(jax.random.key(0), 3, 2, members=2, hidden=(4,)), jax.random.key(1), (4,)
    )
    zeroed = jax.tree_util.tree_map(jnp.zeros_like, model.heads)
    bias = jnp.stack(
        [jnp.asarray(rewards_by_member), jnp.where(jnp.asarray(done_by_member), 5.0, -5.0)], -1
    )
    heads = zeroed[:-1] + ((zeroed[-1][0], bias),)
    return model.replace(heads=heads)


UNKNOWN = Task(
    name="unknown",
    obs_dim=3,
    act_dim=2,
    horizon=4,
    action_low=(-1.0, -1.0),
    action_high=(1.0, 1.0),
    dt=0.01,
    reward_fn=None,
    done_fn=None,
)


def test_imagination_uses_each_members_own_head_for_reward_bonus_and_termination():
    model = constant_heads_model([1.0, 3.0], [False, True])
    policy = policy_init(jax.random.key(2), 3, 2, (8,))
    start = jax.random.normal(jax.random.key(3), (32, 3))
    imagination = make_imagination(UNKNOWN, reward="learned", done="learned")
    traj, _ = imagine(imagination, model, policy, start, jax.random.key(4), 0.5)
    first = np.asarray(traj.member[0])
    assert 0 < first.sum() < len(first)  # both members drawn
    np.testing.assert_allclose(traj.task_reward[0], np.where(first == 1, 3.0, 1.0))
    np.testing.assert_allclose(traj.bonus[0], 2.0 / math.sqrt(2.0), rtol=1e-6)  # |3 − 1| / sqrt(2)
    np.testing.assert_array_equal(traj.done[0], first == 1)
    np.testing.assert_array_equal(traj.valid[1], first == 0)
    returns = member_returns(imagination, model, policy, start)
    np.testing.assert_allclose(returns, [4 * 1.0, 3.0])  # member 1 terminates at its first step


def test_sources_resolve_against_the_tasks_functions():
    ant = envs.make("ant")[1]
    assert ant.source("reward", "auto") == "known" and ant.source("done", "learned") == "learned"
    assert (
        UNKNOWN.source("reward", "auto") == "learned"
        and UNKNOWN.source("done", "auto") == "learned"
    )
    with pytest.raises(
        ConfigError, match=r"task unknown has no reward function; use model.reward=learned or auto"
    ):
        UNKNOWN.source("reward", "known")
    with pytest.raises(ConfigError, match=r"model.done must be one of auto, known, learned"):
        ant.source("done", "maybe")


def test_known_on_a_task_without_the_function_is_a_config_error():
    with pytest.raises(
        ConfigError,
        match=r"task Pendulum-v1 has no reward function; use model.reward=learned or auto",
    ):
        env_config("Pendulum-v1", "rp1", overrides={"model.reward": "known"})
    with pytest.raises(ConfigError, match="task Pendulum-v1 has no termination function"):
        env_config("Pendulum-v1", "rp1", overrides={"model.done": "known"})
    assert env_config("Pendulum-v1", "rp1").model.reward == "auto"
    assert resolve("ant-rp1", overrides={"model.done": "known"}).model.done == "known"
    with pytest.raises(ConfigError, match=r"model.reward must be one of"):
        resolve("ant-modelfree", overrides={"model.reward": "exact"})


@pytest.mark.slow
def test_paper_task_under_auto_builds_no_heads_and_runs_as_known_known(finished_run, tmp_path):
    """docs/algorithm.md §11: with both functions known (every paper task under the
    default ``auto``) the model has no heads, and a run is bit for bit the run with
    ``model.reward=known``, ``model.done=known`` (the session's tiny run is the ``auto`` one)."""
    from rp1.agents.model_based import ModelBasedAgent
    from rp1.cli import main

    for task in ("halfcheetah", "ant"):
        auto = ModelBasedAgent(resolve(f"{task}-rp1", overrides=TINY))
        learned = ModelBasedAgent(
            resolve(f"{task}-rp1", overrides={**TINY, "model.reward": "learned"})
        )
        try:
            assert auto.cfg.model.reward == auto.cfg.model.done == "auto"
            assert auto.initial_state().learner.model.heads is None
            assert learned.initial_state().learner.model.heads is not None
        finally:
            auto.close()
            learned.close()
    known = tmp_path / "known"
    assert main(train_args(known, *set_args(["model.reward=known", "model.done=known"]))) == 0
    assert metrics_without_timing(known) == metrics_without_timing(finished_run)


@pytest.mark.slow
def test_ant_run_with_learned_reward_and_done_is_finite_and_resumes_identically(
    tmp_path, monkeypatch
):
    sets = {
        **TINY,
        "collect.alpha": "0",
        "model.reward": "learned",
        "model.done": "learned",
        "model.head_hidden": "16",
    }
    cfg = resolve("ant-rp1", seed=5, budget=1200, overrides=sets)
    run_training(cfg, tmp_path / "reference", progress=False)
    reference = metrics_without_timing(tmp_path / "reference")
    assert len(reference) == 4
    for row in reference[1:]:
        for key in ("val_loss", "model_return", "bonus", "model_error", "eval_return"):
            assert math.isfinite(float(row[key])), (key, row)

    crash_after_steps(monkeypatch, 2)
    with pytest.raises(Crash):
        run_training(cfg, tmp_path / "resumed", progress=False)
    monkeypatch.undo()
    run_training(cfg, tmp_path / "resumed", resume=True, progress=False)
    assert metrics_without_timing(tmp_path / "resumed") == reference
