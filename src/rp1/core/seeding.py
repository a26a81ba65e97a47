"""Independent random streams of a run, all spawned from one ``numpy.random.SeedSequence(seed)``
(algorithm.md §7, "Randomness").

Every consumer (environment resets, collection noise, subsampling, the bandit, JAX keys, …) gets
its own child sequence, so no random choice is a function of another consumer's draws: drawing
more collection noise, say, never changes which λ the bandit picks. Children are spawned in the
order of the ``names`` given, so a name keeps its stream as long as the names before it stay.

Model-based runs (:mod:`rp1.agents.model_based`) draw every random choice from such streams. Model-free runs
(:mod:`rp1.agents.modelfree`) need no stream that carries over between updates: their key is
``jax.random.PRNGKey(seed)`` (:func:`run_key`) and every episode has its own reset seed
(:func:`episode_seeds`), so a batch of episodes is the same however it is spread over processes.

Example::

    streams = spawn_streams(seed, ("env", "noise", "bandit"))
    noise = np.random.default_rng(streams["noise"])
    env.reset(seed=int_seed(streams["env"]))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import jax


def spawn_streams(seed: int, names: Sequence[str]) -> dict[str, np.random.SeedSequence]:
    """``{name: child SeedSequence}`` of ``SeedSequence(seed)``, one independent child per name."""
    children = np.random.SeedSequence(seed).spawn(len(names))
    return dict(zip(names, children, strict=True))


def int_seed(stream: np.random.SeedSequence) -> int:
    """A 31-bit integer seed drawn from ``stream``, for APIs that take an int (Gymnasium's
    ``reset(seed=…)``, ``jax.random.PRNGKey``)."""
    return int(stream.generate_state(1)[0] >> 1)


def run_key(seed: int) -> jax.Array:
    """The JAX key of a model-free run: ``jax.random.PRNGKey(seed)``."""
    import jax

    return jax.random.PRNGKey(seed)


def episode_seeds(seed: int, stream: int, index: int, count: int) -> np.ndarray:
    """Reset seeds ``[count]`` of episodes ``0 … count−1`` of batch ``index`` of ``stream`` under
    run seed ``seed``; independent of how the episodes are spread over environments."""
    seq = np.random.SeedSequence([seed, stream, index])
    return np.array([int(s) for s in seq.generate_state(count, np.uint32) % (2**31 - 1)], np.int64)


def generator_from(state: Mapping[str, Any]) -> np.random.Generator:
    """A new generator whose bit generator is in ``state`` (a ``bit_generator.state``): the
    generator that state was read from, continuing where it was."""
    bits = getattr(np.random, state["bit_generator"])()
    bits.state = state
    return np.random.Generator(bits)
