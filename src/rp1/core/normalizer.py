"""Running mean / standard deviation normalisers as pytrees with pure functions (algorithm.md §2).

Example::

    n = normalizer_init(3, clip=3.0)
    n = normalizer_update(n, batch)          # batch [B, 3]
    z = normalize(n, x)                      # (x - mean) / std, clipped to ±3
    z_raw = standardize(n, x)                # (x - mean) / std, unclipped
    x_back = denormalize(n, z)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from jax.typing import ArrayLike

VAR_FLOOR = 1e-4
STATE_CLIP = 3.0
"""The clip of every state normaliser (the world model's, the policy's): normalised states in ±3."""


class Normalizer(struct.PyTreeNode):
    """Running statistics of a ``[dim]`` quantity.

    ``mean``/``var`` ``[dim]``, ``count`` ``[]`` (float, number of rows seen). ``clip`` (static) bounds
    normalised values to ``±clip``; ``inf`` means no clipping.
    """

    mean: jax.Array
    var: jax.Array
    count: jax.Array
    clip: float = struct.field(pytree_node=False, default=float("inf"))

    @property
    def std(self) -> jax.Array:
        """``sqrt(max(var, 1e-4))``, shape ``[dim]``."""
        return jnp.sqrt(jnp.maximum(self.var, VAR_FLOOR))


def normalizer_init(dim: int, clip: float = float("inf")) -> Normalizer:
    """Zero mean, unit variance, no rows seen yet."""
    return Normalizer(jnp.zeros((dim,)), jnp.ones((dim,)), jnp.zeros(()), clip)


def normalizer_update(n: Normalizer, x: ArrayLike) -> Normalizer:
    """Fold a batch ``x [..., dim]`` into the running statistics (Chan et al.'s parallel update)."""
    x = jnp.reshape(x, (-1, n.mean.shape[0]))
    b = x.shape[0]
    if b == 0:
        return n
    batch_mean = x.mean(0)
    batch_var = x.var(0)
    total = n.count + b
    delta = batch_mean - n.mean
    mean = n.mean + delta * b / total
    m2 = n.var * n.count + batch_var * b + delta**2 * n.count * b / total
    return n.replace(mean=mean, var=m2 / total, count=total)


def normalizer_fit(n: Normalizer, x: ArrayLike) -> Normalizer:
    """Statistics recomputed from scratch on ``x [..., dim]`` (keeps ``clip``)."""
    return normalizer_update(normalizer_init(n.mean.shape[0], n.clip), x)


def standardize(n: Normalizer, x: ArrayLike) -> jax.Array:
    """``(x − mean) / std`` over the last axis, unclipped."""
    return (x - n.mean) / n.std  # type: ignore[return-value]  # NumPy x too: jax.Array's __array_priority__ wins


def normalize(n: Normalizer, x: ArrayLike) -> jax.Array:
    """``clip((x − mean) / std, ±clip)`` over the last axis."""
    return jnp.clip(standardize(n, x), -n.clip, n.clip)


def denormalize(n: Normalizer, z: jax.Array) -> jax.Array:
    """``z · std + mean``: the inverse of :func:`normalize` inside the clip range."""
    return z * n.std + n.mean
