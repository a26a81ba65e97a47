"""The actor-critic and PPO (algorithm.md §4): log-probabilities, returns, loss, and learning on a toy model."""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from policy_toys import POINT_MASS, point_mass_predict, toy_model
from rp1.core.normalizer import normalizer_init, normalizer_update
from rp1.imagination import imagine, make_imagination
from rp1.policy import (
    PPOBatch,
    PPOMetrics,
    PPOSettings,
    act_mean,
    act_sample,
    discounted_returns,
    explained_variance,
    gaussian_log_prob,
    make_policy_optimizer,
    normalize_returns,
    policy_init,
    ppo_loss,
    ppo_summary,
    ppo_update,
    value,
)
from rp1.policy.ppo import ADVANTAGES as ADVANTAGE_RULES
from rp1.policy.ppo import make_batch

POINT_MASS_WORLD = make_imagination(POINT_MASS, predict=point_mass_predict)


def test_policy_shapes_bounds_and_log_prob():
    policy = policy_init(jax.random.key(0), 5, 3)
    norm = normalizer_init(5, 3.0)
    obs = 10 * jax.random.normal(jax.random.key(1), (7, 5))
    mean = act_mean(policy, norm, obs)
    assert mean.shape == (7, 3) and np.all(np.abs(np.asarray(mean)) <= 1.0)
    assert act_mean(policy, norm, obs[0]).shape == (3,)  # a single observation, for real env steps
    assert value(policy, norm, obs).shape == (7,)
    act, logp = act_sample(policy, norm, obs, jax.random.key(2), 0.5)
    z = (np.asarray(act) - np.asarray(mean)) / 0.5
    expected = (-0.5 * z**2 - math.log(0.5) - 0.5 * math.log(2 * math.pi)).sum(-1)
    np.testing.assert_allclose(logp, expected, rtol=1e-5)
    np.testing.assert_allclose(
        gaussian_log_prob(act_mean(policy, norm, obs), 0.5, act), logp, rtol=1e-5
    )
    assert np.std(np.asarray(act - mean)) == pytest.approx(0.5, rel=0.3)


def numpy_returns(reward, done, gamma):
    """Plain loop: G_t = r_t + γ·G_{t+1}, restarting after every termination."""
    out = np.zeros_like(reward)
    g = np.zeros(reward.shape[1])
    for t in reversed(range(reward.shape[0])):
        g = reward[t] + gamma * np.where(done[t], 0.0, g)
        out[t] = g
    return out


def test_discounted_returns_match_numpy_with_terminations():
    rng = np.random.default_rng(0)
    reward = rng.normal(size=(30, 8)).astype(np.float32)
    done = rng.random((30, 8)) < 0.1
    got = discounted_returns(jnp.asarray(reward), jnp.asarray(done), 0.99)
    np.testing.assert_allclose(got, numpy_returns(reward, done, 0.99), rtol=1e-5, atol=1e-5)


def test_returns_are_normalised_over_valid_steps_only():
    rng = np.random.default_rng(1)
    returns = rng.normal(3.0, 2.0, size=(10, 6)).astype(np.float32)
    valid = rng.random((10, 6)) < 0.7
    norm = np.asarray(normalize_returns(jnp.asarray(returns), jnp.asarray(valid)))
    assert norm[valid].mean() == pytest.approx(0.0, abs=1e-5)
    assert norm[valid].std() == pytest.approx(1.0, rel=1e-4)


def test_loss_at_the_behaviour_policy_is_hand_computable():
    """ρ = 1: policy loss −E[A], value loss E[(V − R̂)²], entropy of N(·, 0.5²) in 2 dims; invalid
    steps (weight 0) do not count."""
    policy = policy_init(jax.random.key(3), 4, 2)
    norm = normalizer_init(4)
    obs = jax.random.normal(jax.random.key(4), (6, 4))
    act, logp = act_sample(policy, norm, obs, jax.random.key(5), 0.5)
    adv = jnp.arange(6.0)
    ret = jnp.linspace(-1, 1, 6)
    weight = jnp.array([1.0, 1, 1, 1, 0, 0])
    loss, m = ppo_loss(policy, norm, PPOBatch(obs, act, logp, ret, adv, weight), 0.5)
    v = np.asarray(value(policy, norm, obs))[:4]
    entropy = 2 * (0.5 * math.log(2 * math.pi * math.e) + math.log(0.5))
    assert float(m.policy_loss) == pytest.approx(-1.5, rel=1e-5)
    assert float(m.value_loss) == pytest.approx(np.mean((v - np.asarray(ret)[:4]) ** 2), rel=1e-5)
    assert float(m.entropy) == pytest.approx(entropy, rel=1e-5)
    assert float(loss) == pytest.approx(-1.5 + 0.5 * float(m.value_loss) - 0.01 * entropy, rel=1e-5)
    assert float(m.clip_fraction) == 0.0


RATIOS = [0.5, 0.9, 1.1, 1.5] * 2
ADVANTAGES = [1.0] * 4 + [-1.0] * 4


def batch_at_ratios():
    """A PPO batch of 8 steps whose behaviour log-probabilities put the current policy at
    :data:`RATIOS` ρ of the behaviour policy, with advantages :data:`ADVANTAGES`:
    ``(policy, norm, batch)``."""
    policy = policy_init(jax.random.key(12), 4, 2)
    norm = normalizer_init(4)
    obs = jax.random.normal(jax.random.key(13), (8, 4))
    act, _ = act_sample(policy, norm, obs, jax.random.key(14), 0.5)
    behaviour = gaussian_log_prob(act_mean(policy, norm, obs), 0.5, act) - jnp.log(
        jnp.asarray(RATIOS)
    )
    return (
        policy,
        norm,
        PPOBatch(obs, act, behaviour, jnp.zeros(8), jnp.asarray(ADVANTAGES), jnp.ones(8)),
    )


@jax.jit
def surrogate_and_actor_gradient(policy, norm, batch):
    """The policy loss (no value or entropy term), its metrics and its gradient in the actor."""
    loss = lambda p: ppo_loss(p, norm, batch, 0.5, value_coef=0.0, entropy_coef=0.0)  # noqa: E731
    (_, metrics), grads = jax.value_and_grad(loss, has_aux=True)(policy)
    return metrics, jnp.concatenate([jnp.ravel(g) for g in jax.tree_util.tree_leaves(grads.actor)])


def test_clipped_surrogate_at_ratios_away_from_one_is_hand_computable():
    """ε = 0.2: min(ρ·A, clip(ρ, 0.8, 1.2)·A) per step. A = +1 at ρ = 0.5, 0.9, 1.1, 1.5 gives
    0.5, 0.9, 1.1, 1.2 (the gain above 1.2 is cut); A = −1 gives −0.8, −0.9, −1.1, −1.5 (the
    loss below 0.8 is kept at 0.8, above 1.2 counted in full)."""
    m, _ = surrogate_and_actor_gradient(*batch_at_ratios())
    surrogate = [0.5, 0.9, 1.1, 1.2, -0.8, -0.9, -1.1, -1.5]
    assert float(m.policy_loss) == pytest.approx(-sum(surrogate) / 8, rel=1e-4)
    assert float(m.clip_fraction) == 0.5  # ρ = 0.5 and 1.5
    assert float(m.approx_kl) == pytest.approx(np.mean(-np.log(RATIOS)), rel=1e-4)


def test_clipped_steps_give_no_gradient_and_the_others_do():
    """Where the clip is taken (A > 0 above 1 + ε, A < 0 below 1 − ε) the surrogate is a constant;
    where it is not (A < 0 above 1 + ε, A > 0 below 1 − ε, inside the band) it moves the policy.
    The steps are chosen by their weight."""
    policy, norm, batch = batch_at_ratios()
    only = lambda *steps: batch._replace(weight=jnp.zeros(8).at[jnp.asarray(steps)].set(1.0))  # noqa: E731
    _, clipped = surrogate_and_actor_gradient(policy, norm, only(3, 4))  # ρ 1.5, A +1; ρ 0.5, A −1
    assert np.all(np.asarray(clipped) == 0.0)
    for step in (7, 0, 2):  # ρ 1.5, A −1; ρ 0.5, A +1; ρ 1.1, A +1
        _, grad = surrogate_and_actor_gradient(policy, norm, only(step))
        assert np.abs(np.asarray(grad)).max() > 1e-4, step


class Rollouts(NamedTuple):
    """The fields of a batch of rollouts that :func:`make_batch` reads, ``[H, N, …]``."""

    obs: jax.Array
    act: jax.Array
    logp: jax.Array
    reward: jax.Array
    done: jax.Array
    valid: jax.Array


def constant_critic(policy, v: float):
    """``policy`` with a critic that says ``v`` everywhere (last layer: zero weights, bias ``v``)."""
    w, b = policy.critic[-1]
    return policy.replace(critic=(*policy.critic[:-1], (jnp.zeros_like(w), jnp.full_like(b, v))))


def test_make_batch_targets_are_normalised_returns_and_the_advantage_subtracts_the_critic():
    """γ = 0.5, H = 3, N = 2. Rollout 0 earns 1, 2, 4: returns 1 + 0.5·(2 + 0.5·4) = 3, 4, 4.
    Rollout 1 earns 2, 1 and terminates at its second step: returns 2 + 0.5·1 = 2.5, 1, and its
    third step is invalid. Over the 5 valid steps the mean is 2.9 and the variance 6.2 / 5 = 1.24:
    R̂ = (G − 2.9) / sqrt(1.24); with a critic that says 0.25 everywhere, A = R̂ − 0.25."""
    policy = constant_critic(policy_init(jax.random.key(15), 2, 1), 0.25)
    obs = jax.random.normal(jax.random.key(16), (3, 2, 2))
    act = jax.random.normal(jax.random.key(17), (3, 2, 1))
    logp = jnp.arange(6.0).reshape(3, 2)
    reward = jnp.array([[1.0, 2.0], [2.0, 1.0], [4.0, 0.0]])
    done = jnp.array([[False, False], [False, True], [False, False]])
    valid = jnp.array([[True, True], [True, True], [True, False]])
    batch = make_batch(
        policy, normalizer_init(2), Rollouts(obs, act, logp, reward, done, valid), gamma=0.5
    )
    returns = np.array([3.0, 2.5, 4.0, 1.0, 4.0, 0.0])  # flattened time-major: t·N + n
    normalised = (returns - 2.9) / math.sqrt(1.24)
    np.testing.assert_allclose(batch.ret[:5], normalised[:5], rtol=1e-5)
    np.testing.assert_allclose(batch.adv[:5], normalised[:5] - 0.25, rtol=1e-5, atol=1e-6)
    assert batch.weight.tolist() == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    np.testing.assert_array_equal(batch.obs, obs.reshape(6, 2))
    np.testing.assert_array_equal(batch.act, act.reshape(6, 1))
    np.testing.assert_array_equal(batch.logp, logp.reshape(6))


def test_explained_variance_of_known_values():
    """Targets 1, 2, 3, 4 (a fifth step weighs nothing): variance 1.25. Predicting 1, 2, 3, 5
    leaves residuals 0, 0, 0, −1, variance 0.25 − 0.0625 = 0.1875: 1 − 0.1875 / 1.25 = 0.85.
    A perfect prediction explains 1, the mean 0, a constant target nothing (NaN)."""
    target, weight = jnp.array([1.0, 2.0, 3.0, 4.0, 100.0]), jnp.array([1.0, 1.0, 1.0, 1.0, 0.0])
    assert float(
        explained_variance(target, jnp.array([1.0, 2.0, 3.0, 5.0, -7.0]), weight)
    ) == pytest.approx(0.85, rel=1e-6)
    assert float(explained_variance(target, target, weight)) == 1.0
    assert float(explained_variance(target, jnp.full(5, 2.5), weight)) == pytest.approx(
        0.0, abs=1e-7
    )
    assert np.isnan(float(explained_variance(jnp.ones(5), target, weight)))


def test_ppo_loss_reports_its_critics_explained_variance():
    """A critic that says 0.25 everywhere explains none of the returns' variance."""
    policy = constant_critic(policy_init(jax.random.key(18), 3, 2), 0.25)
    obs, act = jax.random.normal(jax.random.key(19), (6, 3)), jnp.zeros((6, 2))
    batch = PPOBatch(obs, act, jnp.zeros(6), jnp.linspace(-1, 1, 6), jnp.zeros(6), jnp.ones(6))
    _, m = ppo_loss(policy, normalizer_init(3), batch, 0.5)
    assert float(m.explained_variance) == pytest.approx(0.0, abs=1e-6)


def test_ppo_summary_is_the_mean_over_updates_and_the_last_update():
    """Two updates whose every diagnostic is 1 and 4 (the second 3 and 0 for the clip fraction):
    the means 2.5 (1.5), the last 4 (0), for every field, in float64; one update's scalars are
    its own mean and last."""
    first = PPOMetrics(*[jnp.float32(1.0)] * 5, jnp.float32(3.0), jnp.float32(1.0))
    second = PPOMetrics(*[jnp.float32(4.0)] * 5, jnp.float32(0.0), jnp.float32(4.0))
    summary = ppo_summary(jax.tree_util.tree_map(lambda *u: jnp.stack(u), first, second))
    assert list(summary) == [
        f"ppo_{name}_{which}" for name in PPOMetrics._fields for which in ("mean", "last")
    ]
    assert summary["ppo_approx_kl_mean"] == 2.5 and summary["ppo_approx_kl_last"] == 4.0
    assert summary["ppo_clip_fraction_mean"] == 1.5 and summary["ppo_clip_fraction_last"] == 0.0
    assert summary["ppo_explained_variance_mean"] == 2.5 and summary["ppo_entropy_last"] == 4.0
    assert ppo_summary(first) == {**{f"ppo_{n}_mean": float(v) for n, v in zip(PPOMetrics._fields, first, strict=True)},
                                    **{f"ppo_{n}_last": float(v) for n, v in zip(PPOMetrics._fields, first, strict=True)}}  # fmt: skip


START_STATES = 16
"""The point-mass tests' start states (one shape: their programs compile once)."""


def test_optimizer_learning_rate_is_state_and_counts_epochs():
    """The learning rate is the optimizer's state, so another compiles nothing new (the advantage
    test below runs the same update at 1e-2)."""
    policy = policy_init(jax.random.key(6), 1, 1)
    opt_state = make_policy_optimizer(1e-3).init(policy)
    assert float(opt_state.hyperparams["learning_rate"]) == pytest.approx(1e-3)
    model = toy_model(np.ones(3), 1)
    start = jnp.zeros((START_STATES, 1))
    traj, _ = imagine(POINT_MASS_WORLD, model, policy, start, jax.random.key(7), 0.0)
    _, opt_state, metrics = ppo_update(
        policy, opt_state, traj, model.obs_norm, 0.5, PPOSettings(epochs=3)
    )
    assert int(opt_state.inner_state[0].count) == 3
    assert all(np.isfinite(np.asarray(x)) for x in metrics)


@jax.jit
def point_mass_iteration(policy, opt_state, model, key):
    """Imagine 64 point-mass rollouts, then one PPO update; returns the imagined task return."""
    traj, stats = imagine(POINT_MASS_WORLD, model, policy, jnp.zeros((64, 1)), key, 0.0)
    policy, opt_state, _ = ppo_update(policy, opt_state, traj, model.obs_norm)
    return policy, opt_state, stats.model_return


def test_ppo_raises_the_imagined_return_of_a_point_mass():
    """Reward = position, moves of 0.1·a per step for 10 steps: the best return is 5.5, a zero-mean
    policy's about 0."""
    model = toy_model(np.ones(3), 1)
    policy = policy_init(jax.random.key(8), 1, 1)
    opt_state = make_policy_optimizer().init(policy)
    returns = []
    for key in jax.random.split(jax.random.key(9), 30):
        policy, opt_state, ret = point_mass_iteration(policy, opt_state, model, key)
        returns.append(float(ret))
    assert abs(returns[0]) < 0.5
    assert np.mean(returns[-5:]) > 3.0, returns  # about 4 after 30 updates


def test_host_actor_matches_the_jitted_actor():
    from rp1.policy import act_mean, host_actor, policy_init

    key = jax.random.PRNGKey(3)
    policy = policy_init(key, 5, 2, hidden=(16, 16))
    # saturate some
    policy = policy.replace(actor=jax.tree_util.tree_map(lambda p: p * 50, policy.actor))
    obs = np.random.default_rng(0).normal(size=(64, 5)) * 4
    norm = normalizer_update(normalizer_init(5, clip=3.0), obs[:32])
    want = np.asarray(act_mean(policy, norm, obs))
    got = host_actor(policy, norm)(obs)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host_actor(policy, norm)(obs[0]), want[0], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("advantage", ["fixed", "per-epoch"])
def test_advantage_is_fixed_per_update_or_recomputed_each_epoch(advantage):
    """algorithm.md §4: ``fixed`` trains every epoch on A = R̂ − V_old(s) from the critic before the
    update; ``per-epoch`` (the reference) recomputes A with the critic as each epoch starts. The
    update must equal that replayed by hand, epoch by epoch, and the advantages of per-epoch move
    with the critic."""
    model = toy_model(np.ones(3), 1)
    policy = policy_init(jax.random.key(10), 1, 1)
    optimizer = make_policy_optimizer(1e-2)
    start = jnp.zeros((START_STATES, 1))
    traj, _ = imagine(POINT_MASS_WORLD, model, policy, start, jax.random.key(11), 0.0)
    settings = PPOSettings(epochs=3, advantage=ADVANTAGE_RULES[advantage])
    got, _, _ = ppo_update(policy, optimizer.init(policy), traj, model.obs_norm, 0.5, settings)

    @jax.jit  # one program for the replayed epoch, not one per operation
    def epoch(params, state, batch):
        grads, _ = jax.grad(ppo_loss, has_aux=True)(params, model.obs_norm, batch, 0.5)
        updates, state = optimizer.update(grads, state, params)
        return jax.tree_util.tree_map(lambda p, u: p + u, params, updates), state

    batch = make_batch(policy, model.obs_norm, traj)
    params, state, advantages = policy, optimizer.init(policy), []
    for _ in range(3):
        if advantage == "per-epoch":
            batch = batch._replace(adv=batch.ret - value(params, model.obs_norm, batch.obs))
        advantages.append(np.asarray(batch.adv))
        params, state = epoch(params, state, batch)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=5e-5)  # the modes differ by ≈ 1e-2 here
    moved = np.abs(advantages[2] - advantages[0]).max()
    assert moved > 1e-4 if advantage == "per-epoch" else moved == 0.0
