"""Model-free PPO in the real environment: the ``modelfree`` reference of algorithm.md §8.

The same actor-critic and PPO update as in the model (algorithm.md §4: Monte-Carlo returns, 10 full-batch
epochs, lr 3e-4, clip 0.2, fixed action std 0.5), trained on real data: every update collects
``N = batch_steps // H`` whole episodes of horizon ``H`` (50,000 real steps), runs one
:func:`~rp1.policy.ppo.ppo_update` on them and folds their states into the running state normaliser
that the policy reads. Episodes that terminate early (Ant) are shorter, so a batch may hold fewer
steps; ``samples`` counts the steps actually taken, and the last batch is cut to end exactly at the
budget.

Collection runs ``envs`` episodes side by side in ``workers`` processes (:mod:`rp1.realenv`),
seeding episode ``k`` of update ``u`` from ``(seed, u, k)`` and drawing its action noise from a key
folded from the same numbers (:func:`~rp1.core.seeding.episode_seeds`, :func:`step_keys`), so a run
does not depend on ``workers``. Per real step the policy is one jitted call over all slots.

Every update writes a metrics row (``samples`` = real steps so far, ``steps_per_s`` = real steps
per second of collection, the update's PPO diagnostics, :func:`~rp1.policy.ppo.ppo_summary`);
every ``eval_every`` updates and after the last one the row also holds the mean true return of
``eval_episodes`` deterministic episodes. Model columns stay empty. The policy that collects a batch
is also evaluated at every point of the evaluation grid the batch covers (:mod:`rp1.agents.grid`).

Example::

    agent = ModelFreeAgent(resolve("halfcheetah-modelfree"))
    state = agent.initial_state()
    state, row = agent.step(state)          # one update of 50,000 real steps
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from rp1.agents.grid import evaluate_on_grid
from rp1.agents.settings import ppo_settings
from rp1.config import Config
from rp1.config.defaults import EAGER, MASKED, Statistics
from rp1.core.errors import DivergedError
from rp1.core.executables import releasing
from rp1.core.normalizer import (
    STATE_CLIP,
    Normalizer,
    normalizer_init,
    normalizer_update,
)
from rp1.core.seeding import episode_seeds, run_key
from rp1.policy.networks import Policy, act_sample, is_finite, policy_init
from rp1.policy.ppo import make_policy_optimizer, ppo_summary, ppo_update
from rp1.realenv import ActFn, Episodes, RealEnvs, collect
from rp1.realenv.snapshots import EvaluationEpisodes, PolicySnapshot, returns_summary
from rp1.rundir.checkpoints import pack_checkpoint, unpack_checkpoint

TRAIN_STREAM, EVAL_STREAM = 0, 1  # second entry of the seed triple of an episode (episode_seeds)
EVALUATOR = "device-float32"
"""How this agent evaluates (:data:`rp1.realenv.snapshots.EVALUATORS`): the compiled actor, float32 returns."""
_update_eagerly = releasing(normalizer_update)
"""The normaliser's update on a batch's valid rows as they are, whose count varies where episodes
terminate: nothing compiled for one count is kept (:func:`rp1.core.executables.releasing`)."""
_update_masked = jax.jit(normalizer_update)
"""The normaliser's update on a batch's ``[H, N]`` rows with the valid ones masked: compiled once."""
STATE_UPDATES: dict[Statistics, Callable[[Normalizer, Episodes], Normalizer]] = {
    MASKED: lambda n, batch: _update_masked(n, batch.obs, batch.valid),
    EAGER: lambda n, batch: _update_eagerly(n, jnp.asarray(batch.obs[batch.valid])),
}
"""How each value of ``statistics`` folds a batch's valid states into the policy's normaliser."""


# --- the behaviour policy -----------------------------------------------------------------------


def step_keys(key: jax.Array, episode: jax.Array, t: int | jax.Array) -> jax.Array:
    """Action-noise keys of step ``t`` of episodes ``episode [E]`` (int) under batch key ``key``:
    ``fold_in(fold_in(key, episode), t)``, ``[E]`` keys."""
    return jax.vmap(lambda k: jax.random.fold_in(jax.random.fold_in(key, k), t))(episode)


@jax.jit
def sample_actions(
    policy: Policy,
    obs_norm: Normalizer,
    obs: jax.Array,
    key: jax.Array,
    episode: jax.Array,
    t: jax.Array,
    std: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """``a ~ N(mean(s), std²)`` for ``obs [E, obs_dim]`` with per-episode keys: ``([E, act_dim], [E])``."""
    keys = step_keys(key, episode, t)
    return jax.vmap(act_sample, in_axes=(None, None, 0, 0, None))(policy, obs_norm, obs, keys, std)


# --- the agent ----------------------------------------------------------------------------------


class PolicyLearner(struct.PyTreeNode):
    """The JAX side of a model-free run."""

    key: jax.Array  # run key; update u's noise key is fold_in(key, u)
    policy: Policy
    policy_opt: optax.OptState
    # running statistics of every collected state, the policy's input normaliser
    obs_norm: Normalizer


@dataclass(frozen=True)
class ModelFreeState:
    """Everything that changes during a model-free run; saved whole by :meth:`ModelFreeAgent.checkpoint`.
    Frozen: a step returns a new state and leaves the one it was given as it was."""

    update: int  # PPO updates done
    samples: int  # real env steps collected
    learner: PolicyLearner
    rows: list[dict[str, Any]] = field(default_factory=list)
    evaluations: list[dict[str, Any]] = field(default_factory=list)  # the grid's (rp1.agents.grid)


class ModelFreeAgent:
    """PPO in the real env for ``cfg`` (method ``modelfree``); driven by :func:`rp1.train.run_training`."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.real = RealEnvs(
            cfg.task, cfg.modelfree.envs, cfg.modelfree.workers, horizon=cfg.horizon
        )
        self.task = self.real.task
        self.episodes = max(1, cfg.policy.batch_steps // self.task.horizon)
        self._std = jnp.float32(cfg.policy.action_std)
        self.ppo = ppo_settings(cfg)
        self.update_states = STATE_UPDATES[cfg.statistics]

    def close(self) -> None:
        """Close the environments (and stop their worker processes)."""
        self.real.close()

    # --- state ---------------------------------------------------------------------------------

    def initial_state(self) -> ModelFreeState:
        cfg, task = self.cfg, self.task
        key, k_policy = jax.random.split(run_key(cfg.seed))
        policy = policy_init(k_policy, task.obs_dim, task.act_dim, cfg.policy.hidden)
        learner = PolicyLearner(
            key=key,
            policy=policy,
            policy_opt=make_policy_optimizer(cfg.policy.lr).init(policy),
            obs_norm=normalizer_init(task.obs_dim, STATE_CLIP),
        )
        return ModelFreeState(update=0, samples=0, learner=learner)

    def checkpoint(self, s: ModelFreeState) -> dict[str, Any]:
        """``s`` as nested dicts of arrays and strings (:func:`~rp1.rundir.checkpoints.pack_checkpoint`).
        Environments hold no state between updates (every episode is reset with its own seed), so
        none is saved."""
        return pack_checkpoint(
            {
                "update": s.update,
                "samples": s.samples,
                "rows": s.rows,
                "evaluations": s.evaluations,
            },
            s.learner,
        )

    def restore(self, data: dict[str, Any]) -> ModelFreeState:
        """The state saved by :meth:`checkpoint`, with device-array leaves as in an unbroken run (a
        checkpoint of an earlier layout is migrated when it is read, :mod:`rp1.rundir.layouts`)."""
        s = self.initial_state()
        meta, learner, _ = unpack_checkpoint(data, s.learner)
        return replace(
            s,
            update=meta["update"],
            samples=meta["samples"],
            learner=learner,
            rows=meta["rows"],
            evaluations=meta["evaluations"],
        )

    # --- one update ----------------------------------------------------------------------------

    def sampling(self, s: ModelFreeState) -> ActFn:
        """The behaviour policy of update ``s.update``: ``a ~ N(mean(s), std²)`` with keys from
        :func:`step_keys` under ``fold_in(s.learner.key, s.update)``."""
        policy, obs_norm, key = (
            s.learner.policy,
            s.learner.obs_norm,
            jax.random.fold_in(s.learner.key, s.update),
        )

        def act(obs: np.ndarray, episode: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
            a, logp = sample_actions(
                policy, obs_norm, obs.astype(np.float32), key, episode, t, self._std
            )
            return np.asarray(a), np.asarray(logp)

        return act

    def policy_snapshot(self, s: ModelFreeState) -> PolicySnapshot:
        """The policy of ``s`` as :meth:`evaluate` evaluates it: episodes seeded by
        ``episode_seeds(seed, EVAL_STREAM, update, eval_episodes)`` (:mod:`rp1.realenv.snapshots`)."""
        replay = EvaluationEpisodes.seeded(
            self.cfg.modelfree.envs, (self.cfg.seed, EVAL_STREAM, s.update), self.cfg.eval_episodes
        )
        return PolicySnapshot(s.learner.policy, s.learner.obs_norm, EVALUATOR, replay)

    def evaluate(self, s: ModelFreeState) -> tuple[float, float]:
        """Mean and std of the true return of ``eval_episodes`` deterministic episodes (algorithm.md
        §7), computed in float32 (:data:`EVALUATOR`; the model-based agent's are float64)."""
        return returns_summary(self.policy_snapshot(s).evaluate(self.real))

    def step(self, state: ModelFreeState) -> tuple[ModelFreeState, dict[str, Any]]:
        """Collect one batch, one PPO update, fold the states into the normaliser; evaluate every
        ``eval_every`` updates and when the budget is reached. Returns the new state and its row
        (also appended to the new state's ``rows``); ``state`` is left as it was."""
        cfg = self.cfg
        start = time.perf_counter()
        seeds = episode_seeds(cfg.seed, TRAIN_STREAM, state.update, self.episodes)
        batch = collect(self.real, self.sampling(state), seeds).first_steps(
            cfg.budget - state.samples
        )
        collect_s = time.perf_counter() - start
        steps = int(batch.valid.sum())
        grid = evaluate_on_grid(
            self.policy_snapshot(state),
            self.real,
            cfg.seed,
            cfg.eval.every,
            cfg.eval_episodes,
            (state.samples, state.samples + steps),
            state.update,
        )

        t = time.perf_counter()
        learner = state.learner
        policy, policy_opt, ppo = ppo_update(
            learner.policy, learner.policy_opt, batch, learner.obs_norm, self._std, self.ppo
        )
        if not is_finite(policy):  # before its actions reach the environment
            raise DivergedError.of(
                "PPO's update",
                state.update + 1,
                "policy.lr",
                cfg.policy.lr,
                "the policy's parameters became inf or NaN",
            )
        obs_norm = self.update_states(learner.obs_norm, batch)
        s = replace(
            state,
            update=state.update + 1,
            samples=state.samples + steps,
            learner=learner.replace(policy=policy, policy_opt=policy_opt, obs_norm=obs_norm),
            evaluations=[*state.evaluations, *grid],
        )
        policy_s = time.perf_counter() - t

        row: dict[str, Any] = {
            "iteration": s.update,
            "samples": s.samples,
            "phase_samples": steps,
            "policy_updates": 1,
            "steps_per_s": steps / max(collect_s, 1e-9),
            "collect_s": collect_s,
            "policy_s": policy_s,
            **ppo_summary(ppo),  # one update: each ``_mean`` is its ``_last``
        }
        if s.update % cfg.modelfree.eval_every == 0 or s.samples >= cfg.budget:
            row["eval_return"], row["eval_std"] = self.evaluate(s)
        row["wall_s"] = time.perf_counter() - start
        return replace(s, rows=[*s.rows, row]), row
