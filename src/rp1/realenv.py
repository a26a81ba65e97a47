"""The real environment, for every method: batched, seeded episodes (SPEC §5, §7, §8).

One collector, :func:`collect`, runs episodes of a task side by side in the ``slots`` environments
of a :class:`RealEnvs` and returns them as one :class:`Episodes` batch ``[T, N, …]`` (time,
episode). Model-based collection phases (:func:`collect_phase`: per-episode action noise and PCA
early stopping), evaluation (:func:`evaluate`) and model-free PPO batches all run through it.

The policy enters as ``act_fn(obs [E, obs_dim], episode [E] int, t) -> (action [E, act_dim],
log π [E])`` for the ``E`` slots (NumPy in and out; ``obs`` as the environments return it, float64),
called once per step; the environments step ``clip(action)`` to the task's bounds.
:func:`mean_policy` and :func:`noisy_policy` make such a function from a NumPy actor
``mean_action(obs [..., obs_dim]) -> [..., act_dim]`` (:func:`rp1.policy.host_actor`).

Seeds: episode ``k`` of a call resets its environment with ``seeds[k]``, or, where that is
:data:`UNSEEDED`, from the environment's own random stream (seeded once by ``RealEnvs(…, seed=…)``;
:meth:`RealEnvs.generators` gives the generators, :meth:`RealEnvs.use_generators` makes the
environments draw from others, e.g. an agent state's). Model-free PPO seeds every episode
(:func:`rp1.seeding.episode_seeds`), so which episodes run depends neither on ``slots`` nor on ``workers``
(``slots`` is still the batch shape of every policy call, so it moves the last digits). Model-based
runs use one slot and unseeded resets, one episode after another: a phase must stop before the next
episode starts, and every draw (action noise, reset noise) keeps its place in its stream.

Processes: with ``workers == 1`` the environments step in this process; otherwise in a Gymnasium
``AsyncVectorEnv`` of :class:`EnvGroup` s, one process per group, so that the processes exchange one
message per step and group instead of one per environment. Autoreset is off: the collector resets
every slot itself at the start of each round of ``slots`` episodes.

Example::

    real = RealEnvs("hopper", slots=1, seed=0)
    phase = collect_phase(real, host_actor(policy, obs_norm), np.random.default_rng(0),
                          cap=3000, alpha=5e-4, noise_max=3.0, share=0.99)
    returns = evaluate(real, mean_policy(host_actor(policy, obs_norm)), 10)      # [10]
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Callable, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

from rp1 import envs
from rp1.acquisition import PhaseEarlyStop
from rp1.dynamics.store import Transitions
from rp1.envs.task import Task

# ``fork`` would copy JAX's threads into the workers; a fork server starts them clean.
MP_CONTEXT = "forkserver"
UNUSED = -1  # the seed of a slot that runs no episode in a round
UNSEEDED = -2  # the seed of an episode that resets from its environment's own random stream

ActFn = Callable[[np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]
"""``act_fn(obs [E, obs_dim], episode [E] int, t) -> (action [E, act_dim], log π [E])`` (NumPy)."""

MeanAction = Callable[[np.ndarray], np.ndarray]
"""``mean_action(obs [..., obs_dim]) -> action [..., act_dim]`` (NumPy)."""


# --- environments -------------------------------------------------------------------------------


class EnvGroup(gym.Env):
    """``size`` real environments of one task stepped one after another, as one environment with
    batched observations ``[size, obs_dim]``, actions ``[size, act_dim]`` and rewards / flags
    ``[size]``. Environment ``i`` is made with seed ``seed + offset + i`` (unseeded without a
    ``seed``) and episodes of ``horizon`` steps (0: the task's own, see :func:`rp1.envs.make`). Slot ``i`` reads its episode seed ``seeds[offset + i]`` from ``reset``'s ``options``
    (:data:`UNSEEDED`: from its own stream); a slot whose episode ended (or that got
    :data:`UNUSED`) is no longer stepped: it keeps its last observation and returns reward 0. Only
    for :class:`RealEnvs` (no autoreset)."""

    def __init__(self, task_name: str, offset: int, size: int, seed: int | None = None, horizon: int = 0):
        self.envs = [envs.make(task_name, None if seed is None else seed + offset + i, horizon)[0] for i in range(size)]
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
                self._obs[i] = env.reset(seed=None if s == UNSEEDED else int(s))[0]
        return self._obs.copy(), {}

    def step(self, action: np.ndarray):
        size = len(self.envs)
        reward, terminated, truncated = np.zeros(size), np.zeros(size, bool), np.zeros(size, bool)
        for i in np.flatnonzero(self._running):
            self._obs[i], reward[i], terminated[i], truncated[i], _ = self.envs[i].step(action[i])
        self._running &= ~(terminated | truncated)
        return self._obs.copy(), reward, terminated, truncated, {}

    def generators(self) -> list[np.random.Generator]:
        """The generator every environment draws its reset noise from (the objects themselves)."""
        return [env.unwrapped.np_random for env in self.envs]

    def use_generators(self, generators: list[np.random.Generator]) -> None:
        """Make environment ``i`` draw from ``generators[i]`` from now on (the object, not a copy)."""
        for env, generator in zip(self.envs, generators, strict=True):
            env.unwrapped.np_random = generator

    def close(self):
        for env in self.envs:
            env.close()


class RealEnvs:
    """``slots`` real environments of ``task_name`` in ``workers`` :class:`EnvGroup` s of equal
    size: one in this process when ``workers == 1``, else one process each (``AsyncVectorEnv``,
    autoreset off). ``seed`` seeds the environments' own streams (slot ``i``: ``seed + i``);
    ``horizon`` (0: the task's own) limits their episodes.
    ``reset(seeds [slots]) -> obs [slots, obs_dim]`` and ``step(action [slots, act_dim]) -> (obs,
    reward, terminated, truncated)``, each ``[slots, …]``; ``task`` is the task's :class:`Task`."""

    def __init__(self, task_name: str, slots: int, workers: int = 1, seed: int | None = None, horizon: int = 0):
        size = slots // workers
        self.slots = slots
        probe, self.task = envs.make(task_name, horizon=horizon)
        probe.close()
        groups = [partial(EnvGroup, task_name, w * size, size, seed, horizon) for w in range(workers)]
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

    def _group(self) -> EnvGroup:
        if not isinstance(self._env, EnvGroup):
            raise ValueError("the environments' random streams are reachable with workers == 1 only")
        return self._env

    def generators(self) -> list[np.random.Generator]:
        """Every slot's own random stream, ``[slots]`` (:meth:`EnvGroup.generators`; ``workers ==
        1`` only)."""
        return self._group().generators()

    def use_generators(self, generators: list[np.random.Generator]) -> None:
        """Make every slot draw from ``generators [slots]`` (:meth:`EnvGroup.use_generators`;
        ``workers == 1`` only)."""
        self._group().use_generators(generators)

    def close(self) -> None:
        self._env.close()


# --- episodes -----------------------------------------------------------------------------------


class Episodes(NamedTuple):
    """Real episodes as columns, ``[T, N, …]`` (time, episode), ``T`` the step limit they ran
    under; steps after an episode ended are invalid (zeros)."""

    obs: np.ndarray  # [T, N, obs_dim] float32, state the action was taken in
    act: np.ndarray  # [T, N, act_dim] float32, the policy's action before clipping (what logp refers to)
    logp: np.ndarray  # [T, N] float32, log π(act | obs) (0 for a policy that reports none)
    reward: np.ndarray  # [T, N] float32, true env reward of the clipped action
    next_obs: np.ndarray  # [T, N, obs_dim] float32, state reached
    done: np.ndarray  # [T, N] bool, the episode terminated at this step
    valid: np.ndarray  # [T, N] bool, the step happened

    @classmethod
    def empty(cls, task: Task, steps: int, count: int) -> Episodes:
        """``count`` episodes of up to ``steps`` steps of ``task``, all zeros and invalid."""
        return cls(
            obs=np.zeros((steps, count, task.obs_dim), np.float32),
            act=np.zeros((steps, count, task.act_dim), np.float32),
            logp=np.zeros((steps, count), np.float32),
            reward=np.zeros((steps, count), np.float32),
            next_obs=np.zeros((steps, count, task.obs_dim), np.float32),
            done=np.zeros((steps, count), bool),
            valid=np.zeros((steps, count), bool),
        )

    def lengths(self) -> np.ndarray:
        """Steps of every episode: ``[N]`` int."""
        return self.valid.sum(0)

    def returns(self) -> np.ndarray:
        """Undiscounted return of every episode: ``[N]`` float32, summed over the steps that
        happened (which fixes NumPy's summation order, and so the last bits, for one episode)."""
        return self.reward[: self.lengths().max()].sum(0)

    def transitions(self, task: Task) -> list[Transitions]:
        """Every episode's steps as :class:`~rp1.dynamics.store.Transitions` ``[T_k, …]``, with the
        actions the environment took (clipped to the task's bounds) and the termination flags."""
        low, high = task.action_bounds
        return [
            Transitions(
                self.obs[:n, k], np.clip(self.act[:n, k], low, high), self.reward[:n, k], self.next_obs[:n, k], self.done[:n, k]
            )
            for k, n in enumerate(self.lengths())
        ]

    def first_steps(self, steps: int) -> Episodes:
        """These episodes with only their first ``steps`` valid steps kept, counting episode by
        episode (the rest zeroed and invalid)."""
        lengths = self.lengths()
        keep = np.clip(steps - (np.cumsum(lengths) - lengths), 0, lengths)  # [N] steps kept per episode
        valid = self.valid & (np.arange(self.valid.shape[0])[:, None] < keep)
        dropped = ~valid
        return Episodes(
            obs=np.where(dropped[..., None], 0, self.obs),
            act=np.where(dropped[..., None], 0, self.act),
            logp=np.where(dropped, 0, self.logp),
            reward=np.where(dropped, 0, self.reward),
            next_obs=np.where(dropped[..., None], 0, self.next_obs),
            done=self.done & valid,
            valid=valid,
        )


def collect(real: RealEnvs, act_fn: ActFn, seeds: np.ndarray, max_steps: int | None = None) -> Episodes:
    """Episodes ``k = 0 … len(seeds)−1``, reset with ``seeds[k]`` (or :data:`UNSEEDED`), in rounds
    of ``real.slots`` side by side, each at most ``max_steps`` steps (default: the horizon); each
    step calls ``act_fn`` once for all slots and steps the clipped actions. Returns
    :class:`Episodes` ``[max_steps, len(seeds), …]``."""
    task = real.task
    count, slots = len(seeds), real.slots
    steps = task.horizon if max_steps is None else max_steps
    batch = Episodes.empty(task, steps, count)
    low, high = task.action_bounds
    for first in range(0, count, slots):
        episode = np.arange(first, first + slots)
        used = episode < count
        obs = real.reset(np.where(used, seeds[np.minimum(episode, count - 1)], UNUSED))
        running = used.copy()
        for t in range(steps):
            act, logp = act_fn(obs, episode, t)
            next_obs, reward, terminated, truncated = real.step(np.clip(act, low, high))
            cols = episode[running]
            batch.obs[t, cols] = obs[running]
            batch.act[t, cols] = act[running]
            batch.logp[t, cols] = logp[running]
            batch.reward[t, cols] = reward[running]
            batch.next_obs[t, cols] = next_obs[running]
            batch.done[t, cols] = terminated[running]
            batch.valid[t, cols] = True
            running &= ~(terminated | truncated)
            if not running.any():
                break
            obs = next_obs
    return batch


def mean_policy(mean_action: MeanAction) -> ActFn:
    """The deterministic policy ``a = mean(s)`` as an :data:`ActFn` (log-probabilities 0)."""

    def act(obs, episode, t):
        return np.asarray(mean_action(obs)), np.zeros(len(obs), np.float32)

    return act


def noisy_policy(mean_action: MeanAction, noise_std: float, rng: np.random.Generator) -> ActFn:
    """``a = mean(s) + noise_std·N(0, 1)`` (float64), the noise drawn from ``rng`` step by step
    (nothing drawn when ``noise_std == 0``), as an :data:`ActFn` (log-probabilities 0)."""

    def act(obs, episode, t):
        a = np.asarray(mean_action(obs), np.float64)
        if noise_std > 0:
            a = a + noise_std * rng.standard_normal(a.shape)
        return a, np.zeros(len(obs), np.float32)

    return act


def evaluate(real: RealEnvs, act_fn: ActFn, count: int, seeds: np.ndarray | None = None) -> np.ndarray:
    """True returns ``[count]`` (float32) of ``count`` episodes of horizon H under ``act_fn`` (the
    deterministic policy, SPEC §7), in rounds of ``real.slots``; ``seeds [count]`` as in
    :func:`collect`, all :data:`UNSEEDED` when ``None``. Each round's returns are summed on their
    own (:meth:`Episodes.returns`), which fixes the float32 summation order."""
    seeds = np.full(count, UNSEEDED) if seeds is None else seeds
    rounds = range(0, count, real.slots)
    return np.concatenate([collect(real, act_fn, seeds[first : first + real.slots]).returns() for first in rounds])


# --- model-based collection phases (SPEC §5) ----------------------------------------------------


class Phase(NamedTuple):
    """A collection phase: its episodes (actions as taken), total steps, last PCA residual (or
    None) and steps/s."""

    episodes: list[Transitions]
    samples: int
    residual: float | None
    steps_per_s: float


def collect_phase(
    real: RealEnvs,
    mean_action: MeanAction,
    rng: np.random.Generator,
    *,
    cap: int,
    alpha: float,
    noise_max: float,
    share: float,
) -> Phase:
    """Whole episodes, one after another in ``real``'s first slot with unseeded resets, until
    ``cap`` steps, or until an episode's PCA residual against the earlier episodes' ``[s, a]`` rows
    falls below ``alpha`` (``alpha = 0``: never). Each episode draws its noise std from
    ``U(0, noise_max)`` with ``rng`` (:func:`noisy_policy`). The last episode is cut to fit the cap."""
    stopper = PhaseEarlyStop(alpha, share)
    episodes: list[Transitions] = []
    samples = 0
    start = time.perf_counter()
    while samples < cap:
        std = rng.uniform(0.0, noise_max)
        act_fn = noisy_policy(mean_action, std, rng)
        (episode,) = collect(real, act_fn, np.array([UNSEEDED]), min(real.task.horizon, cap - samples)).transitions(real.task)
        episodes.append(episode)
        samples += len(episode.rew)
        if stopper.add(np.concatenate([episode.obs, episode.act], axis=1)):
            break
    elapsed = time.perf_counter() - start
    return Phase(episodes, samples, stopper.last_residual, samples / max(elapsed, 1e-9))
