"""The run configuration: typed, frozen sections with the paper's values as defaults (algorithm.md §9).

A :class:`Config` is what a run is: ``config.json`` of a run directory is :meth:`Config.to_dict`.
Build one with :func:`rp1.config.resolve` (a preset) or :func:`rp1.config.env_config` (any task
and a method); the methods of algorithm.md §8 differ only in their :class:`LambdaConfig`, early stopping
α and bonus type (:mod:`rp1.config.methods`).

One place per default: every value is written once. Where a library function has a default of its
own (so that a piece lifted out of rp1 behaves as in a run: ``ExpWeights()``, ``fit(…)``,
``train_policy(…)``), the value is a plain constant of :mod:`rp1.config.defaults`, which both the
field here (``lr: float = defaults.BANDIT_LEARNING_RATE``) and that function's module read;
every other default is written in its field only. The config sits below the algorithm: it
imports none of it (nor JAX), so reading a ``config.json`` costs no more than reading it.
Library functions never read a :class:`Config`: the agents build their settings from it
(:mod:`rp1.agents.settings`). Values that no field exposes (PPO's γ and clip ε, the stop rule's
70 % and 6 checks) are constants of their modules only.

One place per range and meaning: a field declares the values it may take and what it means with
its default (:func:`ranged`), :func:`rp1.config.validate` checks what the fields declare, and
``rp1 config`` (:mod:`rp1.config.reference`) and the documentation's configuration page print
them. rp1's limits (``at_most``) are far above the paper's scale (5 members of [1024, 1024],
50,000-step batches, 10⁷ samples). A setting that selects behaviour is a ``Literal`` whose
``choices`` are its names; the module that implements it maps each name to a function, which
:mod:`rp1.agents.settings` hands to the fit, PPO and the bandit in its place.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Collection
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from rp1.config import defaults
from rp1.config.defaults import MASKED, STATISTICS, Dealing, Statistics, StopOn
from rp1.config.migrations import SCHEMA, SCHEMA_KEY
from rp1.envs.task import SOURCES

FIRST_FEEDBACK = defaults.FIRST_FEEDBACK_NAMES
"""The values of ``lam.first_feedback`` (:data:`rp1.acquisition.bandit.FIRST_FEEDBACKS`: what each
does)."""
G_NORMALIZERS = defaults.G_NORMALIZER_NAMES
"""The values of ``lam.g_normalizers`` (:data:`rp1.acquisition.bandit.G_MODELS`: the model each
measures G with)."""
LambdaMode = Literal["adaptive", "fixed"]
"""How λ is chosen (``lam.mode``): online by the exponential-weights bandit (algorithm.md §6), or
fixed at ``lam.value``."""
ADAPTIVE: LambdaMode = "adaptive"
FIXED: LambdaMode = "fixed"
LAMBDA_MODES: tuple[LambdaMode, ...] = typing.get_args(LambdaMode)
"""The values of ``lam.mode``; code compares a mode with :data:`ADAPTIVE` or :data:`FIXED`."""

RANGE = "rp1.range"
"""The key of a field's metadata that holds the values it may take (:func:`ranged`)."""
DOC = "rp1.doc"
"""The key of a field's metadata that holds its one-line meaning (:func:`ranged`, :func:`described`)."""


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
    choices: Collection[str] | None = None,
    layers: int | None = None,
    doc: str = "",
) -> Any:
    """A field with ``default``, the values it may take, which :func:`rp1.config.validate`
    checks (for a tuple: every item), and ``doc``, its meaning in one line: at least ``at_least``;
    above ``above``; at most ``at_most``, rp1's limit, where a larger value could only exhaust
    memory or time; in ``within``; one of ``choices``, names (for a switch, the module that
    implements it maps each name to what it selects, and the settings receive the selected
    function, :func:`rp1.agents.settings.by_name`); ``layers``: a tuple of 1 to ``layers`` hidden layer
    widths. Range and meaning are the field's metadata (:data:`RANGE`,
    :func:`declared_range`; :data:`DOC`, :func:`field_doc`), not part of ``config.json``."""
    declared = {
        "at_least": at_least,
        "above": above,
        "at_most": at_most,
        "within": within,
        "choices": choices,
        "layers": layers,
    }
    return field(
        default=default,
        metadata={RANGE: {k: v for k, v in declared.items() if v is not None}, DOC: doc},
    )


def described(doc: str) -> Any:
    """A field without a default (a config's ``preset``, ``task``, ``method``) that means ``doc``."""
    return field(metadata={DOC: doc})


def declared_range(section: type, name: str) -> dict[str, Any]:
    """The range field ``name`` of the section (dataclass) ``section`` declares (:func:`ranged`'s
    arguments that were given, by name; ``{}`` if none)."""
    (f,) = (f for f in fields(section) if f.name == name)
    return dict(f.metadata.get(RANGE, {}))


def field_doc(section: type, name: str) -> str:
    """The one-line meaning field ``name`` of ``section`` declares (``""`` if none)."""
    (f,) = (f for f in fields(section) if f.name == name)
    return str(f.metadata.get(DOC, ""))


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
    """World model and its fitting (algorithm.md §3)."""

    members: int = ranged(defaults.MEMBERS, at_least=1, at_most=100, doc="ensemble members M")
    hidden: tuple[int, ...] = ranged(
        defaults.HIDDEN, **WIDTHS, doc="hidden layer widths of every member"
    )
    lr: float = ranged(defaults.MODEL_LEARNING_RATE, above=0, doc="the fit's Adam learning rate")
    batch_size: int = ranged(
        defaults.BATCH_SIZE, at_least=1, at_most=10**6, doc="rows per minibatch of the fit"
    )
    check_every: int = ranged(
        defaults.CHECK_EVERY, at_least=1, doc="epochs between validation checks"
    )
    patience: int = ranged(
        defaults.PATIENCE, at_least=1, doc="checks without improvement after which the fit stops"
    )
    max_epochs: int = ranged(
        defaults.MAX_EPOCHS, at_least=1, at_most=10**5, doc="epochs a fit runs at most"
    )
    max_train_samples: int = ranged(
        defaults.MAX_TRAIN_SAMPLES,
        at_least=1,
        at_most=10**8,
        doc="training rows a fit uses at most (a uniform subsample beyond)",
    )
    # auto | known | learned (algorithm.md §11)
    reward: str = ranged(
        "auto",
        choices=SOURCES,
        doc="reward inside the model: known (the task's function), learned (a head) or auto",
    )
    done: str = ranged(
        "auto",
        choices=SOURCES,
        doc="termination inside the model: known, learned or auto (as model.reward)",
    )
    # the learned reward / termination heads
    head_hidden: tuple[int, ...] = ranged(
        defaults.HEAD_HIDDEN,
        **WIDTHS,
        doc="hidden layer widths of the learned reward/termination heads",
    )
    stop_on: StopOn = ranged(
        defaults.STOP_ON,
        choices=defaults.STOP_ONS,
        doc="with learned heads, what the fit's early stopping counts: any improvement or dynamics",
    )
    dealing: Dealing = ranged(
        defaults.SHUFFLE,
        choices=defaults.DEALING_NAMES,
        doc="how minibatches reach the members: shuffle (each its own) or round-robin (the authors')",
    )


@dataclass(frozen=True)
class PolicyConfig:
    """Policy, PPO inside the model and the stop rule (algorithm.md §4)."""

    hidden: tuple[int, ...] = ranged(
        defaults.POLICY_HIDDEN, **WIDTHS, doc="hidden layer widths of the actor and of the critic"
    )
    action_std: float = ranged(
        defaults.DEFAULT_ACTION_STD, above=0, doc="the policy's fixed action std while training"
    )
    lr: float = ranged(defaults.PPO_LEARNING_RATE, above=0, doc="PPO's Adam learning rate")
    batch_steps: int = ranged(
        defaults.BATCH_STEPS,
        at_most=10**7,
        doc="imagined steps per PPO update, at least one horizon (model-free: real steps)",
    )
    epochs: int = ranged(
        defaults.EPOCHS, at_least=1, at_most=1000, doc="full-batch Adam steps per PPO update"
    )
    max_updates: int = ranged(
        defaults.MAX_UPDATES,
        at_least=1,
        at_most=10**5,
        doc="PPO updates in the model per outer iteration, at most",
    )
    first_check: int = ranged(
        defaults.FIRST_CHECK, at_least=1, doc="the update from which the stop rule checks"
    )
    advantage: defaults.Advantage = ranged(
        defaults.ADVANTAGE,
        choices=defaults.ADVANTAGE_NAMES,
        doc="PPO's advantage once per update (fixed, the paper) or every epoch (the authors')",
    )
    restore_best: bool = ranged(
        True, doc="restore the stop rule's best weights (false: keep the last, as the authors')"
    )


@dataclass(frozen=True)
class CollectConfig:
    """Real-data collection and its early stopping (algorithm.md §5); ``alpha = 0`` turns it off."""

    phase_cap: int = ranged(
        3000, at_least=1, at_most=10**8, doc="real samples a collection phase holds at most"
    )
    alpha: float = ranged(
        5e-4, at_least=0, doc="PCA early stopping's threshold α on the residual; 0 turns it off"
    )
    noise_max: float = ranged(
        3.0, at_least=0, doc="collection noise: each episode's std is drawn from U(0, noise_max)"
    )
    share: float = ranged(
        defaults.SHARE,
        within=Interval(0, 1, open_low=True),
        doc="share of the singular values the PCA test's principal subspace keeps",
    )
    min_val_rollouts: int = ranged(
        defaults.MIN_VAL_ROLLOUTS,
        at_least=0,
        doc="validation rollouts per phase at least (0: the literal ⌊n/3⌋ split)",
    )


@dataclass(frozen=True)
class LambdaConfig:
    """How λ is chosen (algorithm.md §6): ``adaptive`` (exponential weights) or ``fixed`` at ``value``."""

    mode: LambdaMode = ranged(
        ADAPTIVE,
        choices=LAMBDA_MODES,
        doc="λ chosen by the bandit (adaptive) or fixed at lam.value",
    )
    value: float = ranged(0.0, within=Interval(0, 1), doc="λ when lam.mode is fixed")
    arms: tuple[float, ...] = ranged(
        defaults.ARMS, within=Interval(0, 1), doc="the λ values the bandit chooses from"
    )
    lr: float = ranged(defaults.BANDIT_LEARNING_RATE, above=0, doc="the bandit's step size η")
    eps: float = ranged(
        defaults.EPS, within=Interval(0, 1), doc="share of arms drawn uniformly (ε)"
    )
    decay: float = ranged(
        defaults.DECAY, within=Interval(0, 1), doc="factor on the arm scores per update"
    )
    window: int = ranged(
        defaults.WINDOW, at_least=1, at_most=10**4, doc="previous G values in Ĝ's running mean"
    )
    weighting: defaults.Weighting = ranged(
        defaults.WEIGHTING,
        choices=defaults.WEIGHTING_NAMES,
        doc="an arm's credit divided by its probability (the paper) or exp-score (the authors')",
    )
    baseline: defaults.Baseline = ranged(
        defaults.BASELINE,
        choices=defaults.BASELINE_NAMES,
        doc="Ĝ's running mean: of the previous G (the paper) or including this one (the authors')",
    )
    first_feedback: defaults.FirstFeedback = ranged(
        "exclude",
        choices=FIRST_FEEDBACK,
        doc="whether the initial random phase's G enters the window (include: the authors')",
    )
    g_normalizers: defaults.GNormalizers = ranged(
        "all",
        choices=G_NORMALIZERS,
        doc="G measured with every normaliser refreshed, or inputs: before the delta normaliser",
    )


@dataclass(frozen=True)
class ModelFreeConfig:
    """PPO in the real env (algorithm.md §8, ``modelfree``); the policy's hyperparameters are ``policy``'s.

    ``envs`` episodes run side by side (the batch of every policy call; results depend on it and on
    the seed, not on ``workers``); ``workers`` processes step them (1: in this process). The policy
    is evaluated after every ``eval_every`` updates and after the last one.
    """

    workers: int = ranged(
        1, at_least=1, at_most=1024, doc="processes that step the environments (1: this one)"
    )
    envs: int = ranged(100, at_least=1, at_most=10**4, doc="episodes run side by side")
    eval_every: int = ranged(5, at_least=1, doc="PPO updates between evaluations")


@dataclass(frozen=True)
class EvalConfig:
    """The evaluation grid, the same for every method (``rp1 report``'s fair metrics).

    At every multiple of ``every`` real samples, the policy that collected that sample is
    evaluated with ``eval_episodes`` fresh deterministic episodes, whatever the method's phase
    length, into ``evaluations.csv`` (:mod:`rp1.agents.grid`); ``0`` turns the grid off. Grid
    episodes are reset from seeds of their own (the same for every method at a grid point), so
    every other result of a run is what it is without the grid.
    """

    every: int = ranged(
        1000,
        at_least=0,
        at_most=10**9,
        doc="real samples between points of the evaluation grid (evaluations.csv); 0: no grid",
    )


@dataclass(frozen=True)
class Config:
    """Everything a run needs, frozen; `config.json` of a run directory is `to_dict()` of this.

    Built by [`resolve`][rp1.config.resolve] or [`env_config`][rp1.config.env_config], which
    validate it; a changed copy is `dataclasses.replace(cfg, …)`. Each field is a config key
    (`rp1 config` and the Configuration page list every key with its range); the sections are
    keys `model.*`, `policy.*`, `collect.*`, `lam.*`, `modelfree.*` and `eval.*`.

    Attributes:
        preset: The preset's name, or `<task>-<method>` for
            [`env_config`][rp1.config.env_config] (as one path component).
        task: A name [`make_env`][rp1.envs.make] knows: a paper task, a Gymnasium id,
            `package.module:attribute` or a name [`register_task`][rp1.envs.register_task]
            gave in this process.
        method: The method (algorithm.md §8, or `"modelfree"`).
        scale: `"paper"` or `"small"`: the sizes of networks and batches.
        seed: The seed every random stream of the run is spawned from.
        budget: Real samples to collect.
        horizon: Steps per episode; 0 for the task's own.
        bonus: The exploration bonus: `"reward"` or `"state"` variance, or
            `package.module:function`.
        eval_episodes: Deterministic episodes per evaluation.
        statistics: The normalisers' statistics over growing data: `"masked"` or `"eager"`.
    """

    preset: str = described("the preset's name, or <task>-<method> (set by --preset or --env)")
    task: str = described("the task: a paper task, a Gymnasium id or package.module:attribute")
    method: str = described("the method (algorithm.md §8; set by the preset or --method)")
    scale: str = ranged("paper", doc="sizes of networks and batches: paper or small (--scale)")
    # in [0, rp1.config.validation.SEED_LIMIT), checked there
    seed: int = ranged(0, doc="the seed every random stream of the run is spawned from")
    budget: int = ranged(
        100_000,
        at_least=1,
        at_most=10**9,
        doc="real samples to collect; model-based: at least collect.phase_cap",
    )
    horizon: int = ranged(0, at_least=0, at_most=10**6, doc="steps per episode; 0: the task's own")
    bonus: str = ranged(
        defaults.BONUS,
        doc="the exploration bonus: reward or state variance, or package.module:function",
    )
    eval_episodes: int = ranged(
        10, at_least=1, at_most=10**4, doc="deterministic episodes per evaluation"
    )
    statistics: Statistics = ranged(
        MASKED,
        choices=STATISTICS,
        doc="normalisers' statistics over growing data: masked (compiled per size bucket) or eager",
    )
    model: ModelConfig = field(default_factory=ModelConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    collect: CollectConfig = field(default_factory=CollectConfig)
    lam: LambdaConfig = field(default_factory=LambdaConfig)
    modelfree: ModelFreeConfig = field(default_factory=ModelFreeConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (tuples become lists), led by the config schema it is
        written in (`"schema"`, `rp1.config.migrations.SCHEMA`)."""
        return {SCHEMA_KEY: SCHEMA, **json.loads(json.dumps(dataclasses.asdict(self)))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        """Inverse of `to_dict` (`"schema"` is not a field; read a stored config through
        `rp1.config.migrations.migrate` first)."""
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
