"""The real-environment module: unseeded episodes follow the environments' own streams (and resume
from their states), collection phases respect the cap and the action bounds and stop by the PCA
residual against all earlier episodes of the phase, evaluation sums each episode's rewards (algorithm.md
§5, §7)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from rp1.acquisition import pca_residual
from rp1.realenv import (
    STOP_BUDGET,
    STOP_CAP,
    STOP_PCA,
    UNSEEDED,
    CollectSettings,
    RealEnvs,
    collect,
    collect_phase,
    evaluate,
    mean_policy,
    noisy_policy,
)

SCRIPTED = "scripted_task:SCRIPTED"


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
    np.testing.assert_array_equal(
        first.obs, collect(other, mean_policy(zero_action), unseeded, max_steps=5).obs
    )
    saved = copy.deepcopy(real.generators())
    second = collect(real, mean_policy(zero_action), unseeded, max_steps=5)
    assert not np.array_equal(first.obs[0], second.obs[0])  # a new reset draw
    other.use_generators(saved)
    np.testing.assert_array_equal(
        second.obs, collect(other, mean_policy(zero_action), unseeded, max_steps=5).obs
    )
    other.close()


def test_phase_fills_the_cap_with_clipped_noisy_actions(real):
    """Each episode draws its noise std from U(0, 3) once, then N(0, std²) noise every step (algorithm.md
    §5), from the phase's generator in that order: replayed here."""
    phase = collect_phase(
        real,
        zero_action,
        np.random.default_rng(0),
        CollectSettings(cap=250, alpha=0.0, noise_max=3.0, share=0.99),
    )
    assert [len(e.rew) for e in phase.episodes] == [100, 100, 50] and phase.samples == 250
    acts = np.concatenate([e.act for e in phase.episodes])
    # noise up to std 3, clipped
    assert np.abs(acts).max() == 1.0 and np.isin(acts, (-1.0, 1.0)).mean() > 0.1
    assert phase.residual is None  # α = 0: no residual computed
    replay = np.random.default_rng(0)
    for episode in phase.episodes:
        std = replay.uniform(0.0, 3.0)
        noise = np.concatenate([replay.standard_normal((1, 6)) for _ in episode.rew])
        np.testing.assert_allclose(
            episode.act, np.clip(std * noise, -1.0, 1.0), rtol=1e-6, atol=1e-7
        )


def rows(phase):
    """Every episode's rows ``[s, a]`` of a phase."""
    return [np.concatenate([e.obs, e.act], axis=1) for e in phase.episodes]


def scripted_phase(alpha: float, cap: int = 40, budget: int | None = None):
    """A phase of the scripted task (see ``scripted_task``) under the zero action, no noise."""
    real = RealEnvs(SCRIPTED, 1)
    try:
        zero = lambda obs: np.zeros((len(obs), 1))  # noqa: E731
        return collect_phase(
            real,
            zero,
            np.random.default_rng(0),
            CollectSettings(cap=cap, alpha=alpha, noise_max=0.0, share=0.99),
            budget,
        )
    finally:
        real.close()


def test_phase_stops_at_the_first_episode_that_adds_nothing_to_all_earlier_ones():
    """Episode 1 (±e₂) is new against episode 0 (±e₁); episode 2 (±e₁, ±e₂) lies in the span of
    both, though half of it is new against episode 1 alone: the phase stops after it, with its
    residual against episodes 0 and 1 (algorithm.md §5)."""
    phase = scripted_phase(alpha=5e-4)
    assert [len(e.rew) for e in phase.episodes] == [4, 4, 4] and phase.samples == 12
    first, second, third = rows(phase)
    np.testing.assert_array_equal(first[:, 0], [1, -1, 1, -1])
    assert pca_residual(first, second) == pytest.approx(1.0)
    assert pca_residual(second, third) == pytest.approx(0.5)
    assert phase.residual == pca_residual(np.concatenate([first, second]), third)
    assert phase.residual == pytest.approx(0.0, abs=1e-12)


def test_phase_with_alpha_above_every_residual_stops_after_its_second_episode():
    """No residual reaches 1.5: the first episode is never tested, the second always stops the
    phase, and the residual is the second's against the first (here on HalfCheetah's own data)."""
    real = RealEnvs("halfcheetah", 1, seed=4)
    phase = collect_phase(
        real,
        zero_action,
        np.random.default_rng(1),
        CollectSettings(cap=3000, alpha=1.5, noise_max=3.0, share=0.99),
    )
    real.close()
    assert [len(e.rew) for e in phase.episodes] == [100, 100]
    first, second = rows(phase)
    assert phase.residual == pca_residual(first, second)
    assert scripted_phase(alpha=1.5).samples == 8


def test_phase_without_early_stopping_fills_its_cap():
    phase = scripted_phase(alpha=0.0, cap=22)
    assert [len(e.rew) for e in phase.episodes] == [4, 4, 4, 4, 4, 2] and phase.residual is None


@pytest.mark.parametrize(
    ("alpha", "cap", "budget", "samples", "stop"),
    [
        (5e-4, 40, None, 12, STOP_PCA),  # episode 2 adds nothing to episodes 0 and 1
        (5e-4, 12, 12, 12, STOP_PCA),  # ... also when it fills the cap and the budget
        (5e-4, 8, None, 8, STOP_CAP),  # the cap comes first
        (5e-4, 40, 6, 6, STOP_BUDGET),  # the budget comes first (episode 1, new, cut to 2 steps)
        (0.0, 22, 30, 22, STOP_CAP),  # no early stopping: the cap
        (0.0, 22, 22, 22, STOP_BUDGET),  # the budget with the cap: the run ends
    ],
)
def test_a_phase_says_why_it_stopped(alpha, cap, budget, samples, stop):
    """On the scripted task (``scripted_task``: residuals 1, then 0 at episode 2)."""
    phase = scripted_phase(alpha, cap, budget)
    assert (phase.samples, phase.stop) == (samples, stop)


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
