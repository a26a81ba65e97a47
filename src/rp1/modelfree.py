"""Model-free PPO in the real environment: the ``modelfree`` reference of SPEC §8.

The same actor-critic and PPO update as in the model (SPEC §4: Monte-Carlo returns, 10 full-batch
epochs, lr 3e-4, clip 0.2, fixed action std 0.5), trained on real data: every update collects
``N = batch_steps // H`` whole episodes of horizon ``H`` (50,000 real steps), runs one
:func:`~rp1.policy.ppo.ppo_update` on them and folds their states into the running state normaliser
that the policy reads. Episodes that terminate early (Ant) are shorter, so a batch may hold fewer
steps; ``samples`` counts the steps actually taken, and the last batch is cut to end exactly at the
budget.

Collection runs ``envs`` episodes side by side (:class:`RealEnvs`), in ``workers`` groups: in this
process for one worker, else a Gymnasium ``AsyncVectorEnv`` of :class:`EnvGroup` sub-environments,
one process per group, so that the processes exchange one message per step and group instead of
one per environment. Autoreset is off: the collector resets all slots itself at the start of every
round of ``envs`` episodes, seeding episode ``k`` of update ``u`` from ``(seed, u, k)`` and drawing
its action noise from a key folded from the same numbers (:func:`episode_seeds`,
:func:`step_keys`), so a run does not depend on ``workers``. Per real step the policy is one jitted
call over all slots. :func:`collect_sequential` is a one-env, one-episode-at-a-time reference.

Every update writes a metrics row (``samples`` = real steps so far, ``steps_per_s`` = real steps
per second of collection); every ``eval_every`` updates and after the last one the row also holds
the mean true return of ``eval_episodes`` deterministic episodes. Model columns stay empty.

Example::

    agent = ModelFreeAgent(resolve("halfcheetah-modelfree"))
    state = agent.initial_state()
    state, row = agent.step(state)          # one update of 50,000 real steps
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization
from gymnasium.spaces import Box
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

from rp1 import envs
from rp1.config import Config
from rp1.dynamics.ensemble import STATE_CLIP
from rp1.dynamics.normalizer import Normalizer, normalizer_init, normalizer_update
from rp1.envs.task import Task
from rp1.imagination import Trajectory
from rp1.policy.networks import Policy, act_mean, act_sample, policy_init
from rp1.policy.ppo import make_policy_optimizer, ppo_update
from rp1.runs import restore_pytree

# ``fork`` would copy JAX's threads into the workers; a fork server starts them clean.
MP_CONTEXT = "forkserver"
EVAL_STREAM = 1  # second entry of the seed triple: 0 for training episodes, 1 for evaluation
UNUSED = -1  # the seed of a slot that runs no episode in a round

# ``act_fn(obs [E, obs_dim], episode [E] int, t) -> (action [E, act_dim], log π [E])`` (NumPy)
ActFn = Callable[[np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]


# --- seeds and keys -----------------------------------------------------------------------------


def episode_seeds(seed: int, stream: int, index: int, count: int) -> np.ndarray:
    """Reset seeds ``[count]`` of episodes ``0 … count−1`` of update (or evaluation) ``index``;
    independent of how the episodes are spread over environments."""
    seq = np.random.SeedSequence([seed, stream, index])
    return np.array([int(s) for s in seq.generate_state(count, np.uint32) % (2**31 - 1)], np.int64)


def step_keys(key: jax.Array, episode: jax.Array, t: int | jax.Array) -> jax.Array:
    """Action-noise keys of step ``t`` of episodes ``episode [E]`` (int) under batch key ``key``:
    ``fold_in(fold_in(key, episode), t)``, ``[E]`` keys."""
    return jax.vmap(lambda k: jax.random.fold_in(jax.random.fold_in(key, k), t))(episode)


@jax.jit
def sample_actions(
    policy: Policy, obs_norm: Normalizer, obs: jax.Array, key: jax.Array, episode: jax.Array, t: jax.Array, std: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``a ~ N(mean(s), std²)`` for ``obs [E, obs_dim]`` with per-episode keys: ``([E, act_dim], [E])``."""
    keys = step_keys(key, episode, t)
    return jax.vmap(act_sample, in_axes=(None, None, 0, 0, None))(policy, obs_norm, obs, keys, std)


# --- environments -------------------------------------------------------------------------------


class EnvGroup(gym.Env):
    """``size`` real environments of one task stepped one after another, as one environment with
    batched observations ``[size, obs_dim]``, actions ``[size, act_dim]`` and rewards / flags
    ``[size]``. Slot ``i`` reads the episode seed ``seeds[offset + i]`` from ``reset``'s
    ``options``; a slot whose episode ended (or that got :data:`UNUSED`) is no longer stepped: it
    keeps its last observation and returns reward 0. Only for :class:`RealEnvs` (no autoreset)."""

    def __init__(self, task_name: str, offset: int, size: int):
        self.envs = [envs.make(task_name)[0] for _ in range(size)]
        self.offset = offset
        single_obs, single_act = self.envs[0].observation_space, self.envs[0].action_space
        self.observation_space = Box(-np.inf, np.inf, (size, *single_obs.shape), np.float64)
        self.action_space = Box(
            np.broadcast_to(single_act.low, (size, *single_act.shape)),
            np.broadcast_to(single_act.high, (size, *single_act.shape)),
            dtype=single_act.dtype,
        )
        self._obs = np.zeros(self.observation_space.shape)
        self._running = np.zeros(size, bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        seeds = np.asarray(options["seeds"])[self.offset : self.offset + len(self.envs)]
        self._running = seeds != UNUSED
        self._obs = np.zeros(self.observation_space.shape)
        for i, (env, s) in enumerate(zip(self.envs, seeds)):
            if s != UNUSED:
                self._obs[i] = env.reset(seed=int(s))[0]
        return self._obs.copy(), {}

    def step(self, action: np.ndarray):
        size = len(self.envs)
        reward, terminated, truncated = np.zeros(size), np.zeros(size, bool), np.zeros(size, bool)
        for i in np.flatnonzero(self._running):
            self._obs[i], reward[i], terminated[i], truncated[i], _ = self.envs[i].step(action[i])
        self._running &= ~(terminated | truncated)
        return self._obs.copy(), reward, terminated, truncated, {}

    def close(self):
        for env in self.envs:
            env.close()


class RealEnvs:
    """``slots`` real environments of ``task_name`` in ``workers`` :class:`EnvGroup` s of equal
    size: one in this process when ``workers == 1``, else one process each (``AsyncVectorEnv``,
    autoreset off). ``reset(seeds [slots]) -> obs [slots, obs_dim]`` and
    ``step(action [slots, act_dim]) -> (obs, reward, terminated, truncated)``, each ``[slots, …]``."""

    def __init__(self, task_name: str, slots: int, workers: int = 1):
        size = slots // workers
        self.slots = slots
        groups = [partial(EnvGroup, task_name, w * size, size) for w in range(workers)]
        if workers == 1:
            self._env = groups[0]()
        else:
            self._env = AsyncVectorEnv(groups, context=MP_CONTEXT, autoreset_mode=AutoresetMode.DISABLED)

    def reset(self, seeds: np.ndarray) -> np.ndarray:
        obs, _ = self._env.reset(options={"seeds": seeds})
        return np.reshape(obs, (self.slots, -1))

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        shape = self._env.action_space.shape
        obs, reward, terminated, truncated, _ = self._env.step(np.reshape(action, shape))
        flat = lambda x: np.reshape(x, (self.slots,))  # noqa: E731
        return np.reshape(obs, (self.slots, -1)), flat(reward), flat(terminated), flat(truncated)

    def close(self) -> None:
        self._env.close()


# --- collection ---------------------------------------------------------------------------------


class Batch(NamedTuple):
    """Real episodes as columns, ``[H, N, …]`` (time, episode); steps after an episode ended are
    invalid (zeros)."""

    obs: np.ndarray  # [H, N, obs_dim] state the action was taken in
    act: np.ndarray  # [H, N, act_dim] sampled action before clipping
    logp: np.ndarray  # [H, N] log π(act | obs)
    reward: np.ndarray  # [H, N] true env reward of the clipped action
    done: np.ndarray  # [H, N] bool, the episode terminated at this step
    valid: np.ndarray  # [H, N] bool, the step happened

    def trajectory(self) -> Trajectory:
        """The batch as the :class:`~rp1.imagination.Trajectory` PPO trains on (no bonus)."""
        zeros = np.zeros_like(self.reward)
        return Trajectory(
            obs=jnp.asarray(self.obs),
            act=jnp.asarray(self.act),
            logp=jnp.asarray(self.logp),
            reward=jnp.asarray(self.reward),
            task_reward=jnp.asarray(self.reward),
            bonus=jnp.asarray(zeros),
            member=jnp.asarray(zeros, jnp.int32),
            done=jnp.asarray(self.done),
            valid=jnp.asarray(self.valid),
        )

    def returns(self) -> np.ndarray:
        """Undiscounted return of every episode: ``[N]``."""
        return self.reward.sum(0)


def _empty_batch(task: Task, count: int) -> Batch:
    h = task.horizon
    return Batch(
        obs=np.zeros((h, count, task.obs_dim), np.float32),
        act=np.zeros((h, count, task.act_dim), np.float32),
        logp=np.zeros((h, count), np.float32),
        reward=np.zeros((h, count), np.float32),
        done=np.zeros((h, count), bool),
        valid=np.zeros((h, count), bool),
    )


def collect(real: RealEnvs, task: Task, act_fn: ActFn, seeds: np.ndarray) -> Batch:
    """Episodes ``k = 0 … len(seeds)−1``, reset with ``seeds[k]``, in rounds of ``real.slots`` side
    by side; each step calls ``act_fn`` once for all slots and steps the clipped actions."""
    count, slots = len(seeds), real.slots
    batch = _empty_batch(task, count)
    low, high = task.action_bounds
    for first in range(0, count, slots):
        episode = np.arange(first, first + slots)
        used = episode < count
        obs = real.reset(np.where(used, seeds[np.minimum(episode, count - 1)], UNUSED))
        running = used.copy()
        for t in range(task.horizon):
            act, logp = act_fn(obs.astype(np.float32), episode, t)
            next_obs, reward, terminated, truncated = real.step(np.clip(act, low, high))
            cols = episode[running]
            batch.obs[t, cols] = obs[running]
            batch.act[t, cols] = act[running]
            batch.logp[t, cols] = logp[running]
            batch.reward[t, cols] = reward[running]
            batch.done[t, cols] = terminated[running]
            batch.valid[t, cols] = True
            running &= ~(terminated | truncated)
            if not running.any():
                break
            obs = next_obs
    return batch


def collect_sequential(task_name: str, act_one: ActFn, seeds: np.ndarray) -> Batch:
    """Reference for :func:`collect`: one environment, one episode after another; ``act_one`` gets
    ``obs [obs_dim]``, the episode index and ``t`` and returns ``(action [act_dim], log π)``."""
    env, task = envs.make(task_name)
    batch = _empty_batch(task, len(seeds))
    low, high = task.action_bounds
    for k, seed in enumerate(seeds):
        obs, _ = env.reset(seed=int(seed))
        for t in range(task.horizon):
            act, logp = act_one(obs.astype(np.float32), k, t)
            next_obs, reward, terminated, truncated, _ = env.step(np.clip(act, low, high))
            batch.obs[t, k], batch.act[t, k], batch.logp[t, k] = obs, act, logp
            batch.reward[t, k], batch.done[t, k], batch.valid[t, k] = reward, terminated, True
            if terminated or truncated:
                break
            obs = next_obs
    env.close()
    return batch


def cut_to_budget(batch: Batch, steps: int) -> Batch:
    """``batch`` with only its first ``steps`` valid steps kept, counting episode by episode."""
    lengths = batch.valid.sum(0)
    keep = np.clip(steps - (np.cumsum(lengths) - lengths), 0, lengths)  # [N] steps kept per episode
    valid = batch.valid & (np.arange(batch.valid.shape[0])[:, None] < keep)
    dropped = ~valid
    return batch._replace(
        obs=np.where(dropped[..., None], 0, batch.obs),
        act=np.where(dropped[..., None], 0, batch.act),
        logp=np.where(dropped, 0, batch.logp),
        reward=np.where(dropped, 0, batch.reward),
        done=batch.done & valid,
        valid=valid,
    )


# --- the agent ----------------------------------------------------------------------------------


@dataclass
class ModelFreeState:
    """Everything that changes during a model-free run; saved whole by :meth:`ModelFreeAgent.checkpoint`."""

    update: int  # PPO updates done
    samples: int  # real env steps collected
    key: jax.Array  # run key; update u's noise key is fold_in(key, u)
    policy: Policy
    policy_opt: Any
    obs_norm: Normalizer  # running statistics of every collected state, the policy's input normaliser
    rows: list[dict[str, Any]] = field(default_factory=list)


class ModelFreeAgent:
    """PPO in the real env for ``cfg`` (method ``modelfree``); driven by :func:`rp1.train.run_training`."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        probe, self.task = envs.make(cfg.task)
        probe.close()
        self.episodes = max(1, cfg.policy.batch_steps // self.task.horizon)
        self.real = RealEnvs(cfg.task, cfg.modelfree.envs, cfg.modelfree.workers)
        self._std = jnp.float32(cfg.policy.action_std)

    def close(self) -> None:
        """Stop the worker processes."""
        self.real.close()

    # --- state ---------------------------------------------------------------------------------

    def initial_state(self) -> ModelFreeState:
        cfg, task = self.cfg, self.task
        key, k_policy = jax.random.split(jax.random.PRNGKey(cfg.seed))
        policy = policy_init(k_policy, task.obs_dim, task.act_dim, cfg.policy.hidden)
        return ModelFreeState(
            update=0,
            samples=0,
            key=key,
            policy=policy,
            policy_opt=make_policy_optimizer(cfg.policy.lr).init(policy),
            obs_norm=normalizer_init(task.obs_dim, STATE_CLIP),
        )

    def checkpoint(self, s: ModelFreeState) -> dict[str, Any]:
        """``s`` as nested dicts of arrays and strings. Environments hold no state between updates
        (every episode is reset with its own seed), so none is saved."""
        meta = {"update": s.update, "samples": s.samples, "rows": s.rows}
        return {
            "meta": json.dumps(meta),
            "key": np.asarray(s.key),
            "policy": serialization.to_state_dict(s.policy),
            "policy_opt": serialization.to_state_dict(s.policy_opt),
            "obs_norm": serialization.to_state_dict(s.obs_norm),
        }

    def restore(self, data: dict[str, Any]) -> ModelFreeState:
        """The state saved by :meth:`checkpoint`, with device-array leaves as in an unbroken run."""
        s = self.initial_state()
        meta = json.loads(data["meta"])
        s.update, s.samples, s.rows = meta["update"], meta["samples"], meta["rows"]
        s.key = jax.device_put(data["key"])
        s.policy = restore_pytree(s.policy, data["policy"])
        s.policy_opt = restore_pytree(s.policy_opt, data["policy_opt"])
        s.obs_norm = restore_pytree(s.obs_norm, data["obs_norm"])
        return s

    # --- one update ----------------------------------------------------------------------------

    def sampling(self, s: ModelFreeState) -> ActFn:
        """The behaviour policy of update ``s.update``: ``a ~ N(mean(s), std²)`` with keys from
        :func:`step_keys` under ``fold_in(s.key, s.update)``."""
        policy, obs_norm, key = s.policy, s.obs_norm, jax.random.fold_in(s.key, s.update)

        def act(obs, episode, t):
            a, logp = sample_actions(policy, obs_norm, obs, key, episode, t, self._std)
            return np.asarray(a), np.asarray(logp)

        return act

    def deterministic(self, s: ModelFreeState) -> ActFn:
        """The mean action (evaluation); log-probabilities are reported as 0."""
        policy, obs_norm = s.policy, s.obs_norm

        def act(obs, episode, t):
            return np.asarray(act_mean(policy, obs_norm, obs)), np.zeros(len(obs), np.float32)

        return act

    def evaluate(self, s: ModelFreeState) -> tuple[float, float]:
        """Mean and std of the true return of ``eval_episodes`` deterministic episodes (SPEC §7)."""
        seeds = episode_seeds(self.cfg.seed, EVAL_STREAM, s.update, self.cfg.eval_episodes)
        returns = collect(self.real, self.task, self.deterministic(s), seeds).returns()
        return float(returns.mean()), float(returns.std())

    def step(self, s: ModelFreeState) -> tuple[ModelFreeState, dict[str, Any]]:
        """Collect one batch, one PPO update, fold the states into the normaliser; evaluate every
        ``eval_every`` updates and when the budget is reached. Returns the new state and its row."""
        cfg = self.cfg
        start = time.perf_counter()
        seeds = episode_seeds(cfg.seed, 0, s.update, self.episodes)
        batch = cut_to_budget(collect(self.real, self.task, self.sampling(s), seeds), cfg.budget - s.samples)
        collect_s = time.perf_counter() - start
        steps = int(batch.valid.sum())

        t = time.perf_counter()
        s.policy, s.policy_opt, _ = ppo_update(
            s.policy,
            s.policy_opt,
            batch.trajectory(),
            s.obs_norm,
            epochs=cfg.policy.epochs,
            action_std=self._std,
        )
        s.obs_norm = normalizer_update(s.obs_norm, jnp.asarray(batch.obs[batch.valid]))
        policy_s = time.perf_counter() - t

        s.update += 1
        s.samples += steps
        row: dict[str, Any] = {
            "iteration": s.update,
            "samples": s.samples,
            "phase_samples": steps,
            "policy_updates": 1,
            "steps_per_s": steps / max(collect_s, 1e-9),
            "collect_s": collect_s,
            "policy_s": policy_s,
        }
        if s.update % cfg.modelfree.eval_every == 0 or s.samples >= cfg.budget:
            row["eval_return"], row["eval_std"] = self.evaluate(s)
        row["wall_s"] = time.perf_counter() - start
        s.rows = s.rows + [row]
        return s, row
