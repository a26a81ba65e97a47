"""Reward and termination of each task as pure functions of ``(next_obs, action)`` (algorithm.md §1).

Every function is written with array operators and methods only, so the same code runs on NumPy
arrays (inside the real environments) and on JAX arrays (inside the world model, under ``jit``).
All are batched over any leading axes: ``next_obs`` has shape ``[..., obs_dim]``, ``action``
``[..., act_dim]``; rewards and termination flags have shape ``[...]``.

The last observation entry is always the forward velocity of the step (m/s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    import jax

ArrayT = TypeVar("ArrayT", np.ndarray, "jax.Array")
"""NumPy or JAX arrays: every function here runs on both and returns the kind it is given."""

# Coefficients of algorithm.md §1, shared by the real environments and the model rewards.
HALFCHEETAH_CTRL = 0.1
ANT_CTRL = 0.5
ANT_HEALTHY = 1.0
ANT_CONTACT = 5e-4
ANT_Z_RANGE = (0.2, 1.0)
HOPPER_CTRL = 0.1
HOPPER_ALIVE = 1.0
HOPPER_Z_TARGET = 1.3
HOPPER_Z_WEIGHT = 3.0
SWIMMER_CTRL = 1e-4


def _sq_norm(action: ArrayT) -> ArrayT:
    return (action * action).sum(-1)


def halfcheetah_reward(next_obs: ArrayT, action: ArrayT) -> ArrayT:
    """``v_x − 0.1‖a‖²``."""
    return next_obs[..., -1] - HALFCHEETAH_CTRL * _sq_norm(action)


def ant_healthy(next_obs: ArrayT) -> ArrayT:
    """True where every entry is finite and the torso height ``obs[0]`` lies in [0.2, 1.0]."""
    finite = (abs(next_obs) < float("inf")).all(-1)
    z = next_obs[..., 0]
    return finite & (z >= ANT_Z_RANGE[0]) & (z <= ANT_Z_RANGE[1])


def ant_reward(next_obs: ArrayT, action: ArrayT) -> ArrayT:
    """``v_x − 0.5‖a‖² + 1·healthy``: Gymnasium's Ant reward without the contact cost."""
    return next_obs[..., -1] - ANT_CTRL * _sq_norm(action) + ANT_HEALTHY * ant_healthy(next_obs)


def ant_done(next_obs: ArrayT) -> ArrayT:
    """Ant terminates once it is unhealthy (non-finite state or torso out of [0.2, 1.0])."""
    return ~ant_healthy(next_obs)


def hopper_reward(next_obs: ArrayT, action: ArrayT) -> ArrayT:
    """``v_x + 1 − 0.1‖a‖² − 3(z − 1.3)²`` with ``z = obs[0]``; Hopper never terminates."""
    z = next_obs[..., 0]
    return (
        next_obs[..., -1]
        + HOPPER_ALIVE
        - HOPPER_CTRL * _sq_norm(action)
        - HOPPER_Z_WEIGHT * (z - HOPPER_Z_TARGET) ** 2
    )


def swimmer_reward(next_obs: ArrayT, action: ArrayT) -> ArrayT:
    """``v_tip − 1e-4‖a‖²``."""
    return next_obs[..., -1] - SWIMMER_CTRL * _sq_norm(action)


def never_done(next_obs: ArrayT) -> ArrayT:
    """The termination function of a task that never terminates (a [`TaskSpec`][rp1.envs.TaskSpec]'s
    `done`).

    Args:
        next_obs: Observations, `[..., obs_dim]` (NumPy or JAX).

    Returns:
        All-False flags, `[...]`.
    """
    return next_obs[..., 0] < float("-inf")  # False for every value, NaN included
