"""Imagined rollouts in the ensemble with the exploration bonus, and the per-member check (algorithm.md §4).

Everything static about imagining is one frozen, hashable :class:`Imagination` (a ``jax.jit``
static argument), built once with :func:`make_imagination`: the task, the horizon, the bonus and
where rewards and terminations come from, already resolved to functions.

:func:`imagine` produces the batch PPO trains on: ``N`` rollouts of ``H`` steps, each step taking a
sampled action (clipped to the action bounds), predicting with all ``M`` members, moving to the
prediction of one member drawn uniformly per rollout and step, and earning
``(1 − λ)·r_sel + λ·u`` with ``u`` the ensemble's disagreement (the exploration bonus).
:func:`member_returns` runs the deterministic policy in each member separately (the stop rule's
check and the logged in-model return).

``predict(model, obs [..., obs_dim], act [..., act_dim]) -> [M, ..., obs_dim]`` is any function with
the signature of :func:`rp1.dynamics.predict_all` (the default). ``model`` is any pytree with a
``params`` field whose leaves carry the leading member axis ``M ≥ 2``, an ``obs_norm`` (the state
normaliser the policy reads) and a ``replace`` method (a ``flax.struct`` dataclass such as
:class:`rp1.dynamics.Ensemble`).

Rewards and termination come from the task's functions (``reward="known"``, ``done="known"``) or
from the model's learned heads (``"learned"``, :func:`rp1.dynamics.predict_heads`): member ``j``'s
reward / flag is then its own head's on its own predicted next state (:class:`Outcomes`). A
rollout ends at the first step whose drawn member's next state is terminal. That step's reward
counts; every later step is invalid (``valid`` False, rewards 0) and its state is frozen at the
last state before termination, so masked steps stay finite.

Example::

    imagination = make_imagination(task)
    traj, stats = imagine(imagination, model, policy, start_obs, key, 0.2)
    returns = member_returns(imagination, model, policy, start_obs)             # [M]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, Protocol, Self, cast

import jax
import jax.numpy as jnp

from rp1.config.defaults import BONUS
from rp1.config.validation import bonus_reference
from rp1.core.errors import ConfigError
from rp1.core.nn import member_count
from rp1.core.normalizer import Normalizer, standardize
from rp1.dynamics.ensemble import Ensemble, predict_all
from rp1.dynamics.heads import predict_heads
from rp1.envs.task import KNOWN, LEARNED, RESOLVED_SOURCES, Task
from rp1.policy.networks import DEFAULT_ACTION_STD, Policy, act_mean, act_sample

Predict = Callable[..., jax.Array]
BonusFn = Callable[[jax.Array, jax.Array], jax.Array]
"""``bonus(rewards [M, N], next_norm [M, N, obs_dim]) -> u [N]``."""


class WorldModel(Protocol):
    """What imagining reads of a model (see the module docstring): ``params`` whose leaves carry
    the member axis ``M``, the state normaliser ``obs_norm`` and ``replace`` (a ``flax.struct``
    dataclass such as :class:`rp1.dynamics.Ensemble`)."""

    @property
    def params(self) -> Any: ...

    @property
    def obs_norm(self) -> Normalizer: ...

    def replace(self, **updates: Any) -> Self: ...


class Trajectory(NamedTuple):
    """An imagined batch; every field has leading axes ``[H, N]`` (time, rollout)."""

    obs: jax.Array  # [H, N, obs_dim] state the action was taken in
    act: jax.Array  # [H, N, act_dim] sampled action before clipping (what ``logp`` refers to)
    logp: jax.Array  # [H, N] log π(act | obs) of the behaviour policy
    reward: jax.Array  # [H, N] trained-on reward (1 − λ)·r_sel + λ·u; 0 where not valid
    task_reward: jax.Array  # [H, N] r_sel, the drawn member's task reward; 0 where not valid
    bonus: jax.Array  # [H, N] u, the ensemble disagreement; 0 where not valid
    member: jax.Array  # [H, N] int, index of the drawn member
    done: jax.Array  # [H, N] bool, the rollout terminated at this step (first termination only)
    valid: jax.Array  # [H, N] bool, the step happened (no termination before it)


class ImagineStats(NamedTuple):
    """Scalar summaries of an imagined batch."""

    model_return: jax.Array  # mean over rollouts of Σ_t r_sel (task reward, undiscounted)
    bonus: jax.Array  # mean of u over valid steps
    length: jax.Array  # mean number of valid steps per rollout


class RolloutState(NamedTuple):
    """What a scan over imagined steps carries: current states and which rollouts still run."""

    obs: jax.Array  # [..., obs_dim]
    alive: jax.Array  # [...] bool


def _deviations(x: jax.Array) -> jax.Array:
    """``x_j − mean_j x_j`` over the member axis 0, computed relative to member 0 so that identical
    members give exactly 0 (variance is shift-invariant; this also reduces cancellation)."""
    d = x - x[0]
    return d - d.mean(0)


def reward_variance_bonus(rewards: jax.Array, next_norm: jax.Array) -> jax.Array:
    """``u = sqrt(Σ_j (r_j − r̄)² / (M − 1))`` from ``rewards [M, N]``: ``[N]`` (algorithm.md §4)."""
    del next_norm
    return jnp.sqrt((_deviations(rewards) ** 2).sum(0) / (rewards.shape[0] - 1))


def state_variance_bonus(rewards: jax.Array, next_norm: jax.Array) -> jax.Array:
    """``u = Σ_dims mean_j (norm(s'_j) − mean_j norm(s'_j))²`` from ``next_norm [M, N, obs_dim]``,
    the members' standardised predictions, unclipped: ``[N]`` (algorithm.md §4, the ablation)."""
    del rewards
    return (_deviations(next_norm) ** 2).mean(0).sum(-1)


BONUSES: dict[str, BonusFn] = {"reward": reward_variance_bonus, "state": state_variance_bonus}


def bonus_function(name: str) -> BonusFn:
    """The bonus called ``name``: ``"reward"`` or ``"state"`` (:data:`BONUSES`), or a function of
    the user's named ``package.module:function`` with the signature of :data:`BonusFn` (imported,
    so that every process of a sweep finds it, as a task's ``TaskSpec``; see docs/extending.md);
    ``ConfigError`` otherwise."""
    if name in BONUSES:
        return BONUSES[name]
    return cast(BonusFn, bonus_reference(name))


def clip_action(task: Task, act: jax.Array) -> jax.Array:
    """``act [..., act_dim]`` clipped to the task's action bounds."""
    return jnp.clip(act, jnp.asarray(task.action_low), jnp.asarray(task.action_high))


@dataclass(frozen=True)
class Outcomes:
    """Every member's reward ``[M, ...]`` and termination flag ``[M, ...]`` (bool) at its own next
    state ``next_obs [M, ..., obs_dim]``, reached from ``obs`` with ``act`` (``[..., dim]``, shared,
    or ``[M, ..., dim]``, per member): ``outcomes(model, obs, act, next_obs)``.

    ``reward`` / ``done``: :data:`~rp1.envs.task.KNOWN` the task's function,
    :data:`~rp1.envs.task.LEARNED` the model's heads (the model must have them); checked when
    built (``ConfigError``; resolve ``auto`` first with :meth:`~rp1.envs.task.Task.source`).
    Hashable and compared by value, so equal settings share compiled code.
    """

    task: Task
    reward: str = KNOWN
    done: str = KNOWN

    def __post_init__(self) -> None:
        for what in ("reward", "done"):
            source = getattr(self, what)
            if source not in RESOLVED_SOURCES:
                raise ConfigError(
                    f"{what} must be one of {', '.join(RESOLVED_SOURCES)}, got {source!r}"
                )

    def __call__(
        self, model: WorldModel, obs: jax.Array, act: jax.Array, next_obs: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        # learned: the model must have heads (above), so it is an Ensemble
        heads = (
            predict_heads(cast(Ensemble, model), obs, act, next_obs)
            if LEARNED in (self.reward, self.done)
            else None
        )
        rewards = (
            heads[0]
            if heads is not None and self.reward == LEARNED
            else self.task.reward(next_obs, act)
        )
        dones = heads[1] if heads is not None and self.done == LEARNED else self.task.done(next_obs)
        return rewards, dones


@dataclass(frozen=True)
class Imagination:
    """How imagined rollouts are made (algorithm.md §4), static and hashable: build it once with
    :func:`make_imagination` and pass it to :func:`imagine` and :func:`member_returns`.

    ``task``: actions are clipped to its bounds; ``horizon``: steps per rollout; ``bonus``: the
    exploration bonus (:data:`BONUSES`); ``outcomes``: rewards and terminations
    (:class:`Outcomes`); ``predict``: every member's next state (:data:`Predict`). Equal
    settings compare equal (the functions are module-level), so they share compiled code.
    """

    task: Task
    horizon: int
    bonus: BonusFn
    outcomes: Outcomes
    predict: Predict = predict_all


def make_imagination(
    task: Task,
    *,
    horizon: int | None = None,
    bonus: str = BONUS,
    reward: str = KNOWN,
    done: str = KNOWN,
    predict: Predict = predict_all,
) -> Imagination:
    """:class:`Imagination` of ``task`` with the switches resolved: ``horizon`` (default the
    task's), ``bonus`` by name (:func:`bonus_function`), the reward and termination sources
    (:class:`Outcomes`) and ``predict``. ``ConfigError`` for an unknown switch."""
    return Imagination(
        task=task,
        horizon=task.horizon if horizon is None else horizon,
        bonus=bonus_function(bonus),
        outcomes=Outcomes(task, reward, done),
        predict=predict,
    )


def advance(
    state: RolloutState, next_obs: jax.Array, done: jax.Array
) -> tuple[RolloutState, jax.Array]:
    """Running rollouts moved to ``next_obs [..., obs_dim]`` (ended ones keep their last state),
    and ``done [...]`` (``next_obs``'s termination flags) True only where a running rollout
    terminates now."""
    done = done & state.alive
    alive = state.alive & ~done
    return RolloutState(jnp.where(alive[..., None], next_obs, state.obs), alive), done


def predict_each_member(
    predict: Predict, model: WorldModel, obs: jax.Array, act: jax.Array
) -> jax.Array:
    """Member ``j`` predicts from its own ``obs[j], act[j]``: ``[M, ..., dim]`` -> ``[M, ..., obs_dim]``.

    The model is split into ``M`` one-member models (parameters ``[1, ...]``) and ``predict`` is
    vmapped over them, so each member's network runs once per step.
    """
    single = jax.tree_util.tree_map(lambda p: p[:, None], model.params)
    one = lambda params, o, a: predict(model.replace(params=params), o, a)[0]  # noqa: E731
    return jax.vmap(one)(single, obs, act)


@partial(jax.jit, static_argnums=0)
def imagine(
    imagination: Imagination,
    model: WorldModel,
    policy: Policy,
    start_obs: jax.Array,
    key: jax.Array,
    lam: jax.Array | float,
    action_std: jax.Array | float = DEFAULT_ACTION_STD,
) -> tuple[Trajectory, ImagineStats]:
    """Roll the stochastic policy ``imagination.horizon`` steps through the ensemble from
    ``start_obs [N, obs_dim]``; the policy reads states through ``model.obs_norm``.

    Each step (algorithm.md §4): ``a ~ N(mean(s), action_std²)`` clipped to the action bounds; all members
    predict ``s'_j``; a member is drawn uniformly, independently per rollout and step, and its
    prediction becomes the next state; ``r_j`` is member ``j``'s reward
    (``imagination.outcomes``); ``u`` is ``imagination.bonus``; the trained-on reward is
    ``(1 − λ)·r_sel + λ·u`` with ``lam`` a traced scalar; the rollout terminates where the drawn
    member's next state is terminal. One ``lax.scan`` over time. Returns the batch
    (:class:`Trajectory`, ``[H, N, ...]``) and its :class:`ImagineStats`.
    """
    task, obs_norm = imagination.task, model.obs_norm
    rows = jnp.arange(start_obs.shape[0])

    def step(state: RolloutState, step_key: jax.Array) -> tuple[RolloutState, Trajectory]:
        k_act, k_member = jax.random.split(step_key)
        act, logp = act_sample(policy, obs_norm, state.obs, k_act, action_std)
        act_env = clip_action(task, act)
        next_all = imagination.predict(model, state.obs, act_env)  # [M, N, obs_dim]
        member = jax.random.randint(k_member, rows.shape, 0, next_all.shape[0])
        rewards, dones = imagination.outcomes(model, state.obs, act_env, next_all)
        r_sel = rewards[member, rows]  # rewards, dones: [M, N]
        # the members' standardised predictions, unclipped: algorithm.md §4
        u = imagination.bonus(rewards, standardize(obs_norm, next_all))
        mixed = (1.0 - lam) * r_sel + lam * u
        valid = state.alive
        new_state, ended = advance(state, next_all[member, rows], dones[member, rows])
        zero_invalid = lambda x: jnp.where(valid, x, 0.0)  # noqa: E731
        out = Trajectory(
            obs=state.obs,
            act=act,
            logp=logp,
            reward=zero_invalid(mixed),
            task_reward=zero_invalid(r_sel),
            bonus=zero_invalid(u),
            member=member,
            done=ended,
            valid=valid,
        )
        return new_state, out

    init = RolloutState(start_obs, jnp.ones(rows.shape, bool))
    _, traj = jax.lax.scan(step, init, jax.random.split(key, imagination.horizon))
    steps = traj.valid.sum()
    stats = ImagineStats(
        model_return=traj.task_reward.sum(0).mean(),
        bonus=traj.bonus.sum() / jnp.maximum(steps, 1),
        length=steps / rows.shape[0],
    )
    return traj, stats


@partial(jax.jit, static_argnums=0)
def member_returns(
    imagination: Imagination, model: WorldModel, policy: Policy, start_obs: jax.Array
) -> jax.Array:
    """Return of the deterministic policy in each member separately: ``[M]`` (algorithm.md §4, stop rule).

    From every row of ``start_obs [N, obs_dim]``, member ``j`` alone drives the state for
    ``imagination.horizon`` steps (one ``lax.scan``, members vmapped); the return is the
    undiscounted sum of the task reward (no bonus) up to and including the terminating step,
    averaged over the ``N`` start states. Rewards and flags: each member its own
    (``imagination.outcomes``).
    """
    task, obs_norm = imagination.task, model.obs_norm
    m = member_count(model.params)

    def step(state: RolloutState, _xs: None) -> tuple[RolloutState, jax.Array]:
        act = clip_action(task, act_mean(policy, obs_norm, state.obs))  # [M, N, act_dim]
        next_obs = predict_each_member(imagination.predict, model, state.obs, act)
        rewards, dones = imagination.outcomes(model, state.obs, act, next_obs)
        new_state, _ = advance(state, next_obs, dones)
        return new_state, jnp.where(state.alive, rewards, 0.0)

    obs = jnp.broadcast_to(start_obs, (m, *start_obs.shape))
    init = RolloutState(obs, jnp.ones(obs.shape[:-1], bool))
    _, rewards = jax.lax.scan(step, init, None, length=imagination.horizon)  # [H, M, N]
    return rewards.sum(0).mean(-1)
