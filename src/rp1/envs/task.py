"""``Task``: what the algorithm needs to know about a real environment (algorithm.md §1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rp1.core.errors import ConfigError

if TYPE_CHECKING:
    from rp1.envs.rewards import ArrayT

KNOWN, LEARNED = "known", "learned"
RESOLVED_SOURCES = (KNOWN, LEARNED)
"""Where the model's reward / termination come from: ``known`` the task's function, ``learned``
the world model's heads."""
SOURCES = ("auto", *RESOLVED_SOURCES)
"""What ``model.reward`` / ``model.done`` may say: a resolved source, or ``auto``, the task's
function where it has one, else the heads (:meth:`Task.source`)."""


@dataclass(frozen=True)
class Task:
    """Shapes, horizon, action bounds and the pure reward / termination of one task.

    Hashable, so it can be a static argument of `jax.jit`. `reward(next_obs, action)` and
    `done(next_obs)` accept NumPy or JAX arrays `next_obs [..., obs_dim]` and
    `action [..., act_dim]` and return `[...]` (a `TypeError` where the task lacks the
    function).

    Attributes:
        name: The task's name, as [`make_env`][rp1.envs.make] took it.
        obs_dim: Observation size.
        act_dim: Action size.
        horizon: Steps per episode.
        action_low: The action bounds, `[act_dim]`.
        action_high: The action bounds, `[act_dim]`.
        dt: Seconds of simulated time per step (0 where the environment does not say).
        reward_fn: The reward, or `None` where the task does not know it (any Gymnasium id): the
            world model learns it then.
        done_fn: The termination, or `None` where the task does not know it.
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

    def reward(self, next_obs: ArrayT, action: ArrayT) -> ArrayT:
        """Reward of reaching ``next_obs`` with ``action``; shape ``[...]``. ``TypeError`` when the
        task has no reward function."""
        if self.reward_fn is None:
            raise TypeError(f"task {self.name} has no reward function")
        return self.reward_fn(next_obs, action)

    def done(self, next_obs: ArrayT) -> ArrayT:
        """Termination flag of ``next_obs``; shape ``[...]``, all False for non-terminating tasks.
        ``TypeError`` when the task has no termination function."""
        if self.done_fn is None:
            raise TypeError(f"task {self.name} has no termination function")
        return self.done_fn(next_obs)

    def source(self, what: str, mode: str) -> str:
        """Where the model's ``what`` (``"reward"`` or ``"done"``) comes from under ``mode`` (one of
        :data:`SOURCES`): ``"known"`` or ``"learned"``. ``ConfigError`` for an unknown mode, or
        ``known`` on a task without the function."""
        if mode not in SOURCES:
            raise ConfigError(f"model.{what} must be one of {', '.join(SOURCES)}, got {mode!r}")
        has_fn = (self.reward_fn if what == "reward" else self.done_fn) is not None
        if mode == KNOWN and not has_fn:
            noun = "reward" if what == "reward" else "termination"
            raise ConfigError(
                f"task {self.name} has no {noun} function; use model.{what}=learned or auto"
            )
        return KNOWN if mode == KNOWN or (mode == "auto" and has_fn) else LEARNED

    @property
    def action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` as float32 arrays of shape ``[act_dim]``."""
        return np.asarray(self.action_low, np.float32), np.asarray(self.action_high, np.float32)
