"""Real-environment episodes: collection phases with per-episode noise and early stopping (SPEC §5),
and deterministic evaluation (SPEC §7).

The policy enters as ``mean_action(obs [obs_dim]) -> action [act_dim]`` (NumPy in, NumPy out), so
any policy — a jitted JAX actor, a NumPy MLP, a scripted controller — can drive collection.
"""

from __future__ import annotations

import time
from typing import Callable, NamedTuple

import gymnasium as gym
import numpy as np

from rp1.acquisition import PhaseEarlyStop
from rp1.envs.task import Task

MeanAction = Callable[[np.ndarray], np.ndarray]


class Episode(NamedTuple):
    """One rollout: ``obs [T, obs_dim]``, ``act [T, act_dim]`` (clipped), ``rew [T]``, ``next_obs [T, obs_dim]``."""

    obs: np.ndarray
    act: np.ndarray
    rew: np.ndarray
    next_obs: np.ndarray


class Phase(NamedTuple):
    """A collection phase: its episodes, total steps, last PCA residual (or None) and steps/s."""

    episodes: list[Episode]
    samples: int
    residual: float | None
    steps_per_s: float


def run_episode(
    env: gym.Env,
    task: Task,
    mean_action: MeanAction,
    max_steps: int,
    noise_std: float = 0.0,
    rng: np.random.Generator | None = None,
) -> Episode:
    """One episode of at most ``max_steps``: ``a = clip(mean(s) + noise_std·N(0, 1))``, the noise
    drawn from ``rng`` (needed only when ``noise_std > 0``)."""
    low, high = task.action_bounds
    obs, _ = env.reset()
    rows = []
    for _ in range(max_steps):
        act = np.asarray(mean_action(obs), np.float64)
        if noise_std > 0:
            act = act + noise_std * rng.standard_normal(act.shape)
        act = np.clip(act, low, high)
        next_obs, rew, terminated, truncated, _ = env.step(act)
        rows.append((obs, act, rew, next_obs))
        obs = next_obs
        if terminated or truncated:
            break
    obs_, act_, rew_, next_ = zip(*rows)
    return Episode(
        np.asarray(obs_, np.float32),
        np.asarray(act_, np.float32),
        np.asarray(rew_, np.float32),
        np.asarray(next_, np.float32),
    )


def collect_phase(
    env: gym.Env,
    task: Task,
    mean_action: MeanAction,
    rng: np.random.Generator,
    *,
    cap: int = 3000,
    alpha: float = 5e-4,
    noise_max: float = 3.0,
    share: float = 0.99,
) -> Phase:
    """Whole episodes until ``cap`` steps, or until an episode's PCA residual against the earlier
    episodes' ``[s, a]`` rows falls below ``alpha`` (``alpha = 0``: never). Each episode draws its
    noise std from ``U(0, noise_max)``. The last episode is cut to fit the cap."""
    stopper = PhaseEarlyStop(alpha, share)
    episodes: list[Episode] = []
    samples = 0
    start = time.perf_counter()
    while samples < cap:
        std = rng.uniform(0.0, noise_max)
        episode = run_episode(env, task, mean_action, min(task.horizon, cap - samples), std, rng)
        episodes.append(episode)
        samples += len(episode.rew)
        if stopper.add(np.concatenate([episode.obs, episode.act], axis=1)):
            break
    elapsed = time.perf_counter() - start
    return Phase(episodes, samples, stopper.last_residual, samples / max(elapsed, 1e-9))


def evaluate(env: gym.Env, task: Task, mean_action: MeanAction, episodes: int = 10) -> tuple[float, float]:
    """Mean and std of the true return of ``episodes`` deterministic episodes of horizon H."""
    returns = [float(run_episode(env, task, mean_action, task.horizon).rew.sum()) for _ in range(episodes)]
    return float(np.mean(returns)), float(np.std(returns))
