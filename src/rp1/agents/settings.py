"""The library's settings objects built from a :class:`~rp1.config.schema.Config`: the one place
where a config's fields are mapped onto what the fit, PPO, policy training and the bandit take.
It sits above both: the config (below the algorithm) knows no function, the algorithm no config.

Each setting is taken by its field name. A switch (a field whose value names what it selects,
:data:`SWITCHES`) is resolved here, once: the settings hold the function its name selects, never
the name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from rp1.acquisition import ExpWeights, bandit
from rp1.config.schema import ADAPTIVE, Config, LambdaConfig, ModelConfig, PolicyConfig
from rp1.dynamics.fit import DEALINGS, STOP_RULES, FitSettings
from rp1.envs.task import Task
from rp1.imagination import PolicyTraining, make_imagination
from rp1.policy.ppo import ADVANTAGES, PPOSettings
from rp1.realenv import CollectSettings

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Settings = TypeVar("Settings", bound="DataclassInstance")


SWITCHES: dict[tuple[type, str], Mapping[Any, Any]] = {
    (ModelConfig, "stop_on"): STOP_RULES,
    (ModelConfig, "dealing"): DEALINGS,
    (PolicyConfig, "advantage"): ADVANTAGES,
    (LambdaConfig, "weighting"): bandit.WEIGHTINGS,
    (LambdaConfig, "baseline"): bandit.BASELINES,
    (LambdaConfig, "first_feedback"): bandit.FIRST_FEEDBACKS,
    (LambdaConfig, "g_normalizers"): bandit.G_MODELS,
}
"""Every switch, ``(section, field) -> {name: what it selects}``: the field's declared ``choices``
(:mod:`rp1.config.defaults`) are the mapping's keys, in its order."""


def selected(section: Any, name: str) -> Any:
    """The value of field ``name`` of a config section, or, for a switch, what its value selects."""
    value = getattr(section, name)
    switch = SWITCHES.get((type(section), name))
    return value if switch is None else switch[value]


def by_name(section: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """``{name: selected(section, name)}`` for each of ``names``: a settings object's arguments
    taken from a config section by field name, so that two fields can never be swapped by
    position."""
    return {name: selected(section, name) for name in names}


def from_section(kind: type[Settings], section: Any) -> Settings:
    """The settings dataclass ``kind`` with each of its fields that ``section`` has taken from it by
    name (:func:`by_name`); a field the section lacks keeps its default (a constant of the paper)."""
    names = {f.name for f in dataclasses.fields(section)}
    fields = dataclasses.fields(kind)
    return kind(**by_name(section, tuple(f.name for f in fields if f.name in names)))


def fit_settings(cfg: Config) -> FitSettings:
    """How the ensemble is fitted (``model.*``, each field of :class:`FitSettings` by its name)."""
    return from_section(FitSettings, cfg.model)


def ppo_settings(cfg: Config) -> PPOSettings:
    """PPO's settings (``policy.*``, each field of :class:`PPOSettings` the section has by its name;
    γ, clip ε and the loss coefficients are the paper's constants)."""
    return from_section(PPOSettings, cfg.policy)


def collect_settings(cfg: Config) -> CollectSettings:
    """How a model-based run collects a phase (``collect.*``; ``cap`` is ``collect.phase_cap``)."""
    return CollectSettings(
        cap=cfg.collect.phase_cap, **by_name(cfg.collect, ("alpha", "noise_max", "share"))
    )


def outcome_sources(cfg: Config, task: Task) -> dict[str, str]:
    """Where the model's reward and termination come from on ``task``: ``{"reward": …, "done": …}``,
    each ``known`` or ``learned`` (``model.reward`` / ``model.done`` resolved, ConfigError if the
    task cannot give it)."""
    return {what: task.source(what, getattr(cfg.model, what)) for what in ("reward", "done")}


def policy_training_settings(cfg: Config, task: Task) -> PolicyTraining:
    """How the policy is trained in the model on ``task`` (``policy.*``, ``bonus``, the sources)."""
    p, sources = cfg.policy, outcome_sources(cfg, task)
    return PolicyTraining(
        imagination=make_imagination(
            task, bonus=cfg.bonus, reward=sources["reward"], done=sources["done"]
        ),
        ppo=ppo_settings(cfg),
        batch_steps=p.batch_steps,
        max_updates=p.max_updates,
        first_check=p.first_check,
        action_std=p.action_std,
        restore_best=p.restore_best,
    )


def lambda_bandit(cfg: Config, rng: np.random.Generator | None = None) -> ExpWeights:
    """The λ bandit of ``lam.*`` drawing from ``rng`` (algorithm.md §6)."""
    names = ("arms", "lr", "eps", "decay", "window", "weighting", "baseline")
    return ExpWeights(seed=rng, **by_name(cfg.lam, names))


def lambda_start(cfg: Config, rng: np.random.Generator) -> tuple[ExpWeights | None, float]:
    """What ``lam.mode`` selects: the bandit that chooses λ, drawing from ``rng``, and the first
    outer iteration's λ, 0 (``adaptive``, algorithm.md §6); or no bandit and ``lam.value``
    (``fixed``)."""
    if cfg.lam.mode == ADAPTIVE:
        return lambda_bandit(cfg, rng), 0.0
    return None, cfg.lam.value
