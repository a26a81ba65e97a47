"""Training the policy inside the model with ME-TRPO's stop rule (SPEC §4).

One policy update = imagine a batch, one PPO update, and (from update ``first_check`` on) the stop
rule's check: the deterministic policy's return in every member separately. The update
*improved* if in more than 70% of members the return beats that member's best so far; then the
per-member bests become the element-wise maximum and the policy is kept as the best. Training stops
when, over the last 6 checks, the oldest improved and the 5 later did not, or after
``max_updates``; the best weights are restored (the optimiser state continues as it is), or, with
``restore_best=False``, the last weights are kept (what the authors' code did in effect).

The stop rule is a pure pytree (:class:`StopRule`) with pure functions (:func:`stop_rule_init`,
:func:`stop_rule_update`, :func:`restore_best`), testable on scripted improvement flags. Each
update is one jitted call (:func:`train_step`); the host loop in :func:`train_policy` only reads
the stop flag.

Example::

    opt_state = make_policy_optimizer().init(policy)
    policy, opt_state, info = train_policy(model, policy, opt_state, start_obs, key, 0.2, task=task)
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rp1.dynamics.ensemble import predict_all
from rp1.envs.task import Task
from rp1.errors import ConfigError
from rp1.imagination.rollouts import BONUS, imagine, member_count, member_returns
from rp1.policy.networks import DEFAULT_ACTION_STD, Policy
from rp1.policy.ppo import ADVANTAGE, EPOCHS, ppo_update

MAX_UPDATES = 200
FIRST_CHECK = 11
IMPROVE_SHARE = 0.7
STOP_WINDOW = 6
BATCH_STEPS = 50_000


@struct.dataclass
class StopRule:
    """State of ME-TRPO's stop rule over ``M`` members."""

    best_returns: jax.Array  # [M] best return of each member so far (−inf before any check)
    recent: jax.Array  # [window] bool, improvement flags of the last checks, oldest first
    checks: jax.Array  # [] int, checks made
    best_policy: Policy  # weights saved at the last improving check
    stop: jax.Array  # [] bool, the rule says stop


def stop_rule_init(policy: Policy, members: int, window: int = STOP_WINDOW) -> StopRule:
    """No checks yet; bests at −inf, so the first finite check always improves."""
    return StopRule(
        best_returns=jnp.full((members,), -jnp.inf),
        recent=jnp.zeros((window,), bool),
        checks=jnp.zeros((), jnp.int32),
        best_policy=policy,
        stop=jnp.zeros((), bool),
    )


def improved(best_returns: jax.Array, returns: jax.Array, share: float = IMPROVE_SHARE) -> jax.Array:
    """True when in more than ``share`` of the members ``returns [M]`` beats ``best_returns [M]``."""
    return (returns > best_returns).mean() > share


def stop_rule_update(
    rule: StopRule, improvement: jax.Array, returns: jax.Array, policy: Policy
) -> StopRule:
    """Record one check with flag ``improvement`` (see :func:`improved`) of ``policy`` whose member
    returns are ``returns [M]``. On improvement the bests become ``max(best, returns)`` and
    ``policy`` is saved. ``stop`` is set when the oldest flag of the window is True and all later
    ones are False (the window starts all False, so never before ``window`` checks)."""
    keep = lambda new, old: jnp.where(improvement, new, old)  # noqa: E731
    recent = jnp.append(rule.recent[1:], improvement)
    return StopRule(
        best_returns=keep(jnp.maximum(rule.best_returns, returns), rule.best_returns),
        recent=recent,
        checks=rule.checks + 1,
        best_policy=jax.tree_util.tree_map(keep, policy, rule.best_policy),
        stop=recent[0] & ~recent[1:].any(),
    )


def restore_best(rule: StopRule, policy: Policy) -> Policy:
    """The saved best weights, or ``policy`` itself if no check was ever made."""
    return jax.tree_util.tree_map(lambda b, p: jnp.where(rule.checks > 0, b, p), rule.best_policy, policy)


@struct.dataclass
class TrainState:
    """Everything one policy update reads and writes."""

    policy: Policy
    opt_state: optax.OptState
    rule: StopRule
    key: jax.Array
    updates: jax.Array  # [] int, updates done


class StepMetrics(NamedTuple):
    """Scalars of one update."""

    imagined_return: jax.Array  # mean r_sel return per imagined rollout (before the update)
    bonus: jax.Array  # mean bonus per valid imagined step
    loss: jax.Array  # PPO loss, mean over epochs


class TrainInfo(NamedTuple):
    """Host-side summary of :func:`train_policy` (plain Python numbers)."""

    updates: int  # PPO updates made
    stopped: bool  # the stop rule ended training (False: ``max_updates`` reached)
    model_return: float  # mean over members of the returned policy's deterministic return
    imagined_return: float  # last update's mean imagined task return per rollout
    bonus: float  # last update's mean bonus per valid step
    loss: float  # last update's PPO loss


@partial(jax.jit, static_argnames=("task", "horizon", "bonus", "predict", "epochs", "reward", "done", "advantage"))
def train_step(
    state: TrainState,
    model,
    start_obs: jax.Array,
    lam: jax.Array | float,
    first_check: jax.Array | int,
    action_std: jax.Array | float,
    *,
    task: Task,
    horizon: int,
    bonus: str,
    predict=predict_all,
    epochs: int = EPOCHS,
    reward: str = "known",
    done: str = "known",
    advantage: str = ADVANTAGE,
) -> tuple[TrainState, StepMetrics]:
    """One update: imagine from ``start_obs [N, obs_dim]``, a PPO update, and (when the update's
    1-based number is ≥ ``first_check``) a stop-rule check with :func:`~rp1.imagination.rollouts.member_returns`.
    ``reward`` / ``done``: the task's functions or the model's heads
    (:func:`~rp1.imagination.rollouts.outcomes`)."""
    key, k_imagine = jax.random.split(state.key)
    obs_norm = model.obs_norm
    traj, stats = imagine(
        model,
        state.policy,
        obs_norm,
        start_obs,
        k_imagine,
        lam,
        task=task,
        horizon=horizon,
        bonus=bonus,
        action_std=action_std,
        predict=predict,
        reward=reward,
        done=done,
    )
    policy, opt_state, ppo = ppo_update(
        state.policy, state.opt_state, traj, obs_norm, epochs=epochs, action_std=action_std, advantage=advantage
    )
    updates = state.updates + 1

    def check(rule: StopRule) -> StopRule:
        returns = member_returns(
            model, policy, obs_norm, start_obs, task=task, horizon=horizon, predict=predict,
            reward=reward, done=done,
        )
        return stop_rule_update(rule, improved(rule.best_returns, returns), returns, policy)

    rule = jax.lax.cond(updates >= first_check, check, lambda r: r, state.rule)
    new_state = TrainState(policy=policy, opt_state=opt_state, rule=rule, key=key, updates=updates)
    return new_state, StepMetrics(stats.model_return, stats.bonus, ppo.loss)


def train_policy(
    model,
    policy: Policy,
    opt_state: optax.OptState,
    start_obs: jax.Array,
    key: jax.Array,
    lam: float,
    *,
    task: Task,
    bonus: str = BONUS,
    batch_steps: int = BATCH_STEPS,
    max_updates: int = MAX_UPDATES,
    first_check: int = FIRST_CHECK,
    action_std: float = DEFAULT_ACTION_STD,
    predict=predict_all,
    epochs: int = EPOCHS,
    reward: str = "known",
    done: str = "known",
    advantage: str = ADVANTAGE,
    restore: bool = True,
) -> tuple[Policy, optax.OptState, TrainInfo]:
    """Train ``policy`` in ``model`` with exploration weight ``lam`` until the stop rule fires (SPEC §4).

    ``N = batch_steps // task.horizon`` rollouts start from the first ``N`` rows of
    ``start_obs [≥N, obs_dim]`` (real initial observations drawn once per run). The policy is
    normalised with ``model.obs_norm``. ``reward`` / ``done``: ``"known"`` (the task's functions) or
    ``"learned"`` (the model's heads, :func:`~rp1.imagination.rollouts.outcomes`). ``advantage``:
    see :func:`~rp1.policy.ppo.ppo_update`. Raises ``ConfigError`` for too few start observations
    or ``max_updates < 1``. Returns the best policy (restored; with ``restore=False`` the policy
    after the last update), the optimiser state after the last update, and a :class:`TrainInfo`.
    """
    n = batch_steps // task.horizon
    if n < 1 or start_obs.shape[0] < n:
        raise ConfigError(
            f"batch_steps // horizon = {n} rollouts need as many start observations (≥ 1); "
            f"got {start_obs.shape[0]}"
        )
    if max_updates < 1:
        raise ConfigError(f"max_updates must be ≥ 1, got {max_updates}")
    start = jnp.asarray(start_obs[:n])
    members = member_count(model)
    state = TrainState(policy, opt_state, stop_rule_init(policy, members), key, jnp.zeros((), jnp.int32))
    outcome = {"reward": reward, "done": done}
    step = partial(
        train_step, task=task, horizon=task.horizon, bonus=bonus, predict=predict, epochs=epochs,
        advantage=advantage, **outcome
    )
    for _ in range(max_updates):
        state, metrics = step(state, model, start, lam, first_check, action_std)
        if bool(state.rule.stop):
            break
    best = restore_best(state.rule, state.policy) if restore else state.policy
    returns = member_returns(
        model, best, model.obs_norm, start, task=task, horizon=task.horizon, predict=predict, **outcome
    )
    info = TrainInfo(
        updates=int(state.updates),
        stopped=bool(state.rule.stop),
        model_return=float(returns.mean()),
        imagined_return=float(metrics.imagined_return),
        bonus=float(metrics.bonus),
        loss=float(metrics.loss),
    )
    return best, state.opt_state, info
