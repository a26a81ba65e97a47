"""Checking a :class:`~rp1.config.schema.Config` once, at the edge (CLI, Python API), before a run
touches anything: :func:`validate`. Below the algorithm, as the rest of the config: it checks the
bandit's and the bonus's settings as those pieces would (:func:`bonus_reference`), without them."""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable, Collection
from dataclasses import fields
from typing import Any

from rp1.config.defaults import BONUS_NAMES
from rp1.config.methods import (
    MATCHED_PHASE_LENGTH,
    MODEL_FREE,
    UNSET_PHASE_CAP,
    check_method,
    model_based_methods,
)
from rp1.config.overrides import of_type, type_name
from rp1.config.presets import SCALES
from rp1.config.schema import ADAPTIVE, FIXED, Config, declared_range
from rp1.core.errors import ConfigError, shown
from rp1.envs import Task
from rp1.envs import make as make_task
from rp1.envs.lookup import import_reference

SEED_LIMIT = 2**31 - 2**22
"""Seeds are in ``[0, SEED_LIMIT)``: ``jax.random.PRNGKey`` keeps only a seed's low 32 bits (larger
seeds would repeat smaller ones) and the agents add offsets of up to about 2·10⁶ for the
environments' seeds, so every seed derived from one stays a distinct non-negative int32."""


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def bonus_reference(name: str) -> Callable[..., Any]:
    """The user's bonus function named ``name``, ``package.module:function`` (imported, so that
    every process of a sweep finds it, as a task's ``TaskSpec``; see docs/extending.md);
    ``ConfigError`` for a name that is neither this nor a built-in bonus (:data:`BONUS_NAMES`).
    :func:`rp1.imagination.bonus_function` resolves a built-in name itself and any other here."""
    if ":" not in name:
        raise ConfigError(
            f"unknown bonus {name!r}; valid bonuses: {', '.join(BONUS_NAMES)}, or package.module:function"
        )
    bonus = import_reference(name, "bonus")
    if not callable(bonus):
        raise ConfigError(
            f"bonus {name!r}: a {type(bonus).__name__}, not a function (rewards [M, N], next_norm [M, N, obs_dim]) -> [N]"
        )
    return bonus


def _values(
    section: Any, prefix: str = ""
) -> typing.Iterator[tuple[str, Any, Any, dict[str, Any]]]:
    """``(dotted key, value, field type, declared range)`` of every field of ``section`` and its
    nested sections (the range as :func:`~rp1.config.schema.declared_range` gives it)."""
    hints = typing.get_type_hints(type(section))
    for f in fields(section):
        value = getattr(section, f.name)
        if dataclasses.is_dataclass(value):
            yield from _values(value, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", value, hints[f.name], declared_range(type(section), f.name)


def _check_one_of(key: str, value: Any, allowed: Collection[str]) -> None:
    _check(value in tuple(allowed), f"{key} must be one of {', '.join(allowed)}, got {value!r}")


def check_fields(section: Any) -> None:
    """Raise ``ConfigError`` unless every field of ``section`` (a config or any frozen dataclass
    of fields, nested sections included) holds a value of its type
    (:func:`~rp1.config.overrides.of_type`: an ``int`` for a count, never a float), a finite
    number where it holds a float and a value in the range its field declares
    (:func:`~rp1.config.schema.ranged`; for a tuple: every item). The message names the dotted
    key, what is allowed and the value given."""
    for key, value, hint, declared in _values(section):
        got = shown(value)
        _check(of_type(value, hint), f"{key}={got}: expected {type_name(hint)}")
        items = value if isinstance(value, tuple) else (value,)
        _check(
            all(math.isfinite(x) for x in items if isinstance(x, float)),
            f"{key} must be a finite number, got {got}",
        )
        if "at_least" in declared:
            _check(
                all(x >= declared["at_least"] for x in items),
                f"{key} must be >= {declared['at_least']}, got {got}",
            )
        if "above" in declared:
            _check(
                all(x > declared["above"] for x in items),
                f"{key} must be > {declared['above']}, got {got}",
            )
        if "at_most" in declared:
            _check(
                all(x <= declared["at_most"] for x in items),
                f"{key} must be <= {declared['at_most']:,} (rp1's limit), got {got}",
            )
        if "layers" in declared:
            layers = declared["layers"]
            _check(
                1 <= len(items) <= layers,
                f"{key} must list 1 to {layers} hidden layer widths, e.g. 200,200, got {got}",
            )
        if "within" in declared:
            _check(
                all(x in declared["within"] for x in items),
                f"{key} must be in {declared['within']}, got {got}",
            )
        if "choices" in declared:
            _check_one_of(key, value, declared["choices"])


def _task(cfg: Config) -> Task:
    """The task of ``cfg`` with its horizon; ConfigError if it cannot be made."""
    env, task = make_task(cfg.task, horizon=cfg.horizon)
    env.close()
    return task


def validate(cfg: Config) -> Config:
    """Raise ``ConfigError`` for any value a run would fail on; return ``cfg`` unchanged otherwise.

    Checks every constraint that does not need the file system: numbers are finite (``nan`` and
    ``±inf`` are refused everywhere) and in the ranges their fields declare (:func:`check_fields`:
    counts and sizes, networks' hidden layers, rates, fractions, choices), the scale one of the
    presets' scales, the seed in ``[0, SEED_LIMIT)``, the task one that
    :func:`rp1.envs.make` can make, the bandit's arms (at least one) and the bonus (a built-in
    one or a function :func:`bonus_reference` imports), ``model.reward`` and ``model.done`` sources the
    task can give (:meth:`~rp1.envs.task.Task.source`), and ``policy.batch_steps`` at least the
    task's horizon for a model-based method (one imagined rollout), at least 1 for ``modelfree``.
    The message names the key, what is allowed and the value given.
    """
    methods = model_based_methods()
    matched = cfg.method in methods and methods[cfg.method].matched_phases
    _check(
        not matched or cfg.collect.phase_cap != UNSET_PHASE_CAP,
        f"method {cfg.method} has no matched phase length on {cfg.task} (only the paper's tasks have one: "
        f"{', '.join(MATCHED_PHASE_LENGTH)}); pass --set collect.phase_cap=N",
    )
    check_fields(cfg)
    check_method(cfg.method)
    task = _task(cfg)
    _check(
        0 <= cfg.seed < SEED_LIMIT,
        f"seed must be in [0, {SEED_LIMIT}) (2**31 - 2**22), got {shown(cfg.seed)}",
    )
    if cfg.bonus not in BONUS_NAMES:
        bonus_reference(cfg.bonus)
    lam = cfg.lam
    _check(len(lam.arms) >= 1, f"lam.arms must hold at least one value, got {tuple(lam.arms)}")
    _check(
        0.0 in lam.arms or lam.mode == FIXED, "lam.arms must contain 0 (the first iteration's λ)"
    )
    # the scales are the presets' (rp1.config.presets)
    _check_one_of("scale", cfg.scale, tuple(SCALES))
    col = cfg.collect
    mf = cfg.modelfree
    _check(
        mf.envs % mf.workers == 0,
        f"modelfree.envs ({mf.envs}) must be a multiple of modelfree.workers ({mf.workers})",
    )
    if cfg.method == MODEL_FREE:
        _check(
            cfg.policy.batch_steps >= 1,
            f"policy.batch_steps must be >= 1, got {cfg.policy.batch_steps}",
        )
        return cfg
    _check(
        cfg.budget >= col.phase_cap,
        f"budget ({cfg.budget:,}) must be at least one phase (collect.phase_cap = {col.phase_cap:,} real samples): "
        f"pass --budget {col.phase_cap} or more, or a smaller collect.phase_cap with --set",
    )
    uses_bonus = (lam.mode == ADAPTIVE and max(lam.arms) > 0) or lam.value > 0
    _check(
        cfg.model.members >= 2 or not uses_bonus,
        f"model.members must be >= 2 with a variance bonus, got {cfg.model.members}",
    )
    task.source("reward", cfg.model.reward)
    task.source("done", cfg.model.done)
    _check(
        cfg.policy.batch_steps >= task.horizon,
        f"policy.batch_steps must be >= {task.horizon} (one imagined rollout of {cfg.task}'s horizon), got {cfg.policy.batch_steps}",
    )
    return cfg
