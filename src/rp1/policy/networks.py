"""The actor-critic: a Gaussian policy with a tanh mean and a fixed std, and a value network (algorithm.md §4).

Both networks read the normalised state ``norm(s)`` (the world model's state normaliser, clipped to
±3) and are plain :mod:`rp1.core.nn` MLPs with two hidden layers of 32 ReLU units:

- actor  ``norm(s) -> 32 -> 32 -> act_dim``, mean ``tanh(·)``; actions ``~ N(mean, std²)`` with a
  fixed ``std`` (0.5 while training in the model) that is an argument, not a learned parameter;
- critic ``norm(s) -> 32 -> 32 -> 1``, a separate network.

Evaluation and the stop rule use the mean action. Every function is batched over leading axes and
jittable; the public ones are already ``jax.jit``-ed so they can step a real environment directly.

Example::

    policy = policy_init(key, obs_dim=18, act_dim=6)
    a = act_mean(policy, model.obs_norm, obs)                  # [6] for obs [18]
    a, logp = act_sample(policy, model.obs_norm, obs, key, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from rp1.config.defaults import DEFAULT_ACTION_STD
from rp1.config.defaults import POLICY_HIDDEN as HIDDEN
from rp1.core.nn import Params, mlp_apply, mlp_init
from rp1.core.normalizer import Normalizer, normalize

ACTOR_OUT_SCALE = 0.01  # a near-zero initial mean: the first policy acts like pure noise
CRITIC_OUT_SCALE = 1.0


class Policy(struct.PyTreeNode):
    """Actor and critic parameters (two independent :mod:`rp1.core.nn` MLPs)."""

    actor: Params
    critic: Params


def policy_init(
    key: jax.Array, obs_dim: int, act_dim: int, hidden: Sequence[int] = HIDDEN
) -> Policy:
    """A fresh actor ``obs_dim -> hidden… -> act_dim`` and critic ``obs_dim -> hidden… -> 1``."""
    k_actor, k_critic = jax.random.split(key)
    return Policy(
        actor=mlp_init(k_actor, [obs_dim, *hidden, act_dim], ACTOR_OUT_SCALE),
        critic=mlp_init(k_critic, [obs_dim, *hidden, 1], CRITIC_OUT_SCALE),
    )


def is_finite(policy: Policy) -> bool:
    """Whether every parameter of ``policy`` is finite (not inf or NaN: its training diverged)."""
    return all(
        bool(np.isfinite(np.asarray(leaf)).all()) for leaf in jax.tree_util.tree_leaves(policy)
    )


@jax.jit
def act_mean(policy: Policy, obs_norm: Normalizer, obs: jax.Array) -> jax.Array:
    """Deterministic action ``tanh(actor(norm(s)))``: ``obs [..., obs_dim] -> [..., act_dim]``."""
    return jnp.tanh(mlp_apply(policy.actor, normalize(obs_norm, obs)))


def host_actor(policy: Policy, obs_norm: Normalizer) -> Callable[[np.ndarray], np.ndarray]:
    """The deterministic actor of :func:`act_mean` as a NumPy function ``obs [..., obs_dim] ->
    action [..., act_dim]``, for stepping real environments without a device call per step."""
    actor = jax.device_get(policy.actor)
    mean, std, clip = np.asarray(obs_norm.mean), np.asarray(obs_norm.std), obs_norm.clip
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    return lambda obs: np.tanh(mlp_apply(actor, np.clip((obs - mean) / std, -clip, clip), relu))


def device_actor(policy: Policy, obs_norm: Normalizer) -> Callable[[np.ndarray], np.ndarray]:
    """The deterministic actor of :func:`act_mean` as a NumPy function ``obs [..., obs_dim] ->
    action [..., act_dim]`` (float32) that runs the compiled JAX function on ``obs`` cast to float32."""
    return lambda obs: np.asarray(act_mean(policy, obs_norm, obs.astype(np.float32)))


@jax.jit
def value(policy: Policy, obs_norm: Normalizer, obs: jax.Array) -> jax.Array:
    """Critic estimate ``V(s)``: ``obs [..., obs_dim] -> [...]`` (units of normalised return)."""
    return mlp_apply(policy.critic, normalize(obs_norm, obs))[..., 0]


def gaussian_log_prob(mean: jax.Array, std: jax.Array | float, act: jax.Array) -> jax.Array:
    """Log-density of ``act`` under ``N(mean, std²·I)``, summed over the last axis: ``[...]``."""
    z = (act - mean) / std
    per_dim = -0.5 * z * z - jnp.log(std) - 0.5 * math.log(2 * math.pi)
    return per_dim.sum(-1)


def gaussian_entropy(std: jax.Array | float, act_dim: int) -> jax.Array:
    """Entropy (nats) of ``N(·, std²·I)`` in ``act_dim`` dimensions; a scalar."""
    return act_dim * (0.5 * math.log(2 * math.pi * math.e) + jnp.log(std))


@jax.jit
def act_sample(
    policy: Policy,
    obs_norm: Normalizer,
    obs: jax.Array,
    key: jax.Array,
    std: jax.Array | float = DEFAULT_ACTION_STD,
) -> tuple[jax.Array, jax.Array]:
    """Sample ``a ~ N(mean(s), std²)`` (not clipped); returns ``(a [..., act_dim], log π(a|s) [...])``."""
    mean = act_mean(policy, obs_norm, obs)
    act = mean + std * jax.random.normal(key, mean.shape, mean.dtype)
    return act, gaussian_log_prob(mean, std, act)
