"""The interface every agent implements, so that one driver (:func:`rp1.train.drive`) runs them all.

An agent is built from a :class:`~rp1.config.Config`; its state is whatever the agent needs, as long
as it carries ``samples`` (real environment steps so far) and ``rows`` (every metrics row so far).
:class:`rp1.agents.model_based.ModelBasedAgent` (every model-based method) and
:class:`rp1.agents.modelfree.ModelFreeAgent` (PPO in the real environment) implement it.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

from rp1.envs import Task
from rp1.realenv.snapshots import PolicySnapshot


@runtime_checkable
class RunState(Protocol):
    """What the driver reads of an agent's state."""

    samples: int  # real environment steps collected so far
    # the metrics row of every step so far (rp1.rundir.files.METRIC_COLUMNS)
    rows: list[dict[str, Any]]
    # every evaluation of the grid so far (rp1.agents.grid; rp1.rundir.files.EVALUATION_COLUMNS)
    evaluations: list[dict[str, Any]]


S = TypeVar("S", bound=RunState)


@runtime_checkable
class Agent(Protocol[S]):
    """One method's training, one step at a time."""

    def initial_state(self) -> S:
        """A fresh run's state."""

    def step(self, state: S) -> tuple[S, dict[str, Any]]:
        """Advance one step (an outer iteration, a PPO update): the new state and its metrics row
        (the new state's ``rows`` end with it). Pure: ``state`` is left as it was, so it can be
        stepped again, compared or kept."""

    task: Task  # the task it trains on

    def policy_snapshot(self, state: S) -> PolicySnapshot:
        """The policy of ``state`` as the last step evaluated it, with what replays that
        evaluation (:mod:`rp1.realenv.snapshots`); :func:`rp1.train.drive` keeps it
        (:mod:`rp1.rundir.policy_files`)."""

    def checkpoint(self, state: S) -> dict[str, Any]:
        """``state`` as nested dicts of arrays and strings (:func:`rp1.rundir.checkpoints.pack_checkpoint`)."""

    def restore(self, data: dict[str, Any]) -> S:
        """The state a :meth:`checkpoint` holds; continuing from it gives what continuing from the
        original would have."""

    def close(self) -> None:
        """Release the environments (and worker processes)."""
