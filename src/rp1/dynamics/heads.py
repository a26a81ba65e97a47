"""Learned reward and termination heads of the world model (an rp1 extension; the paper is silent).

Member ``m`` of the ensemble may carry a small MLP head ``h_m``:
``[norm(s), norm(a), norm(s')] -> (ŷ, ℓ)``, the reward in the reward normaliser's units and the
termination logit (terminated where ``ℓ > 0``, i.e. probability > 0.5). The heads are stacked
like the members (leading axis ``M``) in :attr:`Ensemble.heads`, with the reward normaliser in
:attr:`Ensemble.rew_norm`; both are ``None`` in a model without heads.

Teacher forcing: the fit feeds the heads the true ``norm(s')`` (so a head learns the reward /
termination of states, not its member's errors, and its gradient never reaches the dynamics);
inside the model each head reads its own member's predicted ``s'``.

Example::

    model = with_heads(ensemble_init(key, 28, 8), head_key)
    model = refresh_reward_normalizer(model, all_rewards)
    rewards, dones = predict_heads(model, obs, act, predict_all(model, obs, act))   # [M, N] each
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

from rp1.config.defaults import HEAD_HIDDEN as HIDDEN
from rp1.core.nn import Params, mlp_apply, mlp_init
from rp1.core.normalizer import (
    denormalize,
    normalize,
    normalizer_fit,
    normalizer_init,
    standardize,
)
from rp1.dynamics.ensemble import Ensemble

REWARD, DONE = 0, 1  # output columns: normalised reward, termination logit


def with_heads(model: Ensemble, key: jax.Array, hidden: Sequence[int] = HIDDEN) -> Ensemble:
    """``model`` with freshly initialised heads ``2·obs_dim + act_dim -> hidden… -> 2``, one per
    member (LeCun-normal weights, zero biases), and a reward normaliser with no rows seen."""
    obs_dim, act_dim = model.obs_norm.mean.shape[0], model.act_norm.mean.shape[0]
    sizes = [2 * obs_dim + act_dim, *hidden, 2]
    heads = jax.vmap(lambda k: mlp_init(k, sizes))(jax.random.split(key, model.members))
    return model.replace(heads=heads, rew_norm=normalizer_init(1))


def refresh_reward_normalizer(
    model: Ensemble, rew: ArrayLike, mask: ArrayLike | None = None
) -> Ensemble:
    """Recompute the reward normaliser from all stored rewards ``rew [N]`` (or those ``mask [N]``
    selects), as the delta normaliser is (algorithm.md §2); a model without heads is returned
    unchanged."""
    if model.heads is None:
        return model
    assert model.rew_norm is not None  # set with the heads (with_heads)
    return model.replace(rew_norm=normalizer_fit(model.rew_norm, jnp.asarray(rew)[:, None], mask))


def head_inputs(model: Ensemble, obs: jax.Array, act: jax.Array, next_obs: jax.Array) -> jax.Array:
    """``[norm(s), norm(a), norm(s')]`` (clipped like the dynamics' inputs): ``[..., 2·obs_dim + act_dim]``."""
    return jnp.concatenate(
        [
            normalize(model.obs_norm, obs),
            normalize(model.act_norm, act),
            normalize(model.obs_norm, next_obs),
        ],
        -1,
    )


def head_row_errors(
    heads: Params,
    model: Ensemble,
    obs: jax.Array,
    act: jax.Array,
    next_obs: jax.Array,
    rew: jax.Array,
    done: jax.Array,
) -> jax.Array:
    """One member's head loss per transition: squared reward error in normalised units plus the
    binary cross-entropy of the termination logit against ``done`` (0/1), both in nats/units of
    one transition. ``heads``: one member's (unstacked) head; ``obs, next_obs [..., obs_dim]``,
    ``act [..., act_dim]``, ``rew, done [...]`` -> ``[...]``."""
    assert model.rew_norm is not None, "a model with heads (with_heads)"
    out = mlp_apply(heads, head_inputs(model, obs, act, next_obs))
    target = standardize(model.rew_norm, rew[..., None])[..., 0]
    bce = optax.sigmoid_binary_cross_entropy(out[..., DONE], done)
    return (out[..., REWARD] - target) ** 2 + bce


def predict_heads(
    model: Ensemble, obs: jax.Array, act: jax.Array, next_obs: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Member ``j``'s head on its own next state ``next_obs[j]``: rewards ``[M, ...]`` (env units)
    and termination flags ``[M, ...]`` (bool, probability > 0.5).

    ``next_obs [M, ..., obs_dim]``; ``obs [..., obs_dim]`` and ``act [..., act_dim]`` are shared by
    the members or per member (leading ``M``).
    """
    assert model.heads is not None and model.rew_norm is not None, "a model with heads (with_heads)"
    batch = next_obs.shape[:-1]
    obs = jnp.broadcast_to(obs, next_obs.shape)
    act = jnp.broadcast_to(act, (*batch, act.shape[-1]))
    out = jax.vmap(mlp_apply)(model.heads, head_inputs(model, obs, act, next_obs))
    reward = denormalize(model.rew_norm, out[..., REWARD : REWARD + 1])[..., 0]
    return reward, out[..., DONE] > 0.0
