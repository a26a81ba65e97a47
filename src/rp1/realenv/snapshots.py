"""The evaluation protocol: a trained policy as its agent evaluates it, so that every evaluation of
it, in the run or again later, runs the same code and gives the same numbers.

:class:`PolicySnapshot` is a policy with its observation normaliser, the way its agent evaluates
it (:data:`EVALUATORS`: the deterministic actor and the dtype of the returns) and what replays that
evaluation exactly (:class:`EvaluationEpisodes`). Both agents evaluate through
:meth:`PolicySnapshot.evaluate` (:func:`returns_summary` gives the mean and std a metrics row
holds), and so does ``rp1 evaluate`` when it replays a kept policy; a run keeps its snapshots in
policy files (:mod:`rp1.rundir.policy_files`).

Example::

    snapshot = PolicySnapshot(policy, obs_norm, "host-float64", EvaluationEpisodes(1, 10))
    mean, std = returns_summary(snapshot.evaluate(RealEnvs("hopper", slots=1, seed=0)))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rp1.core.normalizer import Normalizer
from rp1.core.seeding import episode_seeds, generator_from
from rp1.policy.networks import Policy, device_actor, host_actor
from rp1.realenv.environments import MakeEnv, RealEnvs
from rp1.realenv.episodes import MeanAction, evaluate, mean_policy

EVALUATORS: dict[str, tuple[Callable[[Policy, Normalizer], MeanAction], type]] = {
    # model-based agents: the NumPy actor, returns as float64
    "host-float64": (
        host_actor,
        np.float64,
    ),
    # model-free PPO: the compiled actor on float32 states, float32 returns
    "device-float32": (
        device_actor,
        np.float32,
    ),
}
"""How an agent evaluates a policy: its deterministic actor and the dtype of the returns (which
fixes the last digits of their mean and std)."""


@dataclass(frozen=True)
class EvaluationEpisodes:
    """How an evaluation's episodes ran, enough to run them again exactly: ``episodes`` episodes in
    rounds of ``slots`` environments (the batch shape of every actor call), reset either from
    ``seeds`` (``[episodes]``; ``seed_source = (seed, stream, index)`` of
    :func:`~rp1.core.seeding.episode_seeds` gives more), or, where ``seeds`` is ``None``, from the
    environments' own random streams in the states ``rng_states`` (``[slots]``)."""

    slots: int
    episodes: int
    seeds: tuple[int, ...] | None = None
    seed_source: tuple[int, int, int] | None = None
    rng_states: tuple[Mapping[str, Any], ...] | None = None

    @classmethod
    def seeded(
        cls, slots: int, seed_source: tuple[int, int, int], episodes: int
    ) -> EvaluationEpisodes:
        """Episodes reset with ``episode_seeds(*seed_source, episodes)``."""
        return cls(
            slots,
            episodes,
            tuple(int(s) for s in episode_seeds(*seed_source, episodes)),
            (*seed_source,),
        )

    def with_episodes(self, episodes: int) -> EvaluationEpisodes:
        """The same evaluation (as an agent records it: seeds with their source, or streams) with
        ``episodes`` episodes: the first ones are this one's, more continue its seeds or streams."""
        if self.seed_source is not None:
            return EvaluationEpisodes.seeded(self.slots, self.seed_source, episodes)
        return EvaluationEpisodes(self.slots, episodes, rng_states=self.rng_states)

    def envs(self, task: str, horizon: int, make_env: MakeEnv | None = None) -> RealEnvs:
        """Fresh environments of ``task`` (``horizon`` steps; made by ``make_env``, see
        :class:`~rp1.realenv.RealEnvs`) to replay in, their streams restored."""
        real = RealEnvs(task, self.slots, 1, horizon=horizon, make_env=make_env)
        if self.rng_states is not None:
            real.use_generators([generator_from(state) for state in self.rng_states])
        return real

    def to_json(self) -> dict[str, Any]:
        return {
            "slots": self.slots,
            "episodes": self.episodes,
            "seeds": self.seeds,
            "seed_source": self.seed_source,
            "rng_states": self.rng_states,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvaluationEpisodes:
        tup = lambda v: None if v is None else tuple(v)  # noqa: E731
        return cls(
            data["slots"],
            data["episodes"],
            tup(data["seeds"]),
            tup(data["seed_source"]),
            tup(data["rng_states"]),
        )


@dataclass(frozen=True)
class PolicySnapshot:
    """A policy as its agent evaluates it: parameters, the normaliser it reads, the evaluator (a
    key of :data:`EVALUATORS`) and the replay of its evaluation (``None``: none recorded)."""

    policy: Policy
    obs_norm: Normalizer
    evaluator: str
    replay: EvaluationEpisodes | None = None

    def actor(self) -> MeanAction:
        """The deterministic actor ``obs [..., obs_dim] -> action [..., act_dim]`` (unclipped)."""
        return EVALUATORS[self.evaluator][0](self.policy, self.obs_norm)

    def evaluate(self, real: RealEnvs, replay: EvaluationEpisodes | None = None) -> np.ndarray:
        """True returns ``[episodes]`` of the deterministic policy in ``real``, the episodes of
        ``replay`` (default: its own; unseeded resets draw from ``real``'s streams as they are), in
        the evaluator's dtype (:func:`returns_summary` gives mean and std)."""
        replay = replay or self.replay
        assert replay is not None, "no evaluation recorded: pass the episodes to replay"
        seeds = None if replay.seeds is None else np.asarray(replay.seeds, np.int64)
        returns = evaluate(real, mean_policy(self.actor()), replay.episodes, seeds)
        return returns.astype(EVALUATORS[self.evaluator][1])


def returns_summary(returns: np.ndarray) -> tuple[float, float]:
    """``(mean, std)`` of returns ``[episodes]``, computed in their dtype."""
    return float(returns.mean()), float(returns.std())
