"""PPO as in the paper's appendix: Monte-Carlo returns, no GAE, full-batch epochs (algorithm.md §4).

Pure functions over ``[H, N]`` batches (time, rollout):

- :func:`discounted_returns` — ``G_t = r_t + γ·(1 − done_t)·G_{t+1}`` (a reverse ``lax.scan``);
- :func:`normalize_returns` — returns standardised over the valid steps of the batch;
- :func:`ppo_loss` — ``−clipped surrogate (ε) + 0.5·MSE(V, R̂) − 0.01·entropy`` with advantage
  ``A = R̂ − V_old(s)`` (``R̂`` the normalised return, ``V_old`` the critic before the update);
- :func:`ppo_update` — ``epochs`` full-batch Adam steps (a ``lax.scan``), one jitted call, with
  the hyperparameters of a :class:`PPOSettings`; advantage ``"per-epoch"`` recomputes
  ``A = R̂ − V(s)`` with the current critic before every epoch (the authors' code) instead of once
  per update (``"fixed"``, the original PPO; algorithm.md §4), :data:`ADVANTAGES`;
- :func:`ppo_summary` — the diagnostics of a run of updates as named numbers (``ppo_<metric>_mean``
  and ``_last``), the columns a run writes.

Example::

    opt_state = make_policy_optimizer().init(policy)
    policy, opt_state, metrics = ppo_update(policy, opt_state, traj, model.obs_norm, 0.5)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import optax

from rp1.config.defaults import ADVANTAGE, EPOCHS, Advantage
from rp1.config.defaults import PPO_LEARNING_RATE as LEARNING_RATE
from rp1.core.normalizer import Normalizer
from rp1.policy.networks import (
    DEFAULT_ACTION_STD,
    Policy,
    act_mean,
    gaussian_entropy,
    gaussian_log_prob,
    value,
)

ADAM_BETAS = (0.9, 0.999)
GAMMA = 0.99
CLIP_EPS = 0.2
VALUE_COEF = 0.5
ENTROPY_COEF = 0.01
RETURN_STD_EPS = 1e-8


class Rollouts(Protocol):
    """What :func:`make_batch` reads of a batch of rollouts, fields with leading ``[H, N]``: an
    imagined :class:`~rp1.imagination.Trajectory` or real :class:`~rp1.realenv.Episodes` (NumPy
    arrays, JAX arrays inside :func:`ppo_update`)."""

    @property
    def obs(self) -> jax.Array: ...
    @property
    def act(self) -> jax.Array: ...
    @property
    def logp(self) -> jax.Array: ...
    @property
    def reward(self) -> jax.Array: ...
    @property
    def done(self) -> jax.Array: ...
    @property
    def valid(self) -> jax.Array: ...


class PPOBatch(NamedTuple):
    """A flattened batch of ``B = H·N`` steps with fixed targets."""

    obs: jax.Array  # [B, obs_dim]
    act: jax.Array  # [B, act_dim] sampled (unclipped) action
    logp: jax.Array  # [B] behaviour log-probability
    ret: jax.Array  # [B] normalised discounted return R̂ (value target)
    adv: jax.Array  # [B] advantage R̂ − V_old(s)
    weight: jax.Array  # [B] 1.0 for valid steps, 0.0 for steps after termination


class PPOMetrics(NamedTuple):
    """Diagnostics of :func:`ppo_loss` (scalars); :func:`ppo_update` averages each over the epochs
    of one update, every epoch's taken with the parameters as it starts. Losses are in the units of
    the normalised return ``R̂`` (value loss: its square)."""

    loss: jax.Array  # the minimised total
    policy_loss: jax.Array  # −clipped surrogate
    value_loss: jax.Array  # E[(V − R̂)²]
    entropy: jax.Array  # of the Gaussian policy, nats
    approx_kl: jax.Array  # E[logp_old − logp_new] over valid steps, nats
    clip_fraction: jax.Array  # share of valid steps with |ratio − 1| > ε
    explained_variance: jax.Array  # of R̂ by V: 1 − Var(R̂ − V) / Var(R̂) (NaN where Var(R̂) = 0)


def make_policy_optimizer(learning_rate: float = LEARNING_RATE) -> optax.GradientTransformation:
    """Adam with ``β = (0.9, 0.999)`` (algorithm.md §9). The learning rate lives in the optimiser state
    (``optax.inject_hyperparams``), so :func:`ppo_update` needs no optimiser argument and changing
    it does not recompile."""
    b1, b2 = ADAM_BETAS
    return optax.inject_hyperparams(optax.adam)(learning_rate=learning_rate, b1=b1, b2=b2)


def discounted_returns(reward: jax.Array, done: jax.Array, gamma: float = GAMMA) -> jax.Array:
    """Monte-Carlo returns ``G_t = r_t + γ·(1 − done_t)·G_{t+1}``, ``G_H = 0``; ``[H, N] -> [H, N]``.

    ``done_t`` True means the episode ended with step ``t``'s reward, so nothing after it is
    discounted back (the reset at termination).
    """

    def back(g_next: jax.Array, step: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        r, d = step
        g = r + gamma * jnp.where(d, 0.0, g_next)
        return g, g

    _, returns = jax.lax.scan(back, jnp.zeros(reward.shape[1:]), (reward, done), reverse=True)
    return returns


def normalize_returns(returns: jax.Array, valid: jax.Array) -> jax.Array:
    """``(G − mean) / (std + 1e-8)`` with mean and std over the entries where ``valid``; same shape."""
    w = valid.astype(returns.dtype)
    count = jnp.maximum(w.sum(), 1.0)
    mean = (w * returns).sum() / count
    std = jnp.sqrt((w * (returns - mean) ** 2).sum() / count)
    return (returns - mean) / (std + RETURN_STD_EPS)


def make_batch(
    policy: Policy, obs_norm: Normalizer, traj: Rollouts, gamma: float = GAMMA
) -> PPOBatch:
    """Targets for one update from a batch of rollouts with fields ``obs, act, logp, reward, done,
    valid`` with leading ``[H, N]`` (an imagined :class:`~rp1.imagination.Trajectory` or real
    :class:`~rp1.realenv.Episodes`): normalised returns and advantages under the current critic."""
    ret = normalize_returns(discounted_returns(traj.reward, traj.done, gamma), traj.valid)
    flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
    batch = PPOBatch(
        obs=flat(traj.obs),
        act=flat(traj.act),
        logp=flat(traj.logp),
        ret=flat(ret),
        adv=flat(ret),
        weight=flat(traj.valid.astype(ret.dtype)),
    )
    return with_advantage(policy, obs_norm, batch)


def with_advantage(policy: Policy, obs_norm: Normalizer, batch: PPOBatch) -> PPOBatch:
    """``batch`` with ``adv = ret − V(obs)`` under ``policy``'s critic. :func:`ppo_update`
    differentiates :func:`ppo_loss` in its ``policy`` argument only, so the advantage is a constant
    of the loss, also when recomputed each epoch."""
    return batch._replace(adv=batch.ret - value(policy, obs_norm, batch.obs))


def fixed_advantage(policy: Policy, obs_norm: Normalizer, batch: PPOBatch) -> PPOBatch:
    """Advantage ``"fixed"``: ``batch`` as it is, its advantage under the critic before the
    update (:func:`make_batch`)."""
    return batch


AdvantageRule = Callable[[Policy, Normalizer, PPOBatch], PPOBatch]
"""An epoch's targets from the update's ``batch`` under the epoch's ``(policy, obs_norm)``."""
ADVANTAGES: dict[Advantage, AdvantageRule] = {
    "fixed": fixed_advantage,
    "per-epoch": with_advantage,
}
"""The advantage rule each value of ``policy.advantage`` selects."""


@dataclass(frozen=True)
class PPOSettings:
    """PPO's hyperparameters (algorithm.md §4, §9), static: compiled into :func:`ppo_update` as
    constants. ``advantage``: the epoch's targets, one of :data:`ADVANTAGES`. Ranges are the
    config's (:class:`~rp1.config.schema.PolicyConfig`)."""

    epochs: int = EPOCHS
    advantage: AdvantageRule = ADVANTAGES[ADVANTAGE]
    gamma: float = GAMMA
    clip_eps: float = CLIP_EPS
    value_coef: float = VALUE_COEF
    entropy_coef: float = ENTROPY_COEF


def explained_variance(target: jax.Array, prediction: jax.Array, weight: jax.Array) -> jax.Array:
    """``1 − Var(target − prediction) / Var(target)`` with variances over the steps weighted by
    ``weight`` (``[B]`` each, ``weight`` 1 for valid steps, 0 for others); NaN where
    ``Var(target) = 0``. 1: a perfect prediction; 0: no better than the mean; below 0: worse."""
    mean_w = lambda x: (weight * x).sum() / jnp.maximum(weight.sum(), 1.0)  # noqa: E731
    var_w = lambda x: mean_w((x - mean_w(x)) ** 2)  # noqa: E731
    var_target = var_w(target)
    return jnp.where(var_target > 0, 1 - var_w(target - prediction) / var_target, jnp.nan)


def ppo_loss(
    policy: Policy,
    obs_norm: Normalizer,
    batch: PPOBatch,
    action_std: jax.Array | float = DEFAULT_ACTION_STD,
    *,
    clip_eps: float = CLIP_EPS,
    value_coef: float = VALUE_COEF,
    entropy_coef: float = ENTROPY_COEF,
) -> tuple[jax.Array, PPOMetrics]:
    """``−E[min(ρ·A, clip(ρ, 1 ± ε)·A)] + 0.5·E[(V − R̂)²] − 0.01·H[π]`` over valid steps.

    ``ρ = π(a|s) / π_old(a|s)``; expectations are means weighted by ``batch.weight``. The entropy of
    the fixed-std Gaussian does not depend on the parameters; it is kept for the logged loss.
    Returns ``(loss, metrics)`` (scalars).
    """
    mean_w = lambda x: (batch.weight * x).sum() / jnp.maximum(batch.weight.sum(), 1.0)  # noqa: E731
    logp = gaussian_log_prob(act_mean(policy, obs_norm, batch.obs), action_std, batch.act)
    ratio = jnp.exp(logp - batch.logp)
    surrogate = jnp.minimum(
        ratio * batch.adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * batch.adv
    )
    policy_loss = -mean_w(surrogate)
    v = value(policy, obs_norm, batch.obs)
    value_loss = mean_w((v - batch.ret) ** 2)
    entropy = gaussian_entropy(action_std, batch.act.shape[-1])
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy
    metrics = PPOMetrics(
        loss=loss,
        policy_loss=policy_loss,
        value_loss=value_loss,
        entropy=entropy,
        approx_kl=mean_w(batch.logp - logp),
        clip_fraction=mean_w((jnp.abs(ratio - 1) > clip_eps).astype(ratio.dtype)),
        explained_variance=explained_variance(batch.ret, v, batch.weight),
    )
    return loss, metrics


@partial(jax.jit, static_argnames=("settings",))
def ppo_update(
    policy: Policy,
    opt_state: optax.OptState,
    traj: Rollouts,
    obs_norm: Normalizer,
    action_std: jax.Array | float = DEFAULT_ACTION_STD,
    settings: PPOSettings = PPOSettings(),
) -> tuple[Policy, optax.OptState, PPOMetrics]:
    """One PPO update: targets from ``traj`` ([H, N] trajectory, see :func:`make_batch`), then
    ``settings.epochs`` full-batch Adam steps on :func:`ppo_loss` (one ``lax.scan``); each epoch's
    diagnostics come from a forward pass of their own, which leaves the update's arithmetic as it
    is without them. ``opt_state`` comes from :func:`make_policy_optimizer`. ``settings.advantage``
    gives each epoch's targets (:data:`ADVANTAGES`). Returns
    ``(policy, opt_state, metrics averaged over epochs)``.
    """
    batch = make_batch(policy, obs_norm, traj, settings.gamma)
    loss_fn = partial(
        ppo_loss,
        obs_norm=obs_norm,
        action_std=action_std,
        clip_eps=settings.clip_eps,
        value_coef=settings.value_coef,
        entropy_coef=settings.entropy_coef,
    )
    optimizer = make_policy_optimizer()  # its update reads the learning rate from opt_state

    def epoch(
        carry: tuple[Policy, optax.OptState], _xs: None
    ) -> tuple[tuple[Policy, optax.OptState], PPOMetrics]:
        params, state = carry
        targets = settings.advantage(params, obs_norm, batch)
        grads, _ = jax.grad(loss_fn, has_aux=True)(params, batch=targets)
        # The diagnostics: a second forward pass behind an optimization barrier, so that XLA cannot
        # fuse their reductions with the gradient's (taken from the gradient's aux, they would
        # change how the update compiles, and with it the last bits of the update).
        seen_params, seen_targets = jax.lax.optimization_barrier((params, targets))
        _, metrics = loss_fn(seen_params, batch=seen_targets)
        updates, state = optimizer.update(grads, state, params)
        return (optax.apply_updates(params, updates), state), metrics

    (policy, opt_state), metrics = jax.lax.scan(
        epoch, (policy, opt_state), None, length=settings.epochs
    )
    return policy, opt_state, jax.tree_util.tree_map(jnp.mean, metrics)


def ppo_summary(updates: PPOMetrics) -> dict[str, float]:
    """The diagnostics of a run of PPO updates as named numbers, one pair per field ``f`` of
    :class:`PPOMetrics`: ``ppo_<f>_mean``, the mean over the updates (float64), and
    ``ppo_<f>_last``, the last update's. ``updates``: each field the updates' values in order
    ``[U]`` (``U ≥ 1``), or one update's scalars as :func:`ppo_update` returns them. One transfer
    from the device for all of them."""
    fields = jax.device_get(tuple(updates))
    values = np.stack([np.atleast_1d(np.asarray(f, np.float64)) for f in fields], 1)  # [U, fields]
    summary = {}
    for name, column in zip(PPOMetrics._fields, values.T, strict=True):
        summary[f"ppo_{name}_mean"], summary[f"ppo_{name}_last"] = (
            float(column.mean()),
            float(column[-1]),
        )
    return summary
