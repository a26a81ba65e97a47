"""The run configuration: typed, frozen sections with the paper's values as defaults (SPEC §9).

A :class:`Config` is what a run is: ``config.json`` of a run directory is :meth:`Config.to_dict`.
Build one with :func:`rp1.config.resolve` (a preset) or :func:`rp1.config.env_config` (any task
and a method); the methods of SPEC §8 differ only in their :class:`LambdaConfig`, early stopping
α and bonus type (:mod:`rp1.config.methods`).

One place per default: every value is written once. Where a library function has a default of its
own (so that a piece lifted out of rp1 behaves as in a run: ``ExpWeights()``, ``fit(…)``,
``train_policy(…)``), the value is a constant of that function's module and the field here reads
it (``lr: float = bandit.LEARNING_RATE``); every other default is written in its field only.
Library functions never read a :class:`Config`: the agents build their settings from it
(:mod:`rp1.config.settings`). Values that no field exposes (PPO's γ and clip ε, the stop rule's
70 % and 6 checks) are constants of their modules only.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from rp1.acquisition import bandit, pca
from rp1.dynamics import ensemble, heads, store
from rp1.dynamics.fit import BATCH_SIZE, CHECK_EVERY, MAX_EPOCHS, PATIENCE, STOP_ON_CHOICES
from rp1.dynamics.fit import LEARNING_RATE as MODEL_LEARNING_RATE
from rp1.imagination import policy_training, rollouts
from rp1.migrations import SCHEMA, SCHEMA_KEY
from rp1.policy import networks, ppo

FIRST_FEEDBACK = ("exclude", "include")
G_NORMALIZERS = ("all", "inputs")


@dataclass(frozen=True)
class ModelConfig:
    """World model and its fitting (SPEC §3)."""

    members: int = ensemble.MEMBERS
    hidden: tuple[int, ...] = ensemble.HIDDEN
    lr: float = MODEL_LEARNING_RATE
    batch_size: int = BATCH_SIZE
    check_every: int = CHECK_EVERY
    patience: int = PATIENCE
    max_epochs: int = MAX_EPOCHS
    max_train_samples: int = store.MAX_TRAIN_SAMPLES
    reward: str = "auto"  # auto | known | learned (rp1.envs.task.SOURCES; README "What the model learns")
    done: str = "auto"  # auto | known | learned
    head_hidden: tuple[int, ...] = heads.HIDDEN  # the learned reward / termination heads
    stop_on: str = STOP_ON_CHOICES[0]  # any | dynamics: what early stopping counts with learned heads (fit.STOP_ON_CHOICES)


@dataclass(frozen=True)
class PolicyConfig:
    """Policy, PPO inside the model and the stop rule (SPEC §4)."""

    hidden: tuple[int, ...] = networks.HIDDEN
    action_std: float = networks.DEFAULT_ACTION_STD
    lr: float = ppo.LEARNING_RATE
    batch_steps: int = policy_training.BATCH_STEPS
    epochs: int = ppo.EPOCHS
    max_updates: int = policy_training.MAX_UPDATES
    first_check: int = policy_training.FIRST_CHECK
    advantage: str = ppo.ADVANTAGE  # fixed (once per update, SPEC) | per-epoch (the reference)
    restore_best: bool = True  # false: keep the last weights when training stops (the reference)


@dataclass(frozen=True)
class CollectConfig:
    """Real-data collection and its early stopping (SPEC §5); ``alpha = 0`` turns it off."""

    phase_cap: int = 3000
    alpha: float = 5e-4
    noise_max: float = 3.0
    share: float = pca.SHARE
    min_val_rollouts: int = store.MIN_VAL_ROLLOUTS  # 0: the literal ⌊n/3⌋ split


@dataclass(frozen=True)
class LambdaConfig:
    """How λ is chosen (SPEC §6): ``adaptive`` (exponential weights) or ``fixed`` at ``value``."""

    mode: str = "adaptive"
    value: float = 0.0
    arms: tuple[float, ...] = bandit.ARMS
    lr: float = bandit.LEARNING_RATE
    eps: float = bandit.EPS
    decay: float = bandit.DECAY
    window: int = bandit.WINDOW
    weighting: str = bandit.WEIGHTING
    baseline: str = bandit.BASELINE  # previous (the paper) | including (the reference): Ĝ's mean
    first_feedback: str = "exclude"  # "include": the initial phase's G enters the window (ref)
    g_normalizers: str = "all"  # G measured with every normaliser refreshed | inputs: delta's not yet


@dataclass(frozen=True)
class ModelFreeConfig:
    """PPO in the real env (SPEC §8, ``modelfree``); the policy's hyperparameters are ``policy``'s.

    ``envs`` episodes run side by side (the batch of every policy call; results depend on it and on
    the seed, not on ``workers``); ``workers`` processes step them (1: in this process). The policy
    is evaluated after every ``eval_every`` updates and after the last one.
    """

    workers: int = 1
    envs: int = 100
    eval_every: int = 5


@dataclass(frozen=True)
class Config:
    """Everything a run needs; ``config.json`` of a run directory is :meth:`to_dict` of this.

    ``task``: a name :func:`rp1.envs.make` knows; ``horizon``: steps per episode, 0 for the task's
    own; ``preset``: the preset's name, or ``<task>-<method>`` for :func:`env_config` (as one
    path component, :func:`rp1.envs.path_name`).
    """

    preset: str
    task: str
    method: str
    scale: str = "paper"
    seed: int = 0
    budget: int = 100_000
    horizon: int = 0
    bonus: str = rollouts.BONUS
    eval_episodes: int = 10
    model: ModelConfig = field(default_factory=ModelConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    collect: CollectConfig = field(default_factory=CollectConfig)
    lam: LambdaConfig = field(default_factory=LambdaConfig)
    modelfree: ModelFreeConfig = field(default_factory=ModelFreeConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (tuples become lists), led by the config schema it is
        written in (``"schema"``, :data:`rp1.migrations.SCHEMA`)."""
        return {SCHEMA_KEY: SCHEMA, **json.loads(json.dumps(dataclasses.asdict(self)))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        """Inverse of :meth:`to_dict` (``"schema"`` is not a field; read a stored config through
        :func:`rp1.migrations.migrate` first)."""
        return _from_dict(cls, data)


def _from_dict(cls: Any, data: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            value = _from_dict(hint, value)
        elif typing.get_origin(hint) is tuple:
            value = tuple(value)
        kwargs[f.name] = value
    return cls(**kwargs)

