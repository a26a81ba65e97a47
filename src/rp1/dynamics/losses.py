"""The world model's losses in normalised state space: the fit's training/validation MSE and the
model-error feedback ``G`` of the λ bandit (algorithm.md §3, §6), and the learned heads' validation loss.

All dynamics errors compare the predicted ``norm(s')`` with the actual ``norm(s')`` (the state normaliser's
units, clipped to ±3), averaged over state dimensions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from rp1.core.nn import Params, member_count, mlp_apply
from rp1.core.normalizer import normalize
from rp1.dynamics.ensemble import Ensemble, model_inputs, next_normalized_states
from rp1.dynamics.heads import head_row_errors
from rp1.dynamics.parts import ModelParts
from rp1.dynamics.store import Dataset, padded_dataset

VAL_CHUNK = 8192


def row_errors(
    params: Params, model: Ensemble, obs: jax.Array, act: jax.Array, next_obs: jax.Array
) -> jax.Array:
    """One member's squared error per transition, averaged over state dimensions.

    ``params``: one member's (unstacked) parameters; ``obs [..., obs_dim]``, ``act [..., act_dim]``,
    ``next_obs [..., obs_dim]`` -> ``[...]``; ``model`` supplies only the normalisers.
    """
    y = mlp_apply(params, model_inputs(model, obs, act))
    err = next_normalized_states(model, obs, y) - normalize(model.obs_norm, next_obs)
    return jnp.mean(err**2, axis=-1)


def masked_member_losses(weights: ModelParts, model: Ensemble, data: Dataset) -> ModelParts:
    """Every member's mean dynamics MSE ``[M]`` and mean head loss ``[M]`` (``None`` without heads,
    see :func:`~rp1.dynamics.heads.head_row_errors`) over the valid rows of ``data``.

    ``weights``: the dynamics MLPs and heads, both stacked (leading axis ``M``). Rows are processed
    in chunks of :data:`VAL_CHUNK` so that memory stays bounded on large validation sets.
    """
    params, heads = weights.dynamics, weights.heads
    capacity = data.obs.shape[0]
    chunk = min(capacity, VAL_CHUNK)
    if capacity % chunk:
        raise ValueError(
            f"dataset capacity {capacity} is not a multiple of {chunk}; use padded_dataset"
        )

    def split(x: jax.Array | np.ndarray) -> jax.Array:
        return jnp.reshape(x, (-1, chunk, *x.shape[1:]))

    def masked_sum(err: jax.Array, row: jax.Array) -> jax.Array:
        return jnp.sum(jnp.where(row < data.n_valid, err, 0.0), axis=-1)

    def add_chunk(totals: ModelParts, xs: tuple[jax.Array, ...]) -> tuple[ModelParts, None]:
        obs, act, next_obs, rew, done, row = xs
        err = jax.vmap(row_errors, in_axes=(0, None, None, None, None))(
            params, model, obs, act, next_obs
        )
        head_err = None
        if heads is not None:
            head_err = jax.vmap(head_row_errors, in_axes=(0, None, None, None, None, None, None))(
                heads, model, obs, act, next_obs, rew, done
            )
        return jax.tree_util.tree_map(
            lambda t, e: t + masked_sum(e, row), totals, ModelParts(err, head_err)
        ), None

    zeros = jnp.zeros((member_count(params),))
    xs = tuple(
        split(x)
        for x in (data.obs, data.act, data.next_obs, data.rew, data.done, jnp.arange(capacity))
    )
    totals, _ = jax.lax.scan(add_chunk, ModelParts(zeros, None if heads is None else zeros), xs)
    return jax.tree_util.tree_map(lambda t: t / jnp.maximum(data.n_valid, 1), totals)


@jax.jit
def member_losses(model: Ensemble, data: Dataset) -> jax.Array:
    """Per-member validation MSE of ``model`` on ``data`` -> ``[M]`` (what the fit's early stopping
    compares, algorithm.md §3)."""
    return masked_member_losses(ModelParts(model.params), model, data).dynamics


def ensemble_error(losses: jax.Array) -> float:
    """The ensemble's error ``sqrt(mean_m MSE_m²)`` from its members' errors ``losses [M]`` (the
    formula of the bandit feedback G, algorithm.md §6, in whatever units ``losses`` are)."""
    return float(jnp.sqrt(jnp.mean(losses**2)))


def model_error(model: Ensemble, obs: np.ndarray, act: np.ndarray, next_obs: np.ndarray) -> float:
    """The bandit feedback ``G`` (algorithm.md §6): :func:`ensemble_error` of the members' errors
    ``MSE_m`` in normalised state space on ``obs [N, obs_dim]``, ``act [N, act_dim]``,
    ``next_obs [N, obs_dim]``, transitions the model has not yet seen."""
    return ensemble_error(member_losses(model, padded_dataset(obs, act, next_obs)))
