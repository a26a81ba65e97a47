"""Pytrees of several runs stacked along a leading seed axis, for the compiled phases that advance
many seeds of one config in one program (``rp1 sweep --seeds-per-process N``).

A program of ``N > 1`` seeds runs its vmapped phases with ``N`` entries in every iteration: the
seeds that take part, then copies of the first of them (:func:`stacked`). The batch's size never
changes during a program, so a seed's arithmetic does not depend on how many seeds are still
running or where in the batch it sits (a vmapped program computes each entry alike; its entries
share nothing). A program of one seed is never vmapped: a run alone computes what it always has,
with other kernels than a batch (its last bits differ, as they differ between batches of two
sizes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import jax
import jax.numpy as jnp

T = TypeVar("T")
R = TypeVar("R")


def stacked(trees: Sequence[T], batch: int) -> T:
    """``trees`` (pytrees of one structure and shapes, at most ``batch``), padded to ``batch``
    entries by repeating the first, stacked along a new leading axis: each leaf ``[batch, ...]``."""
    if not 1 <= len(trees) <= batch:
        raise ValueError(f"{len(trees)} entries do not fit a batch of {batch}")
    padded = [*trees, *[trees[0]] * (batch - len(trees))]
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *padded)


def entry(tree: Any, i: int) -> Any:
    """Entry ``i`` of a stacked pytree (every leaf's row ``i``): on the device for JAX arrays, a
    view for NumPy arrays."""
    return jax.tree_util.tree_map(lambda leaf: leaf[i], tree)


def entries(tree: T, k: int) -> list[T]:
    """The first ``k`` entries of a stacked pytree (:func:`entry`): the seeds, without padding."""
    return [entry(tree, i) for i in range(k)]


SEEDS_AXIS = "seeds"
"""The name of the seed axis in a vmapped program, for :func:`cond_any`."""


def cond_any(
    pred: jax.Array,
    true_fn: Callable[[T], R],
    false_fn: Callable[[T], R],
    operand: T,
    seeds_axis: str | None = None,
) -> R:
    """``lax.cond(pred, true_fn, false_fn, operand)``, and under a vmap over ``seeds_axis`` its
    equal at a lower cost: vmapped, a cond whose ``pred`` differs between seeds runs both branches
    for every seed (a select); here ``true_fn`` runs once for the batch when any seed's ``pred``
    holds, and each seed keeps the branch its own ``pred`` chose. ``false_fn`` must be cheap (it
    runs for every seed). ``seeds_axis=None``: the plain cond, for a run alone."""
    if seeds_axis is None:
        return jax.lax.cond(pred, true_fn, false_fn, operand)
    pred = jnp.asarray(pred)
    anywhere = jax.lax.pmax(pred.astype(jnp.int32), seeds_axis) > 0
    taken, skipped = jax.lax.cond(anywhere, true_fn, false_fn, operand), false_fn(operand)
    return jax.tree_util.tree_map(lambda t, f: jnp.where(pred, t, f), taken, skipped)
