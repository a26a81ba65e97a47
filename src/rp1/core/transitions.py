"""Real transitions, as the real environments collect them and the world model's store keeps them."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Transitions(NamedTuple):
    """Unpadded transitions ``(s, a, r, s', done)``: ``obs [N, obs_dim]``, ``act [N, act_dim]``,
    ``rew [N]``, ``next_obs [N, obs_dim]`` (float32) and ``done [N]`` (bool, the episode
    terminated at ``s'``; ``None`` when built by hand: the store reads it as all False)."""

    obs: np.ndarray
    act: np.ndarray
    rew: np.ndarray
    next_obs: np.ndarray
    done: np.ndarray | None = None
