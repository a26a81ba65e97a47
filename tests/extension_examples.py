"""What EXTENDING.md's recipes add from outside rp1, for the tests that carry them out: an
exploration bonus named ``extension_examples:reward_range``."""

from __future__ import annotations

import jax


def reward_range(rewards: jax.Array, next_norm: jax.Array) -> jax.Array:
    """The members' reward range per imagined step, ``max_j r_j − min_j r_j``: ``rewards [M, N]``,
    ``next_norm [M, N, obs_dim]`` (unused) -> ``[N]``."""
    del next_norm
    return rewards.max(0) - rewards.min(0)


NOT_A_FUNCTION = 3.0
