"""The paper's four tasks: ``names()`` and ``make(name, seed) -> (env, task)`` (SPEC §1).

Example::

    env, task = rp1.envs.make("halfcheetah", seed=0)
    obs, _ = env.reset()
    obs2, r, terminated, truncated, _ = env.step(env.action_space.sample())
    assert abs(task.reward(obs2, a) - r) < 1e-6
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from rp1.envs import locomotion, rewards
from rp1.envs.task import Task
from rp1.errors import ConfigError

_SPECS = {
    # name: (env class, horizon, reward, done)
    "halfcheetah": (locomotion.RP1HalfCheetah, 100, rewards.halfcheetah_reward, rewards.never_done),
    "ant": (locomotion.RP1Ant, 100, rewards.ant_reward, rewards.ant_done),
    "hopper": (locomotion.RP1Hopper, 200, rewards.hopper_reward, rewards.never_done),
    "swimmer": (locomotion.RP1Swimmer, 200, rewards.swimmer_reward, rewards.never_done),
}


def names() -> list[str]:
    """The task names: ``halfcheetah``, ``ant``, ``hopper``, ``swimmer``."""
    return list(_SPECS)


def check_name(name: str) -> str:
    """Return ``name`` if it is a task, else raise ``ConfigError`` listing the valid names."""
    if name not in _SPECS:
        raise ConfigError(f"unknown task {name!r}; valid tasks: {', '.join(_SPECS)}")
    return name


def make(name: str, seed: int | None = None) -> tuple[gym.Env, Task]:
    """Build the real environment of ``name`` (limited to its horizon) and its :class:`Task`.

    With a ``seed``, the environment's RNG (reset noise) and its action space are seeded, so the
    first ``env.reset()`` and everything after it are reproducible without passing a seed again.
    Raises ``ValueError`` (a :class:`~rp1.errors.ConfigError`) for an unknown name.
    """
    cls, horizon, reward_fn, done_fn = _SPECS[check_name(name)]
    base = cls()
    env = gym.wrappers.TimeLimit(base, max_episode_steps=horizon)
    if seed is not None:
        base.np_random = np.random.default_rng(seed)
        env.action_space.seed(seed)
    space = base.action_space
    task = Task(
        name=name,
        obs_dim=int(base.observation_space.shape[0]),
        act_dim=int(space.shape[0]),
        horizon=horizon,
        action_low=tuple(float(x) for x in space.low),
        action_high=tuple(float(x) for x in space.high),
        dt=float(base.dt),
        reward_fn=reward_fn,
        done_fn=done_fn,
    )
    return env, task


__all__ = ["Task", "check_name", "make", "names"]
