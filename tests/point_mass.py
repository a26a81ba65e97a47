"""A user's own task for the tests: a point mass on a plane pushed towards the origin.

``POINT_MASS`` (reward and termination given) and ``POINT_MASS_UNKNOWN_REWARD`` (both learned) are
what ``--env point_mass:POINT_MASS`` names; the other specs are bad on purpose.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete

from rp1.envs import TaskSpec, never_done

DT = 0.1  # s per step
FORCE = 1.0  # largest force per axis (unit mass)
HORIZON = 50


class PointMass(gym.Env):
    """State ``[x, y, vx, vy]``; action a force ``[fx, fy]`` in ``[-1, 1]²``; semi-implicit Euler
    steps of :data:`DT`; reward ``−(x² + y²)`` of the state reached. Starts at rest, uniformly in
    ``[−1, 1]²``."""

    observation_space = Box(-np.inf, np.inf, (4,), np.float64)
    action_space = Box(-FORCE, FORCE, (2,), np.float32)
    dt = DT

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._state = np.concatenate([self.np_random.uniform(-1.0, 1.0, 2), np.zeros(2)])
        return self._state.copy(), {}

    def step(self, action):
        force = np.clip(action, -FORCE, FORCE)
        velocity = self._state[2:] + DT * force
        self._state = np.concatenate([self._state[:2] + DT * velocity, velocity])
        return self._state.copy(), float(reward(self._state, force)), False, False, {}


def reward(next_obs, action):
    """``−‖position‖²``: ``[..., 4], [..., 2] -> [...]``, NumPy or JAX."""
    return -(next_obs[..., :2] ** 2).sum(-1)


POINT_MASS = TaskSpec(PointMass, horizon=HORIZON, reward=reward, done=never_done)
POINT_MASS_UNKNOWN_REWARD = TaskSpec(PointMass, horizon=HORIZON)


class DiscretePointMass(PointMass):
    action_space = Discrete(4)


class UnboundedPointMass(PointMass):
    action_space = Box(-np.inf, np.inf, (2,), np.float32)


class ImagePointMass(PointMass):
    observation_space = Box(0, 255, (8, 8, 3), np.uint8)


class EmptyActionPointMass(PointMass):
    action_space = Box(-FORCE, FORCE, (0,), np.float32)


class EmptyObservationPointMass(PointMass):
    observation_space = Box(-np.inf, np.inf, (0,), np.float64)


class GrowingPointMass(PointMass):
    """Each environment observes one number more than the one made before it: a factory whose
    spaces change between calls."""

    made = 0

    def __init__(self):
        GrowingPointMass.made += 1
        self.observation_space = Box(-np.inf, np.inf, (4 + GrowingPointMass.made,), np.float64)


DISCRETE = TaskSpec(DiscretePointMass, horizon=HORIZON)
UNBOUNDED = TaskSpec(UnboundedPointMass, horizon=HORIZON)
IMAGE = TaskSpec(ImagePointMass, horizon=HORIZON)
EMPTY_ACTIONS = TaskSpec(EmptyActionPointMass, horizon=HORIZON)
EMPTY_OBSERVATIONS = TaskSpec(EmptyObservationPointMass, horizon=HORIZON)
GROWING = TaskSpec(GrowingPointMass, horizon=HORIZON)
NO_HORIZON = TaskSpec(PointMass)
NOT_A_SPEC = PointMass
