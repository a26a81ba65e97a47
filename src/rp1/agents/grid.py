"""The evaluation grid: the same evaluations for every method, whatever its phase length.

A method evaluates once per outer iteration (``eval_return`` of ``metrics.csv``), so a method of
short phases is evaluated more often than one of 3,000-sample phases, and the best of more noisy
evaluations is larger even between equally good policies. The grid evaluates every run at the same
sample counts: at each multiple ``g`` of ``eval.every`` real samples up to the budget, the policy
*in force* at ``g`` — the one that collected the ``g``-th real sample — is evaluated with
``eval_episodes`` deterministic episodes. A policy that collected ``s`` to ``s'`` samples is
evaluated at every grid point in ``(s, s']``.

Grid point ``g = k · every`` resets its episodes from ``episode_seeds(seed, GRID_STREAM, k, …)``
(:func:`~rp1.core.seeding.episode_seeds`): a stream of its own, the same episodes for every method
of a seed at that point, and nothing any other result of a run draws from, so every column of
``metrics.csv`` is what it is without the grid. Each evaluation is a row of ``evaluations.csv``
(:data:`~rp1.rundir.files.EVALUATION_COLUMNS`).
"""

from __future__ import annotations

from typing import Any

from rp1.realenv import RealEnvs
from rp1.realenv.snapshots import EvaluationEpisodes, PolicySnapshot, returns_summary

GRID_STREAM = 2
"""The second entry of a grid episode's seed triple (model-free runs use 0 for training episodes
and 1 for their own evaluations, :mod:`rp1.agents.modelfree`)."""


def grid_points(start: int, end: int, every: int) -> range:
    """The grid indices ``k`` whose point ``k · every`` lies in ``(start, end]`` (none when
    ``every`` is 0: no grid)."""
    if every <= 0 or end <= start:
        return range(0)
    return range(start // every + 1, end // every + 1)


def evaluate_on_grid(
    snapshot: PolicySnapshot,
    real: RealEnvs,
    seed: int,
    every: int,
    episodes: int,
    collected: tuple[int, int],
    iteration: int,
) -> list[dict[str, Any]]:
    """The grid rows of a policy that collected real samples ``collected = (s, s')`` (``snapshot``,
    produced by ``iteration``): one evaluation of ``episodes`` episodes in ``real`` per grid point in
    ``(s, s']``, as ``{"samples": g, "trained_on": s, "iteration", "eval_return", "eval_std"}``."""
    start, end = collected
    rows = []
    for k in grid_points(start, end, every):
        replay = EvaluationEpisodes.seeded(real.slots, (seed, GRID_STREAM, k), episodes)
        mean, std = returns_summary(snapshot.evaluate(real, replay))
        rows.append(
            {
                "samples": k * every,
                "trained_on": start,
                "iteration": iteration,
                "eval_return": mean,
                "eval_std": std,
            }
        )
    return rows
