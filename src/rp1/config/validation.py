"""Checking a :class:`~rp1.config.schema.Config` once, at the edge (CLI, Python API), before a run
touches anything: :func:`validate`."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import typing
from dataclasses import fields
from typing import Any
from collections.abc import Iterator

from rp1.config.methods import MATCHED_PHASE_LENGTH, MODEL_BASED_METHODS, MODEL_FREE, UNSET_PHASE_CAP, check_method
from rp1.config.presets import SCALES
from rp1.config.schema import FIRST_FEEDBACK, G_NORMALIZERS, Config
from rp1.config.settings import fit_settings, lambda_bandit, ppo_settings
from rp1.envs import Task
from rp1.envs import make as make_task
from rp1.envs.task import SOURCES
from rp1.errors import ConfigError
from rp1.imagination import bonus_function

SEED_LIMIT = 2**31 - 2**22
"""Seeds are in ``[0, SEED_LIMIT)``: ``jax.random.PRNGKey`` keeps only a seed's low 32 bits (larger
seeds would repeat smaller ones) and the agents add offsets of up to about 2·10⁶ for the
environments' seeds, so every seed derived from one stays a distinct non-negative int32."""

# Lower bounds of the values that count or size something (for a tuple: of every item); the
# fit's, PPO's and the bandit's own settings are checked where they are defined (rp1.config.settings).
AT_LEAST = {
    "budget": 1,
    "horizon": 0,
    "eval_episodes": 1,
    "model.members": 1,
    "model.hidden": 1,
    "model.max_epochs": 1,
    "model.max_train_samples": 1,
    "model.head_hidden": 1,
    "policy.hidden": 1,
    "policy.max_updates": 1,
    "policy.first_check": 1,
    "collect.phase_cap": 1,
    "collect.min_val_rollouts": 0,
    "lam.window": 1,
    "modelfree.workers": 1,
    "modelfree.envs": 1,
    "modelfree.eval_every": 1,
}
# Upper bounds of the same values, where a larger one cannot be right (it would only exhaust memory
# or time): far above the paper's scale (5 members of [1024, 1024], 50,000-step batches, 10⁷ samples).
AT_MOST = {
    "budget": 10**9,
    "horizon": 10**6,
    "eval_episodes": 10**4,
    "model.members": 100,
    "model.hidden": 16384,
    "model.batch_size": 10**6,
    "model.max_epochs": 10**5,
    "model.max_train_samples": 10**8,
    "model.head_hidden": 16384,
    "policy.hidden": 16384,
    "policy.batch_steps": 10**7,
    "policy.epochs": 1000,
    "policy.max_updates": 10**5,
    "collect.phase_cap": 10**8,
    "lam.window": 10**4,
    "modelfree.workers": 1024,
    "modelfree.envs": 10**4,
}
LAYERS = ("model.hidden", "model.head_hidden", "policy.hidden")
MAX_LAYERS = 16
"""Hidden layers (widths) a network may have: at least one, at most this many."""
POSITIVE = ("model.lr", "policy.lr", "policy.action_std", "lam.lr")


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


@contextlib.contextmanager
def _as_config_error(prefix: str) -> Iterator[None]:
    """A library's ``ValueError`` about one of its settings (``"name must …"``) as a ConfigError
    about the config key ``prefix + name``."""
    try:
        yield
    except ConfigError:
        raise
    except ValueError as err:
        raise ConfigError(f"{prefix}{err}") from None


def _values(section: Any, prefix: str = "") -> typing.Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` of every field of ``section`` and its nested sections."""
    for f in fields(section):
        value = getattr(section, f.name)
        if dataclasses.is_dataclass(value):
            yield from _values(value, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", value


def _task(cfg: Config) -> Task:
    """The task of ``cfg`` with its horizon; ConfigError if it cannot be made."""
    env, task = make_task(cfg.task, horizon=cfg.horizon)
    env.close()
    return task


def validate(cfg: Config) -> Config:
    """Raise ``ConfigError`` for any value a run would fail on; return ``cfg`` unchanged otherwise.

    Checks every constraint that does not need the file system: numbers are finite (``nan`` and
    ``±inf`` are refused everywhere), counts and sizes at least :data:`AT_LEAST` and at most
    :data:`AT_MOST`, networks with 1 to :data:`MAX_LAYERS` hidden layers, rates and scales
    positive, fractions in their ranges, the seed in ``[0, SEED_LIMIT)``, the task one that
    :func:`rp1.envs.make` can make, the settings of the fit, PPO, the bandit and the bonus as those
    pieces check them (:mod:`rp1.config.settings`), ``model.reward`` and ``model.done`` sources the
    task can give (:meth:`~rp1.envs.task.Task.source`), and ``policy.batch_steps`` at least the
    task's horizon for a model-based method (one imagined rollout), at least 1 for ``modelfree``.
    The message names the key, what is allowed and the value given.
    """
    matched = cfg.method in MODEL_BASED_METHODS and MODEL_BASED_METHODS[cfg.method].matched_phases
    _check(
        not matched or cfg.collect.phase_cap != UNSET_PHASE_CAP,
        f"method {cfg.method} has no matched phase length on {cfg.task} (only the paper's tasks have one: "
        f"{', '.join(MATCHED_PHASE_LENGTH)}); pass --set collect.phase_cap=N",
    )
    for key, value in _values(cfg):
        items = value if isinstance(value, tuple) else (value,)
        _check(all(math.isfinite(x) for x in items if isinstance(x, float)), f"{key} must be a finite number, got {value}")
        if key in AT_LEAST:
            _check(all(x >= AT_LEAST[key] for x in items), f"{key} must be >= {AT_LEAST[key]}, got {value}")
        if key in AT_MOST:
            _check(all(x <= AT_MOST[key] for x in items), f"{key} must be <= {AT_MOST[key]:,} (rp1's limit), got {value}")
        if key in LAYERS:
            _check(1 <= len(items) <= MAX_LAYERS, f"{key} must list 1 to {MAX_LAYERS} hidden layer widths, e.g. 200,200, got {value}")
        if key in POSITIVE:
            _check(value > 0, f"{key} must be > 0, got {value}")
    check_method(cfg.method)
    task = _task(cfg)
    _check(0 <= cfg.seed < SEED_LIMIT, f"seed must be in [0, {SEED_LIMIT}) (2**31 - 2**22), got {cfg.seed}")
    bonus_function(cfg.bonus)
    with _as_config_error("model."):
        fit_settings(cfg)
    with _as_config_error("policy."):
        ppo_settings(cfg)
    lam = cfg.lam
    with _as_config_error("lam."):
        lambda_bandit(cfg)
    _check(lam.mode in ("adaptive", "fixed"), f"lam.mode must be adaptive or fixed, got {lam.mode!r}")
    _check(0.0 <= lam.value <= 1.0, f"lam.value must be in [0, 1], got {lam.value}")
    _check(all(0.0 <= a <= 1.0 for a in lam.arms), f"lam.arms must be in [0, 1], got {lam.arms}")
    _check(0.0 in lam.arms or lam.mode == "fixed", "lam.arms must contain 0 (the first iteration's λ)")
    for key, value, allowed in (
        ("lam.first_feedback", lam.first_feedback, FIRST_FEEDBACK),
        ("lam.g_normalizers", lam.g_normalizers, G_NORMALIZERS),
        ("model.reward", cfg.model.reward, SOURCES),
        ("model.done", cfg.model.done, SOURCES),
        ("scale", cfg.scale, tuple(SCALES)),
    ):
        _check(value in allowed, f"{key} must be one of {', '.join(allowed)}, got {value!r}")
    col = cfg.collect
    _check(col.alpha >= 0.0, f"collect.alpha must be >= 0, got {col.alpha}")
    _check(col.noise_max >= 0.0, f"collect.noise_max must be >= 0, got {col.noise_max}")
    _check(0.0 < col.share <= 1.0, f"collect.share must be in (0, 1], got {col.share}")
    mf = cfg.modelfree
    _check(mf.envs % mf.workers == 0, f"modelfree.envs ({mf.envs}) must be a multiple of modelfree.workers ({mf.workers})")
    if cfg.method == MODEL_FREE:
        _check(cfg.policy.batch_steps >= 1, f"policy.batch_steps must be >= 1, got {cfg.policy.batch_steps}")
        return cfg
    _check(cfg.budget >= col.phase_cap, f"budget ({cfg.budget}) must be at least one phase (collect.phase_cap = {col.phase_cap})")
    uses_bonus = (lam.mode == "adaptive" and max(lam.arms) > 0) or lam.value > 0
    _check(cfg.model.members >= 2 or not uses_bonus, f"model.members must be >= 2 with a variance bonus, got {cfg.model.members}")
    task.source("reward", cfg.model.reward)
    task.source("done", cfg.model.done)
    _check(
        cfg.policy.batch_steps >= task.horizon,
        f"policy.batch_steps must be >= {task.horizon} (one imagined rollout of {cfg.task}'s horizon), got {cfg.policy.batch_steps}",
    )
    return cfg
