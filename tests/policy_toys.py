"""Tiny deterministic world models and a point-mass task for the policy and imagination tests.

A toy model is a pytree with ``params [M]`` (one number per member) and ``obs_norm``, and a
``predict(model, obs [..., d], act [..., a]) -> [M, ..., d]`` function, the contract of
:func:`rp1.imagination.imagine`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from rp1.core.normalizer import Normalizer, normalizer_init
from rp1.envs.task import Task


@struct.dataclass
class ToyModel:
    """``params [M]``: each member's gain; ``obs_norm`` the state normaliser the policy reads."""

    params: jax.Array
    obs_norm: Normalizer


def toy_model(gains, obs_dim: int) -> ToyModel:
    """A toy model with one gain per member and an identity state normaliser (clip ±3)."""
    return ToyModel(jnp.asarray(gains, jnp.float32), normalizer_init(obs_dim, 3.0))


def _member_axis(model: ToyModel, obs: jax.Array) -> jax.Array:
    """Gains shaped ``[M, 1, …]`` to broadcast against ``obs [..., d]``."""
    return model.params.reshape(-1, *([1] * obs.ndim))


def sink_predict(model: ToyModel, obs: jax.Array, act: jax.Array) -> jax.Array:
    """Member ``j`` lowers ``obs[..., 0]`` by its gain and leaves the rest: ``[M, ..., d]``."""
    step = jnp.zeros(obs.shape[-1]).at[0].set(1.0)
    return obs[None] - _member_axis(model, obs) * step


def point_mass_predict(model: ToyModel, obs: jax.Array, act: jax.Array) -> jax.Array:
    """A 1-D point mass: member ``j`` moves the position by ``0.1·gain_j·a``: ``[M, ..., 1]``."""
    return obs[None] + 0.1 * _member_axis(model, obs) * act[None]


def position_reward(next_obs, action):
    """The reward is the position reached."""
    return next_obs[..., 0]


def never_done(next_obs):
    """The point mass never terminates."""
    return next_obs[..., 0] < -jnp.inf


POINT_MASS = Task(
    name="point-mass",
    obs_dim=1,
    act_dim=1,
    horizon=10,
    action_low=(-1.0,),
    action_high=(1.0,),
    dt=0.1,
    reward_fn=position_reward,
    done_fn=never_done,
)
