"""Which runs a command means, the rules written once: a preset, or a task with its method; the
``--set`` overrides and the options that are config values beside them; the seeds and names of a
sweep; the tree of run directories that ``report``, ``status`` and ``export`` read.

``rp1 train``, ``rp1 config`` (:func:`shown_config`) and ``rp1 sweep`` resolve their options here, and so may a script:
``config_of("hopper-rp1", None, None, seed=3)`` is ``rp1 train --preset hopper-rp1 --seed 3``'s
config. Where a run's directory goes is :func:`rp1.rundir.files.run_dir_under`'s; whether a run
there is started, resumed, skipped or refused, :meth:`rp1.rundir.files.RunDir.action`'s. The errors
name the options a user gave (``--method``, ``--seeds``), which the Python API's arguments mirror.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rp1.core.errors import ConfigError

if TYPE_CHECKING:
    from rp1.config.schema import Config

MAX_SEEDS = 10_000
"""Seeds a sweep may name at most."""

OPTION_KEYS = {
    "env_workers": "modelfree.workers",
    "horizon": "horizon",
    "seed": "seed",
    "budget": "budget",
}
"""The options that are config values (``--env-workers``, ``--horizon``, ``--seed``,
``--budget``), by name, and their config keys."""


def parse_sets(items: Sequence[str] | None) -> dict[str, str]:
    """``["a.b=1", "c=x"]`` -> ``{"a.b": "1", "c": "x"}``; a malformed item is a ConfigError."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def given_overrides(items: Sequence[str] | None, **options: int | None) -> dict[str, str]:
    """``--set`` items (:func:`parse_sets`), then the options that are config values, where given:
    an option wins over ``--set`` of its key (:data:`OPTION_KEYS`)."""
    return {
        **parse_sets(items),
        **{OPTION_KEYS[name]: str(value) for name, value in options.items() if value is not None},
    }


def method_goes_with_task(many: bool = False) -> ConfigError:
    """The error of a method given without a task (``--method`` without ``--env``; with ``many``,
    a sweep's ``--methods`` without ``--envs``)."""
    s = "s" if many else ""
    return ConfigError(f"--method{s} goes with --env{s}; a preset names its method")


def config_of(preset: str | None, env: str | None, method: str | None, **resolved: Any) -> Config:
    """The config of `rp1 train --preset PRESET` or of `rp1 train --env TASK --method METHOD`.

    `config_of("hopper-rp1", None, None, seed=3)` is `rp1 train --preset hopper-rp1 --seed 3`'s;
    `config_of(None, "Pendulum-v1", "greedy")`, `rp1 train --env Pendulum-v1 --method greedy`'s.
    A task named `package.module:attribute` may be a module of the working directory.

    Args:
        preset: A preset (`rp1 presets`), or `None` with `env`.
        env: A task (what [`env_config`][rp1.config.env_config] takes), or `None` with `preset`.
        method: The method on `env` (default `"rp1"`); `None` with a preset, which names its own.
        **resolved: `seed`, `budget`, `overrides`, `scale`, as for
            [`resolve`][rp1.config.resolve].

    Returns:
        The validated config.

    Raises:
        ConfigError: Both or neither of `preset` and `env`, a method with a preset, or what
            [`resolve`][rp1.config.resolve] and [`env_config`][rp1.config.env_config] raise.
    """
    from rp1.config import env_config, resolve

    if preset is not None and env is not None:
        raise ConfigError(
            "--preset and --env exclude each other: a preset names its task and method"
        )
    if preset is None and env is None:
        raise ConfigError("give --preset PRESET (see `rp1 presets`) or --env TASK (see `rp1 envs`)")
    if preset is not None:
        if method is not None:
            raise method_goes_with_task()
        return resolve(preset, **resolved)
    assert env is not None  # one of the two, not the preset
    tasks_importable_from_cwd()
    if method is not None:  # else env_config's default
        resolved["method"] = method
    return env_config(env, **resolved)


def shown_config(
    preset: str | None, env: str | None, method: str | None, **resolved: Any
) -> Config:
    """The config `rp1 config` shows: [`config_of`][rp1.config.sources.config_of]'s where a preset
    or task is given; else the schema's defaults (paper scale unless `scale`) with `overrides`,
    `seed` and `budget` applied, not validated (there is no task).

    Args:
        preset: As for `config_of`, or `None` with `env` also `None`.
        env: As for `config_of`.
        method: As for `config_of`; a ConfigError without `preset` and `env`.
        **resolved: `seed`, `budget`, `overrides`, `scale`, as for
            [`resolve`][rp1.config.resolve].
    """
    from rp1.config import apply_overrides, with_scale
    from rp1.config.reference import default_config

    if preset is not None or env is not None:
        return config_of(preset, env, method, **resolved)
    if method is not None:
        raise method_goes_with_task()
    scale = resolved.get("scale")
    cfg = default_config() if scale is None else with_scale(default_config(), scale)
    given = given_overrides(None, seed=resolved.get("seed"), budget=resolved.get("budget"))
    # --seed and --budget win over --set seed=…, budget=…, as in rp1.config.resolve
    return apply_overrides(cfg, {**(resolved.get("overrides") or {}), **given})


def tasks_importable_from_cwd() -> None:
    """Let ``package.module:attribute`` name a module in the working directory, as ``python -m``
    would (appended to ``sys.path``, so installed packages keep precedence; worker processes
    inherit it)."""
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())


def parse_seeds(text: str) -> list[int]:
    """The seeds of `rp1 sweep --seeds TEXT`: `"0-9"`, `"0,2,5"` or `"0-2,7"`.

    Args:
        text: Seeds and ranges of seeds, low to high, separated by commas.

    Returns:
        The seeds, sorted, each once.

    Raises:
        ConfigError: `text` is malformed, a range is reversed (`3-1`), a seed is outside
            `[0, 2**31 - 2**22)` or there are more than `MAX_SEEDS` (10,000).
    """
    from rp1.config.validation import SEED_LIMIT

    try:
        ranges = [
            (int(lo), int(hi) if sep else int(lo))
            for lo, sep, hi in (part.strip().partition("-") for part in text.split(","))
        ]
    except ValueError:
        raise ConfigError(f"--seeds expects e.g. 0-9 or 0,2,5, got {text!r}") from None
    for first, last in ranges:
        if first > last:
            raise ConfigError(
                f"--seeds range {first}-{last} is reversed; write it low to high, {last}-{first}"
            )
    # checked before a range too long to hold is made
    if not all(
        first >= 0 and last < SEED_LIMIT and last - first < MAX_SEEDS for first, last in ranges
    ):
        raise ConfigError(
            f"--seeds must name at most {MAX_SEEDS:,} seeds in [0, {SEED_LIMIT}) (2**31 - 2**22), got {text!r}"
        )
    seeds = {seed for first, last in ranges for seed in range(first, last + 1)}
    if not seeds or len(seeds) > MAX_SEEDS:
        raise ConfigError(f"--seeds must name 1 to {MAX_SEEDS:,} seeds, got {text!r}")
    return sorted(seeds)


def parse_names(text: str | None) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``; ``None`` -> ``[]``."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def sweep_cells(
    presets: str | None, envs: str | None, methods: str | None
) -> tuple[list[str], list[str], list[str]]:
    """The presets, tasks and methods of `rp1 sweep --presets P --envs T --methods M`.

    Args:
        presets: Comma-separated preset names, or `None`.
        envs: Comma-separated tasks (each crossed with each method), or `None`; a
            `package.module:attribute` may be a module of the working directory.
        methods: Comma-separated methods, or `None` for `rp1`; a ConfigError without `envs`.

    Returns:
        The lists of names; the sweep's runs are every preset's and every (task, method)'s.
    """
    from rp1.config.methods import DEFAULT_METHOD

    tasks = parse_names(envs)
    if methods is not None and not tasks:
        raise method_goes_with_task(many=True)
    if tasks:
        tasks_importable_from_cwd()
    return parse_names(presets), tasks, parse_names(methods) or [DEFAULT_METHOD]


def runs_root(root: Path) -> Path:
    """``root``, a tree of run directories to read; ConfigError where it is no directory."""
    if not root.is_dir():
        raise ConfigError(f"no such directory: {root}")
    return root


def report_out(roots: list[Path], out: Path | None) -> Path:
    """Where ``rp1 report`` of ``roots`` writes: ``out``, or the one root's ``report`` folder;
    ConfigError for several roots and no ``out``."""
    if out is not None:
        return out
    if len(roots) > 1:
        raise ConfigError("a report of several roots needs --out DIR: it belongs to none of them")
    return roots[0] / "report"
