"""Run directories: ``config.json``, ``metrics.csv`` and an atomically written checkpoint.

Layout::

    RUN/
      config.json            the full resolved config
      metrics.csv            one row per outer iteration, flushed as it goes
      checkpoint/state.msgpack   everything needed to continue identically
      finished               written when the run reached its budget

The checkpoint also holds the metric rows written so far, so a resumed run rewrites
``metrics.csv`` from it: a kill between the two writes can neither lose nor duplicate a row.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import jax
from flax import serialization

from rp1.errors import ConfigError

METRIC_COLUMNS = (
    "iteration",
    "samples",
    "lambda",
    "eval_return",
    "eval_std",
    "model_return",
    "bonus",
    "model_error",
    "g_hat",
    "val_loss",
    "phase_samples",
    "residual",
    "policy_updates",
    "model_epochs",
    "steps_per_s",
    "fit_s",
    "policy_s",
    "collect_s",
    "wall_s",
)

# Wall-clock measurements: the only columns that differ between identical runs.
TIMING_COLUMNS = ("steps_per_s", "fit_s", "policy_s", "collect_s", "wall_s")

CONFIG = "config.json"
METRICS = "metrics.csv"
CHECKPOINT = Path("checkpoint") / "state.msgpack"
FINISHED = "finished"


class RunDir:
    """A run directory at ``path``; see the module docstring for its layout."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @property
    def checkpoint_path(self) -> Path:
        return self.path / CHECKPOINT

    def has_checkpoint(self) -> bool:
        return self.checkpoint_path.exists()

    def is_finished(self) -> bool:
        return (self.path / FINISHED).exists()

    def read_config(self) -> dict[str, Any] | None:
        """The stored config dict, or ``None`` if there is none."""
        file = self.path / CONFIG
        return json.loads(file.read_text()) if file.exists() else None

    def prepare(self, config: dict[str, Any], resume: bool) -> None:
        """Check that ``config`` may run here, then write ``config.json``.

        Without ``resume``, a directory that already holds a run (a config or metrics) is refused
        unless it holds the same config and never started. With ``resume``, there must be a
        checkpoint written under the same config. Nothing is written before the checks pass.
        """
        stored = self.read_config()
        if resume:
            if stored is None or not self.has_checkpoint():
                raise ConfigError(f"--resume: no run to resume in {self.path}")
            if stored != config:
                raise ConfigError(f"--resume: {self.path} holds a run of another config ({config_diff(stored, config)})")
            return
        if stored is not None and stored != config:
            raise ConfigError(
                f"{self.path} holds a run of another config ({config_diff(stored, config)}); "
                "choose another --out or pass --resume with the same settings"
            )
        if stored is not None and (self.has_checkpoint() or (self.path / METRICS).exists()):
            raise ConfigError(f"{self.path} already holds this run; pass --resume to continue it")
        self.path.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.path / CONFIG, json.dumps(config, indent=2).encode())

    def write_metrics(self, rows: list[dict[str, Any]]) -> None:
        """Rewrite ``metrics.csv`` with ``rows`` (used when starting or resuming)."""
        with open(self.path / METRICS, "w", newline="") as f:
            writer = csv.DictWriter(f, METRIC_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(_clean(r) for r in rows)

    def append_metrics(self, row: dict[str, Any]) -> None:
        """Append one row and flush it to disk."""
        with open(self.path / METRICS, "a", newline="") as f:
            csv.DictWriter(f, METRIC_COLUMNS, extrasaction="ignore").writerow(_clean(row))
            f.flush()
            os.fsync(f.fileno())

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Write ``state`` (nested dicts of arrays, numbers, strings) atomically."""
        self.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.checkpoint_path, serialization.msgpack_serialize(state))

    def load_checkpoint(self) -> dict[str, Any]:
        """The state saved by :meth:`save_checkpoint`."""
        return serialization.msgpack_restore(self.checkpoint_path.read_bytes())

    def mark_finished(self) -> None:
        (self.path / FINISHED).write_text("")


def restore_pytree(target: Any, saved: dict[str, Any]) -> Any:
    """``saved`` (a ``flax.serialization.to_state_dict``) restored into ``target``'s structure, as
    device arrays: NumPy leaves would make eager arithmetic run in NumPy, whose last bits differ
    from XLA's, and a resumed run would drift from an uninterrupted one."""
    return jax.device_put(serialization.from_state_dict(target, saved))


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    return {k: ("" if v is None else v) for k, v in row.items()}


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def config_diff(old: dict, new: dict, prefix: str = "") -> str:
    """A short description of the first differing keys of two config dicts."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            inner = config_diff(a, b, f"{prefix}{key}.")
            if inner:
                out.append(inner)
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} there, {b!r} now")
    return "; ".join(out[:3])
