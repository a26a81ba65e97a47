"""Running mean / standard deviation normalisers as pytrees with pure functions (algorithm.md §2).

A batch is folded in over all its rows, whose count is a shape (JAX compiles per count), or over
the rows a mask selects, whose count is traced (one compilation serves every count of a padded
shape): the same statistics, summed in a different order, so in different last bits. Which one a
run uses over its growing data is its ``statistics`` key (:data:`rp1.config.defaults.STATISTICS`).

Example::

    n = normalizer_init(3, clip=3.0)
    n = normalizer_update(n, batch)          # batch [B, 3]
    n = normalizer_update(n, padded, first_rows(C, count))   # padded [C, 3], its first count rows
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


def _combined(
    n: Normalizer, batch_mean: jax.Array, batch_var: jax.Array, b: int | jax.Array
) -> Normalizer:
    """``n`` and a batch of ``b`` rows with mean ``batch_mean`` and variance ``batch_var`` (``[dim]``
    each) as one set of statistics (Chan et al.'s parallel update)."""
    total = n.count + b
    delta = batch_mean - n.mean
    mean = n.mean + delta * b / total
    m2 = n.var * n.count + batch_var * b + delta**2 * n.count * b / total
    return n.replace(mean=mean, var=m2 / total, count=total)


def normalizer_update(n: Normalizer, x: ArrayLike, mask: ArrayLike | None = None) -> Normalizer:
    """Fold the rows of a batch ``x [..., dim]`` into the running statistics (Chan et al.'s
    parallel update): every row, or with ``mask [...]`` (bool) the rows where it is True (the
    others are never read; none selected: ``n`` unchanged).

    Without a mask the row count is a shape: JAX compiles the update for every count it sees.
    With one the count is traced: under ``jax.jit`` one compilation serves every mask of a shape.
    The two sum in a different order, so their last bits differ.
    """
    x = jnp.reshape(x, (-1, n.mean.shape[0]))
    if mask is not None:
        return _masked_update(n, x, jnp.reshape(mask, (-1, 1)))
    b = x.shape[0]
    if b == 0:
        return n
    return _combined(n, x.mean(0), x.var(0), b)


def _masked_update(n: Normalizer, x: jax.Array, selected: jax.Array) -> Normalizer:
    """:func:`normalizer_update` of the rows of ``x [B, dim]`` where ``selected [B, 1]``."""
    b = jnp.sum(selected, dtype=n.count.dtype)
    rows = jnp.maximum(b, 1.0)
    batch_mean = jnp.where(selected, x, 0.0).sum(0) / rows
    batch_var = jnp.where(selected, (x - batch_mean) ** 2, 0.0).sum(0) / rows
    updated = _combined(n, batch_mean, batch_var, b)
    return jax.tree_util.tree_map(lambda new, old: jnp.where(b > 0, new, old), updated, n)


def normalizer_fit(n: Normalizer, x: ArrayLike, mask: ArrayLike | None = None) -> Normalizer:
    """Statistics recomputed from scratch on the rows of ``x [..., dim]`` (with ``mask``, those
    it selects, as :func:`normalizer_update`), keeping ``clip``."""
    return normalizer_update(normalizer_init(n.mean.shape[0], n.clip), x, mask)


def first_rows(capacity: int, count: ArrayLike) -> jax.Array:
    """The mask ``[capacity]`` (bool) of the first ``count`` rows of a padded array."""
    return jnp.arange(capacity) < count


def standardize(n: Normalizer, x: ArrayLike) -> jax.Array:
    """``(x − mean) / std`` over the last axis, unclipped."""
    return (x - n.mean) / n.std  # type: ignore[return-value]  # NumPy x too: jax.Array's __array_priority__ wins


def normalize(n: Normalizer, x: ArrayLike) -> jax.Array:
    """``clip((x − mean) / std, ±clip)`` over the last axis."""
    return jnp.clip(standardize(n, x), -n.clip, n.clip)


def denormalize(n: Normalizer, z: jax.Array) -> jax.Array:
    """``z · std + mean``: the inverse of :func:`normalize` inside the clip range."""
    return z * n.std + n.mean
