"""What docs/extending.md's recipes add from outside rp1, for the tests that carry them out: an
exploration bonus named ``extension_examples:reward_range``, and a method that uses it,
``RP1_METHODS=extension_examples:RANGE``."""

from __future__ import annotations

import jax

from rp1.config import Method


def reward_range(rewards: jax.Array, next_norm: jax.Array) -> jax.Array:
    """The members' reward range per imagined step, ``max_j r_j − min_j r_j``: ``rewards [M, N]``,
    ``next_norm [M, N, obs_dim]`` (unused) -> ``[N]``."""
    del next_norm
    return rewards.max(0) - rewards.min(0)


NOT_A_FUNCTION = 3.0


RANGE = Method(
    name="rp1-range",
    label="RP1 (reward range)",
    lam="adaptive",
    lam_value=0.0,
    early_stop=True,
    bonus="extension_examples:reward_range",
)
"""RP1 with :func:`reward_range` as its bonus: λ chosen by the bandit, PCA early stopping."""
