"""The two parts of the world model that the fit trains and tracks separately (algorithm.md §3; the heads
are an rp1 extension): ``dynamics``, the members' MLPs, and ``heads``, their learned reward /
termination heads (``None`` in a model without heads).

:class:`ModelParts` pairs anything the fit has once per part: weights, Adam states, validation
losses ``[M]``, improvement flags ``[M]``. It is a ``flax.struct`` dataclass (a pytree whose leaves
flatten in field order, dynamics first) and checkpoints as the plain pair ``(dynamics, heads)`` it
replaced, so checkpoints written before it existed restore unchanged.

Example::

    weights = ModelParts(model.params, model.heads)
    losses = ModelParts(dynamics_mse, None)          # a model without heads
"""

from __future__ import annotations

from typing import Any

from flax import serialization, struct

FIELDS = ("dynamics", "heads")


class ModelParts(struct.PyTreeNode):
    """One value per part of the world model: ``dynamics`` and ``heads`` (``None`` without heads)."""

    dynamics: Any
    heads: Any = None


def _to_state_dict(parts: ModelParts) -> dict[str, Any]:
    """As a pair ``{"0": dynamics, "1": heads}`` (how flax writes a tuple)."""
    return {
        str(i): serialization.to_state_dict(getattr(parts, name)) for i, name in enumerate(FIELDS)
    }


def _from_state_dict(target: ModelParts, state: dict[str, Any]) -> ModelParts:
    restored = {
        name: serialization.from_state_dict(getattr(target, name), state[str(i)], name=str(i))
        for i, name in enumerate(FIELDS)
    }
    return target.replace(**restored)


serialization.register_serialization_state(
    ModelParts, _to_state_dict, _from_state_dict, override=True
)
