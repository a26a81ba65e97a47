"""Scales (``paper``, ``small``) and the preset registry: ``<task>-<method>`` for the paper's tasks
and every model-based method (:func:`rp1.config.methods.model_based_methods`, rows of one's own
included), ``<task>-quick`` (RP1 at small scale, 10⁴ samples), ``<task>-first`` (the same with the
10⁵ runs' round-robin fit) and ``<task>-modelfree``."""

from __future__ import annotations

import typing
from dataclasses import replace
from functools import partial
from typing import Any

from rp1.config.defaults import ROUND_ROBIN
from rp1.config.methods import (
    FIRST,
    METHOD_TABLE,
    MODEL_FREE,
    QUICK,
    RP1,
    Method,
    method_config,
    model_based_methods,
    modelfree_config,
)
from rp1.config.schema import Config
from rp1.core.errors import ConfigError, did_you_mean
from rp1.envs import names as task_names

SCALES: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {
        "model.hidden": (200, 200),
        "model.batch_size": 256,
        "model.max_epochs": 200,
        "policy.batch_steps": 5_000,
        "policy.max_updates": 60,
    },
}
"""The sizes each scale sets, as ``{"section.field": value}``; ``paper`` keeps the dataclass defaults
(algorithm.md §9). Every method is scaled the same way, and nothing a method is defined by (λ, α, bonus,
phase cap) is touched, so a small-scale Greedy run still collects 3,000-sample phases."""

QUICK_BUDGET = 10_000


def with_scale(cfg: Config, scale: str) -> Config:
    """``cfg`` with every size of :data:`SCALES` set to ``scale``'s value (or the paper's default
    where ``scale`` does not set it) and ``cfg.scale = scale``."""
    if scale not in SCALES:
        raise ConfigError(f"unknown scale {scale!r}; valid scales: {', '.join(SCALES)}")
    sized = {key for sizes in SCALES.values() for key in sizes}
    for key in sorted(sized):
        section, name = key.split(".")
        default = getattr(type(getattr(cfg, section))(), name)
        value = SCALES[scale].get(key, default)
        cfg = replace(cfg, **{section: replace(getattr(cfg, section), **{name: value})})
    return replace(cfg, scale=scale)


def quick_config(task: str, preset: str) -> Config:
    """RP1 at small scale with 10^4 samples: minutes on a 2-core CPU; at 10^4 about two seeds in
    three end clearly above their untrained policy on HalfCheetah, Hopper and Swimmer, none on Ant
    (docs/getting-started.md)."""
    return with_scale(method_config(task, RP1, preset, budget=QUICK_BUDGET), "small")


def first_config(task: str, preset: str) -> Config:
    """:func:`quick_config` with the ensemble fit of every 10^5 run, ``model.dealing=round-robin``
    (the authors' code's; about a quarter of ``shuffle``'s arithmetic). ``halfcheetah-first`` is
    README's first command, chosen among the Hopper and HalfCheetah ones by the plan in
    benchmarks/RESULTS.md (issue 76)."""
    cfg = quick_config(task, preset)
    return replace(cfg, model=replace(cfg.model, dealing=ROUND_ROBIN))


def preset_registry() -> dict[str, tuple[str, typing.Callable[[], Config]]]:
    """``{name: (one-line description, config builder)}`` of every preset, built from the methods
    known when it is called."""
    presets: dict[str, tuple[str, typing.Callable[[], Config]]] = {}
    for task in task_names():
        for method in model_based_methods().values():
            name = f"{task}-{method.name}"
            presets[name] = (
                f"{describe_method(method)}; paper settings, 10^5 samples{_origin(method)}",
                partial(method_config, task, method.name, name),
            )
        presets[f"{task}-{QUICK}"] = (
            "RP1 at small scale (--scale small), 10^4 samples: minutes on a laptop CPU; some seeds learn little",
            partial(quick_config, task, f"{task}-{QUICK}"),
        )
        presets[f"{task}-{FIRST}"] = (
            "RP1 at small scale with the 10^5 runs' round-robin ensemble fit, 10^4 samples",
            partial(first_config, task, f"{task}-{FIRST}"),
        )
        presets[f"{task}-{MODEL_FREE}"] = (
            "PPO, model-free, in the real task: 10^6 steps (the paper's others: --budget 5000000, 10000000)",
            partial(modelfree_config, task, f"{task}-{MODEL_FREE}"),
        )
    return presets


def describe_method(method: Method) -> str:
    """What ``method`` is, from its row (algorithm.md §8's columns): its label, then how λ is
    chosen, the bonus and the early stopping, e.g. ``RP1: λ adaptive (bandit), reward-variance
    bonus, PCA early stopping``."""
    lam = "λ adaptive (bandit)" if method.adaptive else f"λ fixed at {method.lam_value:g}"
    bonus = {"reward": "reward-variance bonus", "state": "state-variance bonus"}.get(
        method.bonus, f"bonus {method.bonus}"
    )
    stop = "PCA early stopping" if method.early_stop else "no early stopping"
    phases = ", phases of the task's matched length" if method.matched_phases else ""
    return f"{method.label}: {lam}, {bonus if method.uses_bonus else 'no bonus'}, {stop}{phases}"


def _origin(method: Method) -> str:
    """What a preset's description says of where its method comes from: nothing for the paper's."""
    if method not in METHOD_TABLE:
        return " (a method of one's own)"
    return "" if method.in_paper else " (a control beyond the paper)"


def preset_descriptions() -> dict[str, str]:
    """``{name: one-line description}``."""
    return {name: desc for name, (desc, _) in preset_registry().items()}


def get_preset(name: str) -> Config:
    """The config of preset ``name``; ``ConfigError`` naming the closest preset if unknown."""
    presets = preset_registry()
    if not isinstance(name, str) or name not in presets:
        raise ConfigError(
            f"unknown preset {name!r}; {did_you_mean(str(name), presets)}valid presets: the "
            f"{len(presets)} that `rp1 presets` lists"
        )
    return presets[name][1]()
