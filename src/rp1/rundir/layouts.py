"""Checkpoint layouts: how each rp1 laid out an agent's state in a checkpoint, and how this rp1
reads a checkpoint an earlier one wrote. The checkpoint's side of :mod:`rp1.config.migrations`, and
read through it: :meth:`rp1.rundir.files.RunDir.load_checkpoint` migrates the checkpoint's config
(:func:`~rp1.config.migrations.migrate`), then its layout (:func:`migrate_layout`), so an agent
only ever restores the layout of :data:`LAYOUT`.

====== =========================================================================================
layout the agent state (:mod:`rp1.rundir.checkpoints`)
====== =========================================================================================
1      written without a number (76fc41a to 2ef3b09): ``{"meta", "device", "host"}``; ``device``
       the JAX learner, ``host`` the model-based run's transition store (``obs_dim``,
       ``act_dim`` and each split's rows) and start states; ``meta`` the counters, λ, the NumPy
       streams' states (``rngs``; before ec35af3 the environments' apart, ``env_rng`` and
       ``eval_env_rng``, and the bandit's only in the bandit's state) and the bandit's state;
       before the evaluation grid no ``evaluations``, before learned heads no done flags
2      ``{"layout": 2, "meta", "device", "appended"}``: ``device`` the whole pytree of arrays
       (model-based: learner, start states, the bandit's weights), ``appended`` the store's rows,
       which only grow (an incremental checkpoint writes them once); ``meta`` every stream's state
       in ``rngs``
====== =========================================================================================

Each layout is read by upgrading it one step at a time (:data:`UPGRADES`): a step makes the next
layout of exactly the state the earlier one held, so the run resumes as it would have. A
checkpoint of a newer layout than this rp1's is refused (:class:`NewerLayout`). A new layout needs
``LAYOUT`` one higher, its row above and its step here (the fixture runs of ``tests/fixtures``
are read through every step).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rp1.acquisition.bandit import BanditWeights
from rp1.config.migrations import NewerSchema

LAYOUT = 2
"""The checkpoint layout this rp1 writes (:mod:`rp1.rundir.checkpoints`; here, so that reading a
run's files imports no JAX)."""
FIRST_LAYOUT = 1
"""The layout of a checkpoint that records none."""


class NewerLayout(NewerSchema):
    """A checkpoint written by a newer rp1 than this one, in a layout it does not read (exit code 2)."""


def written_layout(state: dict[str, Any], source: str) -> int:
    """The layout of the agent state ``state`` of a checkpoint (read from ``source``)."""
    layout = state.get("layout", FIRST_LAYOUT)
    if isinstance(layout, bool) or not isinstance(layout, int) or layout < FIRST_LAYOUT:
        raise ValueError(f"{source}: its layout must be a positive integer, got {layout!r:.40}")
    return layout


def migrate_layout(state: dict[str, Any], config: dict[str, Any], source: str) -> dict[str, Any]:
    """The agent state ``state`` of a checkpoint of the run of ``config`` (as this rp1 reads it),
    read from ``source``, in this rp1's layout: upgraded step by step from the layout it was
    written in. :class:`NewerLayout` naming ``source`` and both layouts if it is newer; what a
    step finds missing or malformed raises ``KeyError``, ``TypeError`` or ``ValueError`` (a
    damaged checkpoint)."""
    layout = written_layout(state, source)
    if layout > LAYOUT:
        raise NewerLayout(
            f"{source} was written by a newer rp1 (checkpoint layout {layout}; this rp1 reads "
            f"layouts up to {LAYOUT}): upgrade rp1 to resume it"
        )
    for step in range(layout, LAYOUT):
        state = UPGRADES[step](state, config)
    return state


def layout_1_to_2(state: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """Layout 1 as layout 2: a model-based run's learner, start states and bandit weights in one
    device pytree, every stream's state in ``rngs`` (the bandit's from the bandit's own state,
    which a run of layout 1 restored last), the store's rows as appended arrays; a model-free run's
    learner as it is. Missing evaluations are none."""
    meta = json.loads(state["meta"])
    meta.setdefault("evaluations", [])  # before the evaluation grid
    if "update" in meta:  # model-free: the learner is its whole device state
        return {**_layout_2(meta, state["device"]), "appended": {}}
    rngs = dict(meta.pop("rngs"))
    for old, name in (("env_rng", "env"), ("eval_env_rng", "eval_env")):
        if old in meta:  # before ec35af3
            rngs[name] = meta.pop(old)
    bandit = meta.pop("bandit")
    weights = None
    if bandit is not None:
        rngs["bandit"] = bandit["rng"]
        from flax import serialization  # imports JAX: only when an old layout is read

        weights = serialization.to_state_dict(
            BanditWeights.from_state_dict(bandit, config["lam"]["window"])
        )
    meta["rngs"] = rngs
    host = state["host"]
    device = {
        "learner": state["device"],
        "store": None,
        "start_obs": host["start_obs"],
        "bandit": weights,
    }
    store = {k: v for k, v in host["store"].items() if k not in ("obs_dim", "act_dim")}
    return {**_layout_2(meta, device), "appended": store}


def _layout_2(meta: dict[str, Any], device: Any) -> dict[str, Any]:
    return {"layout": 2, "meta": json.dumps(meta), "device": device}


UPGRADES: dict[int, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    1: layout_1_to_2,
}
"""The step from each layout to the next."""
