"""Shared fixtures: tiny configs that run the whole RP1 loop on CPU in seconds."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

TINY = {
    "model.hidden": "16,16",
    "model.members": "3",
    "model.max_epochs": "10",
    "model.batch_size": "64",
    "policy.hidden": "16,16",
    "policy.batch_steps": "300",
    "policy.max_updates": "13",
    "collect.phase_cap": "300",
    "eval_episodes": "2",
}


def tiny_sets(**extra: str) -> list[str]:
    """``--set`` arguments of the tiny config, plus ``extra`` (``key=value``)."""
    items = {**TINY, **{k.replace("__", "."): v for k, v in extra.items()}}
    return [f"{k}={v}" for k, v in items.items()]
