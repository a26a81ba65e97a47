"""A plain multilayer perceptron as a pytree of arrays, shared by the world model and the policy.

Parameters are a tuple of layers ``(w [in, out], b [out])``; stacking them along a new leading
axis (``jax.vmap`` of :func:`mlp_init` over keys) gives an ensemble that :func:`mlp_apply`
evaluates with ``jax.vmap``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

Params = tuple[tuple[jax.Array, jax.Array], ...]


def mlp_init(key: jax.Array, sizes: Sequence[int], out_scale: float = 1.0) -> Params:
    """Initialise an MLP with layer sizes ``sizes = [in, hidden…, out]``.

    Weights are LeCun-normal (std ``1/sqrt(fan_in)``), biases zero; the last layer's weights are
    multiplied by ``out_scale`` (a small value keeps an initial policy close to zero mean).
    """
    keys = jax.random.split(key, len(sizes) - 1)
    layers = []
    for i, (k, fan_in, fan_out) in enumerate(zip(keys, sizes[:-1], sizes[1:], strict=True)):
        w = jax.random.normal(k, (fan_in, fan_out)) / jnp.sqrt(fan_in)
        if i == len(sizes) - 2:
            w = w * out_scale
        layers.append((w, jnp.zeros((fan_out,))))
    return tuple(layers)


def mlp_apply(params: Params, x: jax.Array, activation: Callable = jax.nn.relu) -> jax.Array:
    """``x [..., in] -> [..., out]``; ``activation`` (ReLU) between layers, linear output.

    With NumPy parameters, inputs and activation (``lambda v: np.maximum(v, 0)``) it runs in NumPy:
    the policy acting in the real environment without a device round trip per step.
    """
    for w, b in params[:-1]:
        x = activation(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def member_count(params: Any) -> int:
    """``M``, the leading (member) axis of stacked parameters (``jax.vmap`` of :func:`mlp_init`);
    static, read from the first leaf."""
    return jax.tree_util.tree_leaves(params)[0].shape[0]
