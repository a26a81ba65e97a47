"""An agent's checkpoint, packed and unpacked in one place (both agents use it).

A checkpoint is the dict :meth:`rp1.rundir.files.RunDir.save_checkpoint` writes as msgpack::

    {"layout": LAYOUT     the layout's version (rp1.rundir.layouts, which reads earlier ones)
     "meta": JSON text    the host's part: counters, random-stream states, the metric rows
     "device": {...}      the state's arrays (a flax.struct pytree) as nested dicts of arrays
     "appended": {...}}   arrays that only grow by rows appended at the end (the transition
                          store's), by name: what an incremental checkpoint writes once

Example::

    data = pack_checkpoint({"samples": 600, "rows": rows}, device, store.state_dict())
    meta, device, appended = unpack_checkpoint(data, fresh_device)
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import jax
import numpy as np
from flax import serialization

from rp1.rundir.layouts import LAYOUT

T = TypeVar("T")


def pack_checkpoint(
    meta: dict[str, Any], device: Any, appended: dict[str, np.ndarray] | None = None
) -> dict[str, Any]:
    """The checkpoint of a state: ``meta`` (JSON-serialisable), the ``device`` pytree and the
    ``appended`` arrays (by name; each only ever grows by rows at its end)."""
    return {
        "layout": LAYOUT,
        "meta": json.dumps(meta),
        "device": serialization.to_state_dict(device),
        "appended": appended or {},
    }


def unpack_checkpoint(
    data: dict[str, Any], template: T
) -> tuple[dict[str, Any], T, dict[str, Any]]:
    """``(meta, device, appended)`` of a :func:`pack_checkpoint` dict; ``device`` takes
    ``template``'s structure (a state built the same way). Missing entries raise ``KeyError``;
    another layout, metadata of the wrong type (:func:`check_progress`), arrays of another shape
    or dtype than the template's, and inf or NaN in them (:func:`restore_pytree`) raise
    ``ValueError`` naming what is wrong."""
    if data.get("layout") != LAYOUT:
        raise ValueError(f"its layout is {data.get('layout')!r}, not {LAYOUT}")
    meta = json.loads(data["meta"])
    check_progress(meta)
    appended = data["appended"]
    if not isinstance(appended, dict) or not all(
        isinstance(x, np.ndarray) for x in appended.values()
    ):
        raise ValueError(
            f"its appended arrays are a {type(appended).__name__}, not a map of arrays"
        )
    return meta, restore_pytree(template, data["device"]), appended


COUNTERS = ("iteration", "update", "samples")
"""The counters of a checkpoint's metadata (an agent has some of them): integers >= 0."""

STEPS = ("iteration", "update")
"""The counters of an agent's steps (model-based, model-free): each step appends one metric row."""


def check_progress(meta: Any) -> None:
    """``ValueError`` saying what is wrong unless ``meta`` is a map whose counters
    (:data:`COUNTERS`) are integers >= 0, whose ``rows`` are a list of maps from names to numbers
    (or ``None``), one per step its step counter (:data:`STEPS`) counts, and whose
    ``evaluations``, where present, are a list of such maps too."""
    if not isinstance(meta, dict):
        raise ValueError(f"its metadata is a {type(meta).__name__}, not a map")
    for key in COUNTERS:
        value = meta.get(key, 0)
        if type(value) is not int or value < 0:
            raise ValueError(f"its metadata has {key} = {_short(value)}, not an integer >= 0")
    for key in ("rows", "evaluations"):
        rows = meta.get(key, [])
        if not isinstance(rows, list) or not all(_is_row(row) for row in rows):
            raise ValueError(f"its metadata's {key} are not a list of metric rows: {_short(rows)}")
    rows = meta.get("rows", [])
    for key in STEPS:
        if key in meta and len(rows) != meta[key]:
            raise ValueError(
                f"its metadata has {key} = {meta[key]} but {len(rows)} metric rows (one per {key})"
            )


def _is_row(row: Any) -> bool:
    """Whether ``row`` is a metric row: a map from names to numbers or ``None``."""
    return isinstance(row, dict) and all(
        isinstance(key, str)
        and (value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)))
        for key, value in row.items()
    )


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…"


def restore_pytree(target: T, saved: dict[str, Any]) -> T:
    """``saved`` (a ``flax.serialization.to_state_dict``) restored into ``target``'s structure, each
    leaf of the kind of ``target``'s: a NumPy array where it holds one, else a device array (NumPy
    leaves would make eager arithmetic run in NumPy, whose last bits differ from XLA's, and a
    resumed run would drift from an uninterrupted one). ``target``'s leaves may be arrays or
    ``jax.ShapeDtypeStruct`` s (:func:`jax.eval_shape`: nothing of its size is allocated). ``ValueError`` naming the leaf if a saved array has another shape or dtype than
    ``target``'s, or holds inf or NaN (no state rp1 saves does)."""
    restored = serialization.from_state_dict(target, saved)
    wanted = jax.tree_util.tree_leaves_with_path(target)
    got = jax.tree_util.tree_leaves(restored)
    if len(wanted) != len(got):
        raise ValueError(f"it holds {len(got)} arrays where {len(wanted)} were expected")
    for (where, want), array in zip(wanted, got, strict=True):
        name = jax.tree_util.keystr(where)
        array = np.asarray(array)
        if (array.shape, array.dtype) != (tuple(want.shape), np.dtype(want.dtype)):
            raise ValueError(
                f"its array {name} is {array.dtype}{list(array.shape)}, expected {np.dtype(want.dtype)}{list(want.shape)}"
            )
        if np.issubdtype(array.dtype, np.inexact) and not np.isfinite(array).all():
            raise ValueError(f"its array {name} holds inf or NaN")
    return jax.tree_util.tree_map(
        lambda want, got: np.asarray(got) if isinstance(want, np.ndarray) else jax.device_put(got),
        target,
        restored,
    )
