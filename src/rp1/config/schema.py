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

One place per range: a field declares the values it may take with its default (:func:`ranged`),
and :func:`rp1.config.validate` checks what the fields declare. rp1's limits (``at_most``) are far
above the paper's scale (5 members of [1024, 1024], 50,000-step batches, 10⁷ samples). What the
fit's, PPO's and the bandit's settings check themselves (:mod:`rp1.config.settings`) is not
declared again here.
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
from rp1.envs.task import SOURCES
from rp1.imagination import policy_training, rollouts
from rp1.policy import networks, ppo
from rp1.rundir.migrations import SCHEMA, SCHEMA_KEY

FIRST_FEEDBACK = ("exclude", "include")
G_NORMALIZERS = ("all", "inputs")
LAMBDA_MODES = ("adaptive", "fixed")

RANGE = "rp1.range"
"""The key of a field's metadata that holds the values it may take (:func:`ranged`)."""


@dataclass(frozen=True)
class Interval:
    """The numbers from ``low`` to ``high``: ``[low, high]``, or ``(low, high]`` with ``open_low``."""

    low: float
    high: float
    open_low: bool = False

    def __contains__(self, x: float) -> bool:
        return (self.low < x if self.open_low else self.low <= x) and x <= self.high

    def __str__(self) -> str:
        return f"{'(' if self.open_low else '['}{self.low}, {self.high}]"


def ranged(
    default: Any,
    *,
    at_least: float | None = None,
    above: float | None = None,
    at_most: int | None = None,
    within: Interval | None = None,
    choices: tuple[str, ...] | None = None,
    layers: int | None = None,
) -> Any:
    """A field with ``default`` and the values it may take, which :func:`rp1.config.validate`
    checks (for a tuple: every item): at least ``at_least``; above ``above``; at most ``at_most``,
    rp1's limit, where a larger value could only exhaust memory or time; in ``within``; one of
    ``choices``; ``layers``: a tuple of 1 to ``layers`` hidden layer widths. The range is the
    field's metadata (:data:`RANGE`, :func:`declared_range`), not part of ``config.json``."""
    declared = {
        "at_least": at_least,
        "above": above,
        "at_most": at_most,
        "within": within,
        "choices": choices,
        "layers": layers,
    }
    return field(
        default=default, metadata={RANGE: {k: v for k, v in declared.items() if v is not None}}
    )


def declared_range(section: type, name: str) -> dict[str, Any]:
    """The range field ``name`` of the section (dataclass) ``section`` declares (:func:`ranged`'s
    arguments that were given, by name; ``{}`` if none)."""
    (f,) = (f for f in fields(section) if f.name == name)
    return dict(f.metadata.get(RANGE, {}))


MAX_LAYERS = 16
"""Hidden layers (widths) a network may have: at least one, at most this many."""


class LayerWidths(typing.TypedDict):
    """The keywords of :func:`ranged` for a tuple of hidden-layer widths."""

    at_least: float
    at_most: int
    layers: int


WIDTHS = LayerWidths(at_least=1, at_most=16384, layers=MAX_LAYERS)
"""The range of a network's hidden layer widths (``model.hidden``, ``model.head_hidden``,
``policy.hidden``)."""


@dataclass(frozen=True)
class ModelConfig:
    """World model and its fitting (SPEC §3)."""

    members: int = ranged(ensemble.MEMBERS, at_least=1, at_most=100)
    hidden: tuple[int, ...] = ranged(ensemble.HIDDEN, **WIDTHS)
    lr: float = ranged(MODEL_LEARNING_RATE, above=0)
    batch_size: int = ranged(BATCH_SIZE, at_most=10**6)
    check_every: int = CHECK_EVERY
    patience: int = PATIENCE
    max_epochs: int = ranged(MAX_EPOCHS, at_least=1, at_most=10**5)
    max_train_samples: int = ranged(store.MAX_TRAIN_SAMPLES, at_least=1, at_most=10**8)
    # auto | known | learned (README "What the model learns")
    reward: str = ranged("auto", choices=SOURCES)
    done: str = ranged("auto", choices=SOURCES)  # auto | known | learned
    # the learned reward / termination heads
    head_hidden: tuple[int, ...] = ranged(heads.HIDDEN, **WIDTHS)
    # any | dynamics: what early stopping counts with learned heads (fit.STOP_ON_CHOICES)
    stop_on: str = STOP_ON_CHOICES[0]


@dataclass(frozen=True)
class PolicyConfig:
    """Policy, PPO inside the model and the stop rule (SPEC §4)."""

    hidden: tuple[int, ...] = ranged(networks.HIDDEN, **WIDTHS)
    action_std: float = ranged(networks.DEFAULT_ACTION_STD, above=0)
    lr: float = ranged(ppo.LEARNING_RATE, above=0)
    batch_steps: int = ranged(policy_training.BATCH_STEPS, at_most=10**7)
    epochs: int = ranged(ppo.EPOCHS, at_most=1000)
    max_updates: int = ranged(policy_training.MAX_UPDATES, at_least=1, at_most=10**5)
    first_check: int = ranged(policy_training.FIRST_CHECK, at_least=1)
    advantage: str = ppo.ADVANTAGE  # fixed (once per update, SPEC) | per-epoch (the reference)
    restore_best: bool = True  # false: keep the last weights when training stops (the reference)


@dataclass(frozen=True)
class CollectConfig:
    """Real-data collection and its early stopping (SPEC §5); ``alpha = 0`` turns it off."""

    phase_cap: int = ranged(3000, at_least=1, at_most=10**8)
    alpha: float = ranged(5e-4, at_least=0)
    noise_max: float = ranged(3.0, at_least=0)
    share: float = ranged(pca.SHARE, within=Interval(0, 1, open_low=True))
    min_val_rollouts: int = ranged(store.MIN_VAL_ROLLOUTS, at_least=0)  # 0: the literal ⌊n/3⌋ split


@dataclass(frozen=True)
class LambdaConfig:
    """How λ is chosen (SPEC §6): ``adaptive`` (exponential weights) or ``fixed`` at ``value``."""

    mode: str = ranged("adaptive", choices=LAMBDA_MODES)
    value: float = ranged(0.0, within=Interval(0, 1))
    arms: tuple[float, ...] = ranged(bandit.ARMS, within=Interval(0, 1))
    lr: float = ranged(bandit.LEARNING_RATE, above=0)
    eps: float = bandit.EPS
    decay: float = bandit.DECAY
    window: int = ranged(bandit.WINDOW, at_least=1, at_most=10**4)
    weighting: str = bandit.WEIGHTING
    baseline: str = bandit.BASELINE  # previous (the paper) | including (the reference): Ĝ's mean
    # "include": the initial phase's G enters the window (ref)
    first_feedback: str = ranged("exclude", choices=FIRST_FEEDBACK)
    # G measured with every normaliser refreshed | inputs: delta's not yet
    g_normalizers: str = ranged("all", choices=G_NORMALIZERS)


@dataclass(frozen=True)
class ModelFreeConfig:
    """PPO in the real env (SPEC §8, ``modelfree``); the policy's hyperparameters are ``policy``'s.

    ``envs`` episodes run side by side (the batch of every policy call; results depend on it and on
    the seed, not on ``workers``); ``workers`` processes step them (1: in this process). The policy
    is evaluated after every ``eval_every`` updates and after the last one.
    """

    workers: int = ranged(1, at_least=1, at_most=1024)
    envs: int = ranged(100, at_least=1, at_most=10**4)
    eval_every: int = ranged(5, at_least=1)


@dataclass(frozen=True)
class EvalConfig:
    """The evaluation grid, the same for every method (``rp1 report``'s fair metrics).

    At every multiple of ``every`` real samples, the policy that collected that sample is
    evaluated with ``eval_episodes`` fresh deterministic episodes, whatever the method's phase
    length, into ``evaluations.csv`` (:mod:`rp1.agents.grid`); ``0`` turns the grid off. Grid
    episodes are reset from seeds of their own (the same for every method at a grid point), so
    every other result of a run is what it is without the grid.
    """

    every: int = ranged(1000, at_least=0, at_most=10**9)


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
    seed: int = 0  # in [0, rp1.config.validation.SEED_LIMIT), checked there
    budget: int = ranged(100_000, at_least=1, at_most=10**9)
    horizon: int = ranged(0, at_least=0, at_most=10**6)
    bonus: str = rollouts.BONUS
    eval_episodes: int = ranged(10, at_least=1, at_most=10**4)
    model: ModelConfig = field(default_factory=ModelConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    collect: CollectConfig = field(default_factory=CollectConfig)
    lam: LambdaConfig = field(default_factory=LambdaConfig)
    modelfree: ModelFreeConfig = field(default_factory=ModelFreeConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (tuples become lists), led by the config schema it is
        written in (``"schema"``, :data:`rp1.rundir.migrations.SCHEMA`)."""
        return {SCHEMA_KEY: SCHEMA, **json.loads(json.dumps(dataclasses.asdict(self)))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        """Inverse of :meth:`to_dict` (``"schema"`` is not a field; read a stored config through
        :func:`rp1.rundir.migrations.migrate` first)."""
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
