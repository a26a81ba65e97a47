"""Imagined rollouts (algorithm.md §4): reward mixing, the bonuses, member draws, termination, member returns."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from policy_toys import POINT_MASS, sink_predict, toy_model
from rp1 import envs
from rp1.core.errors import ConfigError
from rp1.core.normalizer import standardize
from rp1.dynamics import ensemble_init, predict_all
from rp1.imagination import (
    clip_action,
    imagine,
    make_imagination,
    member_returns,
    reward_variance_bonus,
    state_variance_bonus,
)
from rp1.policy import act_mean, policy_init

H, N, M = 6, 16, 5


@pytest.fixture(scope="module")
def cheetah():
    return envs.make("halfcheetah")[1]


@pytest.fixture(scope="module")
def ant():
    return envs.make("ant")[1]


@pytest.fixture(scope="module")
def setup(cheetah):
    """A real small ensemble (non-trivial normalisers), a policy and start states."""
    k_model, k_policy, k_obs = jax.random.split(jax.random.key(0), 3)
    model = ensemble_init(k_model, cheetah.obs_dim, cheetah.act_dim, M, (32, 32))
    model = model.replace(
        obs_norm=model.obs_norm.replace(
            mean=jnp.full(cheetah.obs_dim, 0.1), var=jnp.full(cheetah.obs_dim, 2.0)
        ),
        delta_norm=model.delta_norm.replace(var=jnp.full(cheetah.obs_dim, 0.3)),
    )
    policy = policy_init(k_policy, cheetah.obs_dim, cheetah.act_dim)
    start = jax.random.normal(k_obs, (N, cheetah.obs_dim))
    return model, policy, start


def run(setup, task, lam, bonus="reward", model=None):
    base, policy, start = setup
    model = base if model is None else model
    return imagine(
        make_imagination(task, horizon=H, bonus=bonus), model, policy, start, jax.random.key(1), lam
    )


def all_members_next(model, task, traj):
    """Every member's prediction at every imagined step, recomputed outside the scan: [H, M, N, d]."""
    return jnp.stack(
        [predict_all(model, traj.obs[t], clip_action(task, traj.act[t])) for t in range(H)]
    )


def test_lambda_zero_trains_on_the_drawn_members_task_reward(setup, cheetah):
    model = setup[0]
    traj, _ = run(setup, cheetah, 0.0)
    nxt = all_members_next(model, cheetah, traj)
    drawn = jnp.take_along_axis(nxt, traj.member[:, None, :, None], axis=1)[:, 0]  # [H, N, d]
    expected = cheetah.reward(drawn, clip_action(cheetah, traj.act))
    np.testing.assert_allclose(traj.reward, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(traj.task_reward, expected, rtol=1e-5, atol=1e-5)
    # moved to the drawn state
    np.testing.assert_allclose(traj.obs[1:], drawn[:-1], rtol=1e-5, atol=1e-5)


def test_lambda_one_trains_on_the_reward_variance_bonus(setup, cheetah):
    model = setup[0]
    traj, stats_ = run(setup, cheetah, 1.0)
    nxt = np.asarray(all_members_next(model, cheetah, traj))
    rewards = np.asarray(cheetah.reward(nxt, clip_action(cheetah, traj.act)[:, None]))  # [H, M, N]
    expected = np.std(rewards, axis=1, ddof=1)
    np.testing.assert_allclose(traj.reward, traj.bonus, rtol=1e-6)
    np.testing.assert_allclose(traj.bonus, expected, rtol=1e-4, atol=1e-6)
    assert float(stats_.bonus) == pytest.approx(expected.mean(), rel=1e-4)


def test_state_variance_bonus_is_summed_member_variance_of_normalised_states(setup, cheetah):
    model = setup[0]
    traj, _ = run(setup, cheetah, 1.0, bonus="state")
    # [H, M, N, d]
    z = np.asarray(standardize(model.obs_norm, all_members_next(model, cheetah, traj)))
    expected = z.var(axis=1).sum(-1)
    np.testing.assert_allclose(traj.reward, expected, rtol=1e-4, atol=1e-6)


def test_state_variance_bonus_is_not_capped_by_the_normaliser_clip():
    """Members predicting 20, 10, 0, −10, −20 standard deviations away: the bonus is their variance,
    (400 + 100 + 0 + 100 + 400) / 5 = 200, not 7.2 as after a ±3 clip (algorithm.md §4)."""
    model = toy_model([-20.0, -10.0, 0.0, 10.0, 20.0], obs_dim=1)
    policy = policy_init(jax.random.key(0), 1, 1)
    start = jnp.zeros((4, 1))
    imagination = make_imagination(POINT_MASS, horizon=1, bonus="state", predict=sink_predict)
    traj, _ = imagine(imagination, model, policy, start, jax.random.key(1), 1.0)
    np.testing.assert_allclose(traj.bonus[0], 200.0, rtol=1e-6)


def test_bonuses_by_hand():
    """Three members' rewards 1, 2, 6 (mean 3): the reward-variance bonus is the sample standard
    deviation, sqrt((4 + 1 + 9) / (M − 1)) = sqrt(7). Their normalised states (0, 1), (3, 1),
    (6, 4): the state-variance bonus sums the population variances, (9 + 0 + 9) / 3 + (1 + 1 + 4)
    / 3 = 8."""
    rewards = jnp.array([[1.0], [2.0], [6.0]])  # [M, N]
    states = jnp.array([[[0.0, 1.0]], [[3.0, 1.0]], [[6.0, 4.0]]])  # [M, N, obs_dim]
    np.testing.assert_allclose(reward_variance_bonus(rewards, states), [np.sqrt(7.0)], rtol=1e-6)
    np.testing.assert_allclose(state_variance_bonus(rewards, states), [8.0], rtol=1e-6)


def test_lambda_mixes_task_reward_and_bonus(setup, cheetah):
    traj, _ = run(setup, cheetah, 0.3)
    np.testing.assert_allclose(
        traj.reward, 0.7 * traj.task_reward + 0.3 * traj.bonus, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("bonus", ["reward", "state"])
def test_identical_members_give_zero_bonus(setup, cheetah, bonus):
    """No disagreement, no bonus: zero up to float32 rounding of the members' predictions. Members
    with one set of weights may still differ in their last bits (how XLA fuses and vectorises the
    batched members depends on its version and optimisation level: jaxlib 0.4.33 unoptimised gives
    one member's reward a last-bit difference), so the bound is a few float32 ulps of the largest
    reward; the bonuses of the real ensemble in `setup` are over ten thousand times larger."""
    model = setup[0]
    same = model.replace(
        params=jax.tree_util.tree_map(lambda p: jnp.broadcast_to(p[:1], p.shape), model.params)
    )
    traj, _ = run(setup, cheetah, 1.0, bonus=bonus, model=same)
    rounding = 4 * np.finfo(np.float32).eps * float(np.abs(traj.task_reward).max())
    np.testing.assert_allclose(traj.bonus, 0.0, atol=rounding)
    np.testing.assert_allclose(traj.reward, 0.0, atol=rounding)
    disagreeing, _ = run(setup, cheetah, 1.0, bonus=bonus)
    assert float(np.abs(disagreeing.bonus).min()) > 1e4 * rounding


def test_unknown_bonus_is_a_config_error(setup, cheetah):
    with pytest.raises(ConfigError, match="unknown bonus"):
        run(setup, cheetah, 0.5, bonus="entropy")


def test_member_draws_are_uniform_and_independent_across_rollouts(cheetah):
    """Member j lowers obs[0] by j, so the state itself reveals which member was followed."""
    steps, rollouts = 40, 250
    model = toy_model(np.arange(M), cheetah.obs_dim)
    policy = policy_init(jax.random.key(2), cheetah.obs_dim, cheetah.act_dim)
    start = jnp.zeros((rollouts, cheetah.obs_dim))
    traj, _ = imagine(
        make_imagination(cheetah, horizon=steps, predict=sink_predict),
        model,
        policy,
        start,
        jax.random.key(3),
        0.0,
    )
    member = np.asarray(traj.member)
    np.testing.assert_array_equal(-np.diff(np.asarray(traj.obs[:, :, 0]), axis=0), member[:-1])
    counts = np.bincount(member.ravel(), minlength=M)
    assert stats.chisquare(counts).pvalue > 1e-3
    pairs = np.bincount((M * member[:, :-1] + member[:, 1:]).ravel(), minlength=M * M)  # neighbours
    assert stats.chisquare(pairs).pvalue > 1e-3
    over_time = np.bincount((M * member[:-1] + member[1:]).ravel(), minlength=M * M)
    assert stats.chisquare(over_time).pvalue > 1e-3


def zero_action_policy(task):
    """A policy whose mean action is exactly 0 (last actor layer zeroed)."""
    policy = policy_init(jax.random.key(4), task.obs_dim, task.act_dim)
    w, b = policy.actor[-1]
    return policy.replace(actor=(*policy.actor[:-1], (jnp.zeros_like(w), jnp.zeros_like(b))))


def sinking_ant_start(task, rollouts):
    """Torso height 0.5 and forward velocity 1 m/s, everything else 0."""
    return jnp.zeros((rollouts, task.obs_dim)).at[:, 0].set(0.5).at[:, -1].set(1.0)


def test_termination_masks_every_reward_after_the_first_done(ant):
    """Member j lowers the torso by 0.04·(j+1) per step; Ant terminates below z = 0.2."""
    steps, rollouts = 12, 64
    model = toy_model(0.04 * (np.arange(M) + 1), ant.obs_dim)
    traj, stats_ = imagine(
        make_imagination(ant, horizon=steps, predict=sink_predict),
        model,
        policy_init(jax.random.key(5), ant.obs_dim, ant.act_dim),
        sinking_ant_start(ant, rollouts),
        jax.random.key(6),
        0.5,
    )
    # [H, N] as if never stopped
    z_next = 0.5 - np.cumsum(0.04 * (np.asarray(traj.member) + 1), axis=0)
    first = np.argmax(z_next < 0.2, axis=0)  # every rollout sinks within 12 steps
    assert np.all((z_next < 0.2).any(axis=0))
    t = np.arange(steps)[:, None]
    np.testing.assert_array_equal(traj.valid, t <= first)
    np.testing.assert_array_equal(traj.done, t == first)
    for field in (traj.reward, traj.task_reward, traj.bonus):
        assert np.all(np.asarray(field)[t > first] == 0.0)
    assert np.all(np.asarray(traj.task_reward)[t <= first] != 0.0)  # the terminating step counts
    assert np.all(np.isfinite(np.asarray(traj.obs)))
    assert float(stats_.length) == pytest.approx((first + 1).mean())


def test_member_returns_mask_after_termination_hand_computed(ant):
    """Zero actions, v_x = 1: each healthy step earns 2, the terminating step 1 (no healthy bonus)."""
    drops = np.array([0.045, 0.07, 0.11, 0.026, 0.0])  # no step lands on z = 0.2 exactly
    model = toy_model(drops, ant.obs_dim)
    returns = member_returns(
        make_imagination(ant, horizon=20, predict=sink_predict),
        model,
        zero_action_policy(ant),
        sinking_ant_start(ant, 3),
    )
    expected = []
    for d in drops:
        z = 0.5 - d * np.arange(1, 21, dtype=np.float32)
        below = np.flatnonzero(z < 0.2)
        expected.append(2.0 * below[0] + 1.0 if below.size else 40.0)
    np.testing.assert_allclose(returns, expected, rtol=1e-6)


def test_member_returns_follow_each_member_alone(setup, cheetah):
    model, policy, start = setup
    returns = member_returns(make_imagination(cheetah, horizon=H), model, policy, start)
    expected = []
    for j in range(M):
        obs, total = start, 0.0
        for _ in range(H):
            act = clip_action(cheetah, act_mean(policy, model.obs_norm, obs))
            obs = predict_all(model, obs, act)[j]
            total = total + cheetah.reward(obs, act)
        expected.append(float(total.mean()))
    np.testing.assert_allclose(returns, expected, rtol=1e-4, atol=1e-4)


def test_changing_lambda_does_not_recompile(setup, cheetah):
    run(setup, cheetah, 0.1)
    compiled = imagine._cache_size()
    traj, _ = run(setup, cheetah, 0.9)
    assert imagine._cache_size() == compiled
    np.testing.assert_allclose(
        traj.reward, 0.1 * traj.task_reward + 0.9 * traj.bonus, rtol=1e-5, atol=1e-6
    )
