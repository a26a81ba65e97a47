"""Model-based collection phases (SPEC §5): whole noisy episodes until the cap or until the PCA
residual says a new episode adds nothing new."""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from rp1.acquisition import PhaseEarlyStop
from rp1.dynamics.store import Transitions
from rp1.realenv.environments import UNSEEDED, RealEnvs
from rp1.realenv.episodes import MeanAction, collect, noisy_policy

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
