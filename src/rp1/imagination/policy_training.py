"""Training the policy inside the model with ME-TRPO's stop rule (algorithm.md §4).

How the policy is trained is one frozen :class:`PolicyTraining` (the
:class:`~rp1.imagination.rollouts.Imagination`, PPO's settings, the batch size, the stop rule's
bounds, the action std and whether the best policy is restored), built once where the agent is set
up; :func:`make_train_step` returns its compiled update and :func:`train_policy` runs the updates.
Only a part of it is compiled: its :class:`PolicyStepSettings` (the imagination and PPO's
settings) and ``max_updates`` (the length of the updates' record), static arguments, one
compilation each. ``lam``, ``first_check`` and ``action_std`` are traced arguments;
``restore_best`` is read after the loop; ``batch_steps`` sets the number of rollouts, a shape. So
changing ``restore_best``, ``first_check``, ``action_std`` or λ reuses the compiled code (a new
``max_updates`` or ``batch_steps`` compiles it again).

One policy update = imagine a batch, one PPO update, and (from update ``first_check`` on) the stop
rule's check: the deterministic policy's return in every member separately. The update
*improved* if in more than 70% of members the return beats that member's best so far; then the
per-member bests become the element-wise maximum and the policy is kept as the best. Training stops
when, over the last 6 checks, the oldest improved and the 5 later did not, or after
``max_updates``; the best weights are restored (the optimiser state continues as it is), or, with
``restore_best=False``, the last weights are kept (what the authors' code did in effect).

The stop rule is a pure pytree (:class:`StopRuleState`) with pure functions (:func:`stop_rule_init`,
:func:`stop_rule_update`, :func:`restore_best`), testable on scripted improvement flags. All the
updates of a phase are one compiled ``lax.while_loop`` (:func:`train_updates`) whose condition is
the stop rule's flag, decided on the device; every update's PPO diagnostics stay there in a record
of ``max_updates`` rows, and :func:`train_policy` reads the outcome from the device once, at the
end (:class:`TrainInfo`). The loop's body is the update of :func:`make_train_step`, the same
operations in the same order: a policy trained in the loop is, bit for bit, the one that the
update called once per step from the host gives.

Example::

    training = PolicyTraining(make_imagination(task), batch_steps=5_000)
    opt_state = make_policy_optimizer().init(policy)
    policy, opt_state, info = train_policy(training, model, policy, opt_state, start_obs, key, 0.2)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from rp1.config.defaults import BATCH_STEPS, FIRST_CHECK, MAX_UPDATES
from rp1.core.errors import ConfigError
from rp1.core.nn import member_count
from rp1.imagination.rollouts import Imagination, WorldModel, imagine, member_returns
from rp1.policy.networks import DEFAULT_ACTION_STD, Policy
from rp1.policy.ppo import PPOMetrics, PPOSettings, ppo_summary, ppo_update

IMPROVE_SHARE = 0.7
STOP_WINDOW = 6


class StopRuleState(struct.PyTreeNode):
    """State of ME-TRPO's stop rule over ``M`` members."""

    best_returns: jax.Array  # [M] best return of each member so far (−inf before any check)
    recent: jax.Array  # [window] bool, improvement flags of the last checks, oldest first
    checks: jax.Array  # [] int, checks made
    best_policy: Policy  # weights saved at the last improving check
    stop: jax.Array  # [] bool, the rule says stop


def stop_rule_init(policy: Policy, members: int, window: int = STOP_WINDOW) -> StopRuleState:
    """No checks yet; bests at −inf, so the first finite check always improves."""
    return StopRuleState(
        best_returns=jnp.full((members,), -jnp.inf),
        recent=jnp.zeros((window,), bool),
        checks=jnp.zeros((), jnp.int32),
        best_policy=policy,
        stop=jnp.zeros((), bool),
    )


def improved(
    best_returns: jax.Array, returns: jax.Array, share: float = IMPROVE_SHARE
) -> jax.Array:
    """True when in more than ``share`` of the members ``returns [M]`` beats ``best_returns [M]``."""
    return (returns > best_returns).mean() > share


def stop_rule_update(
    rule: StopRuleState, improvement: jax.Array, returns: jax.Array, policy: Policy
) -> StopRuleState:
    """Record one check with flag ``improvement`` (see :func:`improved`) of ``policy`` whose member
    returns are ``returns [M]``. On improvement the bests become ``max(best, returns)`` and
    ``policy`` is saved. ``stop`` is set when the oldest flag of the window is True and all later
    ones are False (the window starts all False, so never before ``window`` checks)."""
    keep = lambda new, old: jnp.where(improvement, new, old)  # noqa: E731
    recent = jnp.append(rule.recent[1:], improvement)
    return StopRuleState(
        best_returns=keep(jnp.maximum(rule.best_returns, returns), rule.best_returns),
        recent=recent,
        checks=rule.checks + 1,
        best_policy=jax.tree_util.tree_map(keep, policy, rule.best_policy),
        stop=recent[0] & ~recent[1:].any(),
    )


def restore_best(rule: StopRuleState, policy: Policy) -> Policy:
    """The saved best weights, or ``policy`` itself if no check was ever made."""
    return jax.tree_util.tree_map(
        lambda b, p: jnp.where(rule.checks > 0, b, p), rule.best_policy, policy
    )


@dataclass(frozen=True)
class PolicyStepSettings:
    """What is compiled into one policy update (a static argument of its ``jax.jit``, hashable):
    ``imagination``, how rollouts are made, and ``ppo``, PPO's settings."""

    imagination: Imagination
    ppo: PPOSettings = PPOSettings()


@dataclass(frozen=True)
class PolicyTraining:
    """How the policy is trained in the model (algorithm.md §4), frozen.

    ``imagination``: how rollouts are made; ``ppo``: PPO's settings; ``batch_steps``: imagined
    steps per update (``batch_steps // horizon`` rollouts); ``max_updates``; ``first_check``: the
    1-based update from which the stop rule checks; ``action_std``: the policy's std while
    imagining; ``restore_best``: return the stop rule's best weights (else the last ones). The first
    two are compiled into the update (:attr:`step_settings`); the rest are not (module docstring).
    """

    imagination: Imagination
    ppo: PPOSettings = PPOSettings()
    batch_steps: int = BATCH_STEPS
    max_updates: int = MAX_UPDATES
    first_check: int = FIRST_CHECK
    action_std: float = DEFAULT_ACTION_STD
    restore_best: bool = True

    @property
    def rollouts(self) -> int:
        """``N = batch_steps // horizon``, the imagined rollouts per update."""
        return self.batch_steps // self.imagination.horizon

    @property
    def step_settings(self) -> PolicyStepSettings:
        """The settings compiled into the update."""
        return PolicyStepSettings(self.imagination, self.ppo)


class TrainState(struct.PyTreeNode):
    """Everything one policy update reads and writes."""

    policy: Policy
    opt_state: optax.OptState
    rule: StopRuleState
    key: jax.Array
    updates: jax.Array  # [] int, updates done


class StepMetrics(NamedTuple):
    """Scalars of one update."""

    imagined_return: jax.Array  # mean r_sel return per imagined rollout (before the update)
    bonus: jax.Array  # mean bonus per valid imagined step
    ppo: PPOMetrics  # the PPO update's diagnostics, means over its epochs


class TrainInfo(NamedTuple):
    """Host-side summary of :func:`train_policy` (plain Python numbers); :meth:`metrics` names them."""

    updates: int  # PPO updates made
    stopped: bool  # the stop rule ended training (False: ``max_updates`` reached)
    model_return: float  # mean over members of the returned policy's deterministic return
    # last update's mean imagined task return per rollout (Σ_t r_sel, before it)
    imagined_return: float
    bonus: float  # last update's mean bonus per valid step
    ppo: dict[str, float]  # the updates' PPO diagnostics (rp1.policy.ppo.ppo_summary)

    def metrics(self) -> dict[str, float]:
        """Every number of the summary by its metrics column: ``model_return``, ``bonus``,
        ``policy_updates``, ``policy_stopped_by_rule`` (1: the stop rule, 0: ``max_updates``),
        ``imagined_return`` and the ``ppo_*`` diagnostics."""
        return {
            "model_return": self.model_return,
            "bonus": self.bonus,
            "policy_updates": self.updates,
            "policy_stopped_by_rule": int(self.stopped),
            "imagined_return": self.imagined_return,
            **self.ppo,
        }


TrainStep = Callable[
    [TrainState, WorldModel, jax.Array, "jax.Array | float"], tuple[TrainState, StepMetrics]
]
"""``step(state, model, start_obs [N, obs_dim], lam) -> (state, metrics)``: one compiled update."""


@partial(jax.jit, static_argnums=0)
def _train_step(
    settings: PolicyStepSettings,
    state: TrainState,
    model: WorldModel,
    start_obs: jax.Array,
    lam: jax.Array | float,
    first_check: jax.Array | int,
    action_std: jax.Array | float,
) -> tuple[TrainState, StepMetrics]:
    """One update of :func:`make_train_step`, compiled once per ``settings`` (static) and argument
    shapes; ``lam``, ``first_check`` and ``action_std`` are traced, so changing them does not
    recompile."""
    imagination = settings.imagination
    key, k_imagine = jax.random.split(state.key)
    traj, stats = imagine(imagination, model, state.policy, start_obs, k_imagine, lam, action_std)
    policy, opt_state, ppo = ppo_update(
        state.policy, state.opt_state, traj, model.obs_norm, action_std, settings.ppo
    )
    updates = state.updates + 1

    def check(rule: StopRuleState) -> StopRuleState:
        returns = member_returns(imagination, model, policy, start_obs)
        return stop_rule_update(rule, improved(rule.best_returns, returns), returns, policy)

    rule = jax.lax.cond(updates >= first_check, check, lambda r: r, state.rule)
    new_state = TrainState(policy=policy, opt_state=opt_state, rule=rule, key=key, updates=updates)
    return new_state, StepMetrics(stats.model_return, stats.bonus, ppo)


def make_train_step(training: PolicyTraining) -> TrainStep:
    """The compiled policy update of ``training``, one call per update (the body of
    :func:`train_updates`, for replaying a training update by update): imagine from ``start_obs
    [N, obs_dim]``, one PPO update, and (when the update's 1-based number is ≥
    ``training.first_check``) a stop-rule check with
    :func:`~rp1.imagination.rollouts.member_returns`. One ``jax.jit`` cache entry per
    ``training.step_settings`` and shapes: a ``training`` that differs only in ``max_updates``,
    ``restore_best``, ``first_check`` or ``action_std`` reuses the compiled code."""
    return lambda state, model, start_obs, lam: _train_step(
        training.step_settings,
        state,
        model,
        start_obs,
        lam,
        training.first_check,
        training.action_std,
    )


@partial(jax.jit, static_argnums=(0, 1))
def train_updates(
    settings: PolicyStepSettings,
    max_updates: int,
    state: TrainState,
    model: WorldModel,
    start_obs: jax.Array,
    lam: jax.Array | float,
    first_check: jax.Array | int,
    action_std: jax.Array | float,
) -> tuple[TrainState, StepMetrics, PPOMetrics]:
    """Policy updates (:func:`make_train_step`'s, with these arguments) from ``state`` until the stop
    rule says stop or ``max_updates`` updates are done: one ``lax.while_loop``, compiled once per
    ``settings``, ``max_updates`` (static) and shapes. Returns the last state, the last update's
    metrics and every update's PPO diagnostics, each field ``[max_updates]`` (update ``u`` in row
    ``u − 1``, zeros after the last)."""

    def update(
        carry: tuple[TrainState, StepMetrics, PPOMetrics],
    ) -> tuple[TrainState, StepMetrics, PPOMetrics]:
        state, _, record = carry
        state, metrics = _train_step(
            settings, state, model, start_obs, lam, first_check, action_std
        )
        record = jax.tree_util.tree_map(
            lambda rows, value: rows.at[state.updates - 1].set(value), record, metrics.ppo
        )
        return state, metrics, record

    def going(carry: tuple[TrainState, StepMetrics, PPOMetrics]) -> jax.Array:
        state = carry[0]
        return (state.updates < max_updates) & ~state.rule.stop

    _, shapes = jax.eval_shape(
        partial(_train_step, settings), state, model, start_obs, lam, first_check, action_std
    )
    metrics = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    record = jax.tree_util.tree_map(
        lambda s: jnp.zeros((max_updates, *s.shape), s.dtype), shapes.ppo
    )
    return jax.lax.while_loop(going, update, (state, metrics, record))


class Trained(NamedTuple):
    """What a training leaves on the device (:func:`_trained`): the policy returned, the
    last training state, the last update's metrics, every update's PPO diagnostics and the
    returned policy's mean deterministic return over the members."""

    policy: Policy
    state: TrainState
    last: StepMetrics
    record: PPOMetrics
    model_return: jax.Array


def _trained(
    training: PolicyTraining,
    state: TrainState,
    model: WorldModel,
    start: jax.Array,
    lam: jax.Array | float,
    first_check: jax.Array | int,
    action_std: jax.Array | float,
) -> Trained:
    """The training from ``state`` as ``training`` says (:func:`train_updates`, with
    ``first_check`` and ``action_std`` traced), its best policy restored when
    ``training.restore_best`` (:func:`restore_best`) and that policy's return in each member."""
    settings = training.step_settings
    state, last, record = train_updates(
        settings, training.max_updates, state, model, start, lam, first_check, action_std
    )
    best = restore_best(state.rule, state.policy) if training.restore_best else state.policy
    returns = member_returns(settings.imagination, model, best, start)
    return Trained(best, state, last, record, returns.mean())


def train_policy(
    training: PolicyTraining,
    model: WorldModel,
    policy: Policy,
    opt_state: optax.OptState,
    start_obs: jax.Array | np.ndarray,
    key: jax.Array,
    lam: float,
) -> tuple[Policy, optax.OptState, TrainInfo]:
    """Train ``policy`` in ``model`` with exploration weight ``lam`` until the stop rule fires (algorithm.md §4).

    ``training.rollouts`` rollouts start from the first rows of ``start_obs [≥N, obs_dim]`` (real
    initial observations drawn once per run); the policy reads states through ``model.obs_norm``.
    Raises ``ConfigError`` for too few start observations or ``max_updates < 1``. Returns the best
    policy (restored; with ``training.restore_best`` False the policy after the last update), the
    optimiser state after the last update, and a :class:`TrainInfo`.
    """
    n = training.rollouts
    if n < 1 or start_obs.shape[0] < n:
        raise ConfigError(
            f"batch_steps // horizon = {n} rollouts need as many start observations (≥ 1); "
            f"got {start_obs.shape[0]}"
        )
    if training.max_updates < 1:
        raise ConfigError(f"max_updates must be ≥ 1, got {training.max_updates}")
    rule = stop_rule_init(policy, member_count(model.params))
    state = TrainState(policy, opt_state, rule, key, jnp.zeros((), jnp.int32))
    # first_check and action_std traced: changing them reuses the compiled code (module docstring)
    start = jnp.asarray(start_obs[:n])
    done = _trained(training, state, model, start, lam, training.first_check, training.action_std)
    # the training's one read from the device
    read = (done.state.updates, done.state.rule.stop, done.model_return, done.last, done.record)
    return done.policy, done.state.opt_state, _info(*jax.device_get(read))


def _info(
    updates: np.ndarray,
    stopped: np.ndarray,
    model_return: np.ndarray,
    last: StepMetrics,
    record: PPOMetrics,
) -> TrainInfo:
    """The :class:`TrainInfo` of what the host read of a training."""
    return TrainInfo(
        updates=int(updates),
        stopped=bool(stopped),
        model_return=float(model_return),
        imagined_return=float(last.imagined_return),
        bonus=float(last.bonus),
        ppo=ppo_summary(jax.tree_util.tree_map(lambda rows: rows[:updates], record)),
    )
