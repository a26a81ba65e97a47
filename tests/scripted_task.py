"""A task whose episodes visit scripted states, for the PCA stop inside a collection phase (algorithm.md §5).

``--env scripted_task:SCRIPTED`` (or ``rp1.envs.make("scripted_task:SCRIPTED")``). Every
environment counts its episodes; episode ``k`` visits the states :func:`episode_states` ``(k)``,
whatever the actions. Actions are bounded by ±1e-9, so that the rows ``[s, a]`` (5 entries) are
the states followed by a 0 for any policy (up to 1e-9):

- episode 0: ±e₁ (alternating), episode 1: ±e₂, episode 2: ±e₁ then ±e₂, episode k ≥ 3: ±e₍ₖ₋₁₎
  (the four axes in turn: e₃, e₄, e₁, …).

Every set of these rows has scalar mean 0 and equal singular values per axis, so the principal
subspace of episodes 0 and 1 is span(e₁, e₂) and by hand:

- episode 1 against episode 0: residual 1 (all of it along e₂);
- episode 2 against episodes 0 and 1: residual 0; against episode 1 alone: 1/2 (its ±e₁ half);
- episode 3 against any earlier ones: 1.

With α between 0 and 1/2, a phase stops after episode 2 (12 samples). A rule that compared only
against the previous episode, stopped on ``r > α``, or never stopped would collect another number
of episodes.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box

from rp1.envs import TaskSpec, never_done

OBS_DIM = 4
HORIZON = 4


def axis(i: int) -> np.ndarray:
    """The unit vector along axis ``i`` (0-based, modulo :data:`OBS_DIM`)."""
    return np.eye(OBS_DIM)[i % OBS_DIM]


def episode_states(k: int) -> np.ndarray:
    """The states episode ``k`` visits: ``[HORIZON + 1, OBS_DIM]`` (its last one is never a row)."""
    pairs = {0: (0, 0), 1: (1, 1), 2: (0, 1)}.get(k, (k - 1, k - 1))  # (first half, second half)
    signs = np.array([1.0, -1.0, 1.0, -1.0, 1.0])[:, None]
    halves = [axis(pairs[0])] * 2 + [axis(pairs[1])] * 3
    return signs * np.stack(halves)


class ScriptedRows(gym.Env):
    """Episode ``k`` of this environment visits :func:`episode_states` ``(k)``; reward 0."""

    observation_space = Box(-np.inf, np.inf, (OBS_DIM,), np.float64)
    action_space = Box(-1e-9, 1e-9, (1,), np.float32)

    def __init__(self):
        self.episode = -1
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return episode_states(self.episode)[0], {}

    def step(self, action):
        self.t += 1
        return episode_states(self.episode)[self.t], 0.0, False, False, {}


def zero_reward(next_obs, action):
    """Reward 0: ``[..., OBS_DIM], [..., 1] -> [...]``, NumPy or JAX."""
    return 0.0 * next_obs[..., 0]


SCRIPTED = TaskSpec(ScriptedRows, horizon=HORIZON, reward=zero_reward, done=never_done)
