"""``Task``: what the algorithm needs to know about a real environment (SPEC §1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Task:
    """Shapes, horizon, action bounds and the pure reward / termination of one task.

    Hashable, so it can be a static argument of ``jax.jit``. ``reward`` and ``done`` accept NumPy or
    JAX arrays ``next_obs [..., obs_dim]`` and ``action [..., act_dim]`` and return ``[...]``.
    ``reward_fn`` / ``done_fn`` are ``None`` where the task does not know them (any Gymnasium id):
    the world model learns them then.
    """

    name: str
    obs_dim: int
    act_dim: int
    horizon: int
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    dt: float
    reward_fn: Callable | None = None
    done_fn: Callable | None = None

    def reward(self, next_obs, action):
        """Reward of reaching ``next_obs`` with ``action``; shape ``[...]``."""
        return self.reward_fn(next_obs, action)

    def done(self, next_obs):
        """Termination flag of ``next_obs``; shape ``[...]``, all False for non-terminating tasks."""
        return self.done_fn(next_obs)

    @property
    def action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` as float32 arrays of shape ``[act_dim]``."""
        return np.asarray(self.action_low, np.float32), np.asarray(self.action_high, np.float32)
