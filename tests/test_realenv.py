"""The real-environment module: unseeded episodes follow the environments' own streams (and resume
from their states), collection phases respect the cap and the action bounds, evaluation sums each
episode's rewards (SPEC §5, §7)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from rp1.realenv import UNSEEDED, RealEnvs, collect, collect_phase, evaluate, mean_policy, noisy_policy


def zero_action(obs):
    return np.zeros((len(obs), 6))


@pytest.fixture
def real():
    envs = RealEnvs("halfcheetah", 1, seed=3)
    yield envs
    envs.close()


def test_unseeded_episodes_continue_the_environment_stream_and_resume_from_its_state(real):
    other = RealEnvs("halfcheetah", 1, seed=3)
    unseeded = np.array([UNSEEDED])
    first = collect(real, mean_policy(zero_action), unseeded, max_steps=5)
    np.testing.assert_array_equal(first.obs, collect(other, mean_policy(zero_action), unseeded, max_steps=5).obs)
    saved = copy.deepcopy(real.generators())
    second = collect(real, mean_policy(zero_action), unseeded, max_steps=5)
    assert not np.array_equal(first.obs[0], second.obs[0])  # a new reset draw
    other.use_generators(saved)
    np.testing.assert_array_equal(second.obs, collect(other, mean_policy(zero_action), unseeded, max_steps=5).obs)
    other.close()


def test_phase_fills_the_cap_with_clipped_noisy_actions(real):
    phase = collect_phase(real, zero_action, np.random.default_rng(0), cap=250, alpha=0.0, noise_max=3.0, share=0.99)
    assert [len(e.rew) for e in phase.episodes] == [100, 100, 50] and phase.samples == 250
    acts = np.concatenate([e.act for e in phase.episodes])
    assert np.abs(acts).max() == 1.0 and np.isin(acts, (-1.0, 1.0)).mean() > 0.1  # noise up to std 3, clipped
    assert phase.residual is None  # α = 0: no residual computed


def test_noisy_policy_draws_nothing_without_noise():
    rng = np.random.default_rng(0)
    act, logp = noisy_policy(zero_action, 0.0, rng)(np.ones((1, 18)), np.zeros(1, int), 0)
    assert act.tolist() == [[0.0] * 6] and logp.tolist() == [0.0]
    assert rng.uniform() == np.random.default_rng(0).uniform()


def test_evaluate_returns_each_episodes_reward_sum():
    seeds = np.array([11, 12, 13])
    envs = RealEnvs("ant", 2)  # two rounds, the second with one unused slot
    returns = evaluate(envs, mean_policy(zero_action_ant), 3, seeds)
    batch = collect(envs, mean_policy(zero_action_ant), seeds)
    envs.close()
    assert returns.shape == (3,)
    np.testing.assert_allclose(returns, batch.reward.sum(0), rtol=1e-6)


def zero_action_ant(obs):
    return np.zeros((len(obs), 8))
