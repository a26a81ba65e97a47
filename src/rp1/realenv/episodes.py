"""Episodes in the real environments: :func:`collect` runs them side by side and returns one
:class:`Episodes` batch ``[T, N, …]``; the policy enters as an :data:`ActFn`
(:func:`mean_policy`, :func:`noisy_policy`); :func:`evaluate` is the deterministic policy's
returns (algorithm.md §7)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from rp1.core.transitions import Transitions
from rp1.envs.task import Task
from rp1.realenv.environments import UNSEEDED, UNUSED, RealEnvs

ActFn = Callable[[np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]
"""``act_fn(obs [E, obs_dim], episode [E] int, t) -> (action [E, act_dim], log π [E])`` (NumPy)."""

MeanAction = Callable[[np.ndarray], np.ndarray]
"""``mean_action(obs [..., obs_dim]) -> action [..., act_dim]`` (NumPy)."""


class Episodes(NamedTuple):
    """Real episodes as columns, ``[T, N, …]`` (time, episode), ``T`` the step limit they ran
    under; steps after an episode ended are invalid (zeros)."""

    obs: np.ndarray  # [T, N, obs_dim] float32, state the action was taken in
    # [T, N, act_dim] float32, the policy's action before clipping (what logp refers to)
    act: np.ndarray
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
        """Every episode's steps as :class:`~rp1.core.transitions.Transitions` ``[T_k, …]``, with the
        actions the environment took (clipped to the task's bounds) and the termination flags."""
        low, high = task.action_bounds
        return [
            Transitions(
                self.obs[:n, k],
                np.clip(self.act[:n, k], low, high),
                self.reward[:n, k],
                self.next_obs[:n, k],
                self.done[:n, k],
            )
            for k, n in enumerate(self.lengths())
        ]

    def first_steps(self, steps: int) -> Episodes:
        """These episodes with only their first ``steps`` valid steps kept, counting episode by
        episode (the rest zeroed and invalid)."""
        lengths = self.lengths()
        # [N] steps kept per episode
        keep = np.clip(steps - (np.cumsum(lengths) - lengths), 0, lengths)
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


def collect(
    real: RealEnvs, act_fn: ActFn, seeds: np.ndarray, max_steps: int | None = None
) -> Episodes:
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

    def act(obs: np.ndarray, episode: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(mean_action(obs)), np.zeros(len(obs), np.float32)

    return act


def noisy_policy(mean_action: MeanAction, noise_std: float, rng: np.random.Generator) -> ActFn:
    """``a = mean(s) + noise_std·N(0, 1)`` (float64), the noise drawn from ``rng`` step by step
    (nothing drawn when ``noise_std == 0``), as an :data:`ActFn` (log-probabilities 0)."""

    def act(obs: np.ndarray, episode: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
        a = np.asarray(mean_action(obs), np.float64)
        if noise_std > 0:
            a = a + noise_std * rng.standard_normal(a.shape)
        return a, np.zeros(len(obs), np.float32)

    return act


def evaluate(
    real: RealEnvs, act_fn: ActFn, count: int, seeds: np.ndarray | None = None
) -> np.ndarray:
    """True returns ``[count]`` (float32) of ``count`` episodes of horizon H under ``act_fn`` (the
    deterministic policy, algorithm.md §7), in rounds of ``real.slots``; ``seeds [count]`` as in
    :func:`collect`, all :data:`UNSEEDED` when ``None``. Each round's returns are summed on their
    own (:meth:`Episodes.returns`), which fixes the float32 summation order."""
    seeds = np.full(count, UNSEEDED) if seeds is None else seeds
    rounds = range(0, count, real.slots)
    return np.concatenate(
        [collect(real, act_fn, seeds[first : first + real.slots]).returns() for first in rounds]
    )
