"""The library's settings objects built from a :class:`~rp1.config.schema.Config`: the one place
where a config's fields are mapped onto what the fit, PPO, policy training and the bandit take.

The agents build their pieces with these, and :func:`rp1.config.validate` builds them too, so each
piece checks its own settings once, where they are defined (a ``ValueError`` there becomes a
``ConfigError`` naming the config key).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from rp1.acquisition import ExpWeights
from rp1.config.schema import Config
from rp1.dynamics.fit import FitSettings
from rp1.envs.task import Task
from rp1.imagination import PolicyTraining, make_imagination
from rp1.policy.ppo import PPOSettings
from rp1.realenv import CollectSettings


def by_name(section: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """``{name: section.name}`` for each of ``names``: a settings object's arguments taken from a
    config section by field name, so that two fields can never be swapped by position."""
    return {name: getattr(section, name) for name in names}


def fit_settings(cfg: Config) -> FitSettings:
    """How the ensemble is fitted (``model.*``, each field of :class:`FitSettings` by its name)."""
    return FitSettings(**by_name(cfg.model, tuple(f.name for f in dataclasses.fields(FitSettings))))


def ppo_settings(cfg: Config) -> PPOSettings:
    """PPO's settings (``policy.epochs``, ``policy.advantage``; the rest are the paper's constants)."""
    return PPOSettings(epochs=cfg.policy.epochs, advantage=cfg.policy.advantage)


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


def policy_training(cfg: Config, task: Task) -> PolicyTraining:
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
