"""An agent's checkpoint, packed and unpacked in one place (both agents use it).

A checkpoint is the dict :meth:`rp1.rundir.files.RunDir.save_checkpoint` writes as msgpack::

    {"meta": JSON text    counters, random-stream states, the bandit, the metric rows
     "device": {...}      the JAX state (a flax.struct pytree) as nested dicts of arrays
     "host": {...}}       NumPy state that stays on the host (transition store, start states)

Example::

    data = pack_checkpoint({"samples": 600, "rows": rows}, learner, {"start_obs": start_obs})
    meta, learner, host = unpack_checkpoint(data, fresh_learner)
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import jax
from flax import serialization

T = TypeVar("T")


def pack_checkpoint(
    meta: dict[str, Any], device: Any, host: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The checkpoint of a state: ``meta`` (JSON-serialisable), the ``device`` pytree and the
    ``host`` arrays (nested dicts of NumPy arrays and numbers)."""
    return {
        "meta": json.dumps(meta),
        "device": serialization.to_state_dict(device),
        "host": host or {},
    }


def unpack_checkpoint(
    data: dict[str, Any], template: T
) -> tuple[dict[str, Any], T, dict[str, Any]]:
    """``(meta, device, host)`` of a :func:`pack_checkpoint` dict; ``device`` takes ``template``'s
    structure (a state built the same way). Missing entries raise ``KeyError``, mismatched shapes
    ``ValueError``."""
    return json.loads(data["meta"]), restore_pytree(template, data["device"]), data["host"]


def restore_pytree(target: T, saved: dict[str, Any]) -> T:
    """``saved`` (a ``flax.serialization.to_state_dict``) restored into ``target``'s structure, as
    device arrays: NumPy leaves would make eager arithmetic run in NumPy, whose last bits differ
    from XLA's, and a resumed run would drift from an uninterrupted one."""
    return jax.device_put(serialization.from_state_dict(target, saved))
