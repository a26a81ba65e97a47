"""``rp1 testsets``: build the world-model test sets (:mod:`rp1.dynamics.testset`) from a documented
mix of behaviour, the same bytes every time on the same machine.

Per task, :data:`EPISODES` real episodes of each behaviour, in this order (``behaviour`` index):

0. the untrained policy (a fresh actor-critic of the paper's sizes, algorithm.md §4) with RP1's collection
   noise: a std drawn from U(0, 3) per episode (algorithm.md §5), as a run's first phase;
1. … for each preset of :data:`BEHAVIOUR_PRESETS` in order, its kept policy: its deterministic
   action (as it is evaluated), then its action with the collection noise.

The kept policies are the best policies of two small-scale runs on seed 100 (a tuning seed: the
report's seeds are 0–29), shipped as policy files beside the test sets
(``rp1/dynamics/testsets/policies/``): ``<task>-quick`` (RP1) and ``<task>-greedy-matched``, trained
with ``rp1 train --preset TASK-quick --seed 100`` and ``rp1 train --preset TASK-greedy --scale
small --budget 10000 --seed 100 --set collect.phase_cap=N`` (N the task's matched length: the
config of ``greedy-matched``; docs/algorithm.md §12). Every random
choice (the untrained policy's weights, reset seeds, noise) comes from ``SeedSequence([SEED,
crc32(task)])``, never from any run's streams.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from rp1.config.methods import GREEDY_MATCHED, QUICK
from rp1.core.normalizer import STATE_CLIP, normalizer_init
from rp1.core.seeding import int_seed
from rp1.dynamics.testset import SHIPPED, TestSet, write_test_set
from rp1.envs import Task
from rp1.envs import names as task_names
from rp1.policy.networks import HIDDEN, host_actor, policy_init
from rp1.realenv import MeanAction, RealEnvs
from rp1.realenv.episodes import collect, noisy_policy
from rp1.rundir.policy_files import read_policy

SEED = 26
"""The root of the test sets' random streams; runs never draw from it."""

EPISODES = 6
"""Episodes per behaviour."""

NOISE_MAX = 3.0
"""The collection noise's largest std (algorithm.md §5)."""

BEHAVIOUR_PRESETS = (QUICK, GREEDY_MATCHED)
"""The presets ``<task>-<name>`` whose kept (best) policy on seed 100 joins the mix, shipped as
``<task>-<name>-seed100.msgpack`` (:func:`policy_path`)."""

POLICIES = SHIPPED / "policies"


def policy_path(task: str, name: str) -> Path:
    """The shipped kept policy ``name`` of ``task``."""
    return POLICIES / f"{task}-{name}-seed100.msgpack"


def behaviours(
    task: Task, weights: np.random.SeedSequence, policies: Sequence[MeanAction]
) -> list[tuple[MeanAction, bool]]:
    """``(mean action, with collection noise)`` of every behaviour, in ``behaviour`` order; the
    untrained policy's weights drawn from ``weights``."""
    untrained = policy_init(
        jax.random.PRNGKey(int_seed(weights)), task.obs_dim, task.act_dim, HIDDEN
    )
    mixes = [(host_actor(untrained, normalizer_init(task.obs_dim, STATE_CLIP)), True)]
    for policy in policies:
        mixes += [(policy, False), (policy, True)]
    return mixes


def build_test_set(
    task: str, policies: Sequence[MeanAction], episodes: int = EPISODES, seed: int = SEED
) -> TestSet:
    """The test set of ``task`` from the untrained policy and ``policies`` (each ``obs [B,
    obs_dim] -> action [B, act_dim]``), ``episodes`` episodes per behaviour (module docstring)."""
    weights, resets, noise = np.random.SeedSequence([seed, zlib.crc32(task.encode())]).spawn(3)
    reset_rng, noise_rng = np.random.default_rng(resets), np.random.default_rng(noise)
    real = RealEnvs(task, 1)
    parts: list[tuple] = []
    try:
        for index, (mean_action, noisy) in enumerate(behaviours(real.task, weights, policies)):
            for _ in range(episodes):
                std = noise_rng.uniform(0.0, NOISE_MAX) if noisy else 0.0
                reset = reset_rng.integers(0, 2**31 - 1, size=1)
                (episode,) = collect(
                    real, noisy_policy(mean_action, std, noise_rng), reset
                ).transitions(real.task)
                parts.append(
                    (
                        episode.obs,
                        episode.act,
                        episode.next_obs,
                        np.full(len(episode.rew), index, np.int8),
                    )
                )
    finally:
        real.close()
    obs, act, next_obs, behaviour = (np.concatenate(column) for column in zip(*parts, strict=True))
    return TestSet(
        obs.astype(np.float32), act.astype(np.float32), next_obs.astype(np.float32), behaviour
    )


def build_shipped(task: str, out: Path) -> Path:
    """Build ``task``'s test set from its shipped kept policies into ``out/<task>.npz``."""
    policies = [read_policy(policy_path(task, name)) for name in BEHAVIOUR_PRESETS]
    path = out / f"{task}.npz"
    write_test_set(path, build_test_set(task, policies))
    return path


def shipped_tasks() -> tuple[str, ...]:
    """The tasks with a test set: the paper's."""
    return tuple(task_names())
