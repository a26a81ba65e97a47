"""The world model's normalisers brought up to date after each collection phase (algorithm.md §2),
in one of two ways, as a run's ``statistics`` key says (:data:`REFRESHES`):

- ``masked`` (new runs): the phase's rows and all stored transitions are padded to their size
  buckets (:func:`~rp1.dynamics.store.bucket_capacity`) and their statistics are masked
  reductions with the row count traced: compiled once per bucket, so an iteration whose data stays
  in its buckets compiles nothing;
- ``eager`` (runs begun before config schema 10, as rp1 refreshed them then): over the data as it
  is, every operation compiled for each row count; what is compiled for the stored data's count,
  new every iteration, is released afterwards (:func:`~rp1.core.executables.releasing`), so memory
  stays flat.

Both compute the same statistics; they sum in a different order, so their last bits differ.

Example::

    refresh = REFRESHES["masked"]
    model = refresh.inputs(model, phase_obs, phase_act)     # [N, obs_dim], [N', act_dim]
    store = store.add_phase(episodes)
    model = refresh.outputs(model, store.transitions())
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from rp1.config.defaults import EAGER, MASKED, Statistics
from rp1.core.executables import releasing
from rp1.core.normalizer import first_rows
from rp1.core.transitions import Transitions
from rp1.dynamics.ensemble import Ensemble
from rp1.dynamics.fit import refresh_delta_normalizer, update_input_normalizers
from rp1.dynamics.heads import refresh_reward_normalizer
from rp1.dynamics.store import padded_rows


class Refreshes(NamedTuple):
    """One way of refreshing the normalisers: ``inputs(model, obs [N, obs_dim], act [N', act_dim])``
    folds a phase's states and actions into the input normalisers; ``outputs(model, transitions)``
    recomputes the delta normaliser and, with learned heads, the reward normaliser from all stored
    transitions (with the input normalisers as they are)."""

    inputs: Callable[[Ensemble, np.ndarray, np.ndarray], Ensemble]
    outputs: Callable[[Ensemble, Transitions], Ensemble]


def _outputs(
    model: Ensemble,
    obs: ArrayLike,
    next_obs: ArrayLike,
    rew: ArrayLike,
    mask: ArrayLike | None = None,
) -> Ensemble:
    """The delta and reward normalisers refreshed from the rows of ``obs, next_obs [N, obs_dim]``,
    ``rew [N]`` (all, or those ``mask [N]`` selects)."""
    return refresh_reward_normalizer(
        refresh_delta_normalizer(model, obs, next_obs, mask), rew, mask
    )


@jax.jit
def _masked_inputs(
    model: Ensemble, obs: jax.Array, obs_rows: jax.Array, act: jax.Array, act_rows: jax.Array
) -> Ensemble:
    """:func:`update_input_normalizers` on the first ``obs_rows`` of ``obs [C, obs_dim]`` and
    the first ``act_rows`` of ``act [C', act_dim]``; compiled once per ``(C, C')``."""
    obs_mask = first_rows(obs.shape[0], obs_rows)
    return update_input_normalizers(model, obs, act, obs_mask, first_rows(act.shape[0], act_rows))


@jax.jit
def _masked_outputs(
    model: Ensemble, obs: jax.Array, next_obs: jax.Array, rew: jax.Array, rows: jax.Array
) -> Ensemble:
    """:func:`_outputs` on the first ``rows`` of ``[C, …]`` arrays; compiled once per ``C``."""
    return _outputs(model, obs, next_obs, rew, first_rows(obs.shape[0], rows))


def masked_inputs(model: Ensemble, obs: np.ndarray, act: np.ndarray) -> Ensemble:
    """:attr:`Refreshes.inputs` over the phase's rows padded to their buckets."""
    return _masked_inputs(model, padded_rows(obs), len(obs), padded_rows(act), len(act))


def masked_outputs(model: Ensemble, t: Transitions) -> Ensemble:
    """:attr:`Refreshes.outputs` over the stored transitions padded to their bucket."""
    return _masked_outputs(
        model, padded_rows(t.obs), padded_rows(t.next_obs), padded_rows(t.rew), len(t.obs)
    )


@releasing  # N grows every iteration: nothing compiled for one N is kept
def eager_outputs(model: Ensemble, t: Transitions) -> Ensemble:
    """:attr:`Refreshes.outputs` over the stored transitions as they are."""
    return _outputs(model, t.obs, t.next_obs, t.rew)


REFRESHES: dict[Statistics, Refreshes] = {
    MASKED: Refreshes(masked_inputs, masked_outputs),
    # a phase's row counts recur (whole episodes up to the phase cap): what they compile is kept
    EAGER: Refreshes(update_input_normalizers, eager_outputs),
}
"""The refreshes each value of ``statistics`` selects."""
