"""Pytrees of several runs stacked along a leading seed axis, for the compiled phases that advance
many seeds of one config in one program (``rp1 sweep --seeds-per-process N``).

A program of ``N > 1`` seeds runs its vmapped phases with :func:`program_batch` ``(N)`` entries
(a power of two, at least 2) in every iteration: the seeds that take part, then copies of the
first of them. The batch's size never changes during a program, so a seed's arithmetic does not
depend on how many seeds are still running or where in the batch it sits (a vmapped program
computes each entry alike; its entries share nothing). A program of one seed is never vmapped: a
run alone computes what it always has, with other kernels than a batch (its last bits differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import jax
import jax.numpy as jnp

T = TypeVar("T")

MIN_BATCH = 2
"""The smallest batch a vmapped program is run with (:func:`program_batch`)."""


def program_batch(seeds_per_process: int) -> int:
    """The batch size of a program of ``seeds_per_process ≥ 1`` seeds: 1 (not batched) for one
    seed, else the smallest power of two ``≥`` it, at least :data:`MIN_BATCH`."""
    if seeds_per_process < 1:
        raise ValueError(f"a program needs at least one seed, got {seeds_per_process}")
    if seeds_per_process == 1:
        return 1
    return max(MIN_BATCH, 1 << (seeds_per_process - 1).bit_length())


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
