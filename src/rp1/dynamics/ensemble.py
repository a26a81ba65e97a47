"""The ensemble world model: ``M`` MLPs held as one stacked pytree (algorithm.md §3).

Each member maps ``[norm(s), norm(a)]`` to a normalised delta ``y``; the predicted next state is
``denorm_s(norm(s) + denorm_Δ(y))``, i.e. ``norm(s') = norm(s) + y·σ_Δ + μ_Δ``.

Example::

    model = ensemble_init(key, obs_dim=18, act_dim=6, members=5, hidden=(1024, 1024))
    next_all = predict_all(model, obs, act)      # [5, ..., 18]
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import struct

from rp1.config.defaults import HIDDEN, MEMBERS
from rp1.core.nn import Params, member_count, mlp_apply, mlp_init
from rp1.core.normalizer import (
    STATE_CLIP,
    Normalizer,
    denormalize,
    normalize,
    normalizer_init,
)

ACTION_CLIP = 3.0


class Ensemble(struct.PyTreeNode):
    """World-model state: stacked member parameters (leading axis ``M``) and the normalisers; with
    learned reward / termination also the members' heads (leading axis ``M``) and the reward
    normaliser (:mod:`rp1.dynamics.heads`), ``None`` otherwise."""

    params: Params
    obs_norm: Normalizer
    act_norm: Normalizer
    delta_norm: Normalizer
    heads: Params | None = None
    rew_norm: Normalizer | None = None

    @property
    def members(self) -> int:
        """Ensemble size ``M``."""
        return member_count(self.params)


def ensemble_init(
    key: jax.Array,
    obs_dim: int,
    act_dim: int,
    members: int = MEMBERS,
    hidden: Sequence[int] = HIDDEN,
) -> Ensemble:
    """``members`` independently initialised MLPs ``obs_dim + act_dim -> hidden… -> obs_dim``."""
    sizes = [obs_dim + act_dim, *hidden, obs_dim]
    params = jax.vmap(lambda k: mlp_init(k, sizes))(jax.random.split(key, members))
    return Ensemble(
        params=params,
        obs_norm=normalizer_init(obs_dim, STATE_CLIP),
        act_norm=normalizer_init(act_dim, ACTION_CLIP),
        delta_norm=normalizer_init(obs_dim),
    )


def model_inputs(model: Ensemble, obs: jax.Array, act: jax.Array) -> jax.Array:
    """``[norm(s), norm(a)]``, shape ``[..., obs_dim + act_dim]``."""
    return jnp.concatenate([normalize(model.obs_norm, obs), normalize(model.act_norm, act)], -1)


def predict_normalized_deltas(params: Params, inputs: jax.Array) -> jax.Array:
    """Every member's raw output ``y``: ``inputs [..., in]`` (shared) -> ``[M, ..., obs_dim]``."""
    return jax.vmap(mlp_apply, in_axes=(0, None))(params, inputs)


def next_normalized_states(model: Ensemble, obs: jax.Array, y: jax.Array) -> jax.Array:
    """``norm(s') = norm(s) + y·σ_Δ + μ_Δ`` for outputs ``y [M, ..., obs_dim]``."""
    return normalize(model.obs_norm, obs) + denormalize(model.delta_norm, y)


def predict_all(model: Ensemble, obs: jax.Array, act: jax.Array) -> jax.Array:
    """Next states of every member (un-normalised): ``obs [..., obs_dim], act [..., act_dim]`` ->
    ``[M, ..., obs_dim]``."""
    y = predict_normalized_deltas(model.params, model_inputs(model, obs, act))
    return denormalize(model.obs_norm, next_normalized_states(model, obs, y))
