"""Model-based collection phases (algorithm.md §5): whole noisy episodes until the cap or the budget, or
until the PCA residual says a new episode adds nothing new."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from rp1.acquisition import PhaseEarlyStop
from rp1.core.transitions import Transitions
from rp1.realenv.environments import UNSEEDED, RealEnvs
from rp1.realenv.episodes import MeanAction, collect, noisy_policy

STOP_PCA, STOP_CAP, STOP_BUDGET = 1, 2, 3
"""Why a phase ended (:attr:`Phase.stop`, the ``phase_stop`` column): its last episode's PCA
residual fell below α (also when that episode reached the cap or the budget too); it reached the
phase cap; it reached the run's budget (before or with the cap)."""


class Phase(NamedTuple):
    """A collection phase: its episodes (actions as taken), total steps, last PCA residual (or
    None), steps/s and why it ended (:data:`STOP_PCA`, :data:`STOP_CAP` or :data:`STOP_BUDGET`)."""

    episodes: list[Transitions]
    samples: int
    residual: float | None
    steps_per_s: float
    stop: int


@dataclass(frozen=True)
class CollectSettings:
    """How a phase collects (algorithm.md §5): at most ``cap`` steps; early stopping at PCA residual
    ``alpha`` (``0``: never) in the principal subspace that keeps ``share`` of the singular values;
    each episode's noise std drawn from ``U(0, noise_max)``."""

    cap: int
    alpha: float
    noise_max: float
    share: float


def collect_phase(
    real: RealEnvs,
    mean_action: MeanAction,
    rng: np.random.Generator,
    settings: CollectSettings,
    budget: int | None = None,
) -> Phase:
    """Whole episodes, one after another in ``real``'s first slot with unseeded resets, until
    ``settings.cap`` steps or the ``budget`` steps the run has left (``None``: no budget), or until
    an episode's PCA residual against the earlier episodes' ``[s, a]`` rows falls below
    ``settings.alpha`` (``0``: never). Each episode draws its noise std from
    ``U(0, settings.noise_max)`` with ``rng`` (:func:`noisy_policy`). The last episode is cut to
    fit the cap and the budget."""
    stopper = PhaseEarlyStop(settings.alpha, settings.share)
    limit = settings.cap if budget is None else min(settings.cap, budget)
    episodes: list[Transitions] = []
    samples, stop = 0, STOP_BUDGET if budget is not None and budget <= settings.cap else STOP_CAP
    start = time.perf_counter()
    while samples < limit:
        std = rng.uniform(0.0, settings.noise_max)
        act_fn = noisy_policy(mean_action, std, rng)
        (episode,) = collect(
            real, act_fn, np.array([UNSEEDED]), min(real.task.horizon, limit - samples)
        ).transitions(real.task)
        episodes.append(episode)
        samples += len(episode.rew)
        if stopper.add(np.concatenate([episode.obs, episode.act], axis=1)):
            stop = STOP_PCA
            break
    elapsed = time.perf_counter() - start
    return Phase(episodes, samples, stopper.last_residual, samples / max(elapsed, 1e-9), stop)
