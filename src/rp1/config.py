"""Typed, frozen run configuration with the paper's values as defaults, and the preset registry.

A :class:`Config` is built from a preset (``halfcheetah-rp1``, ``ant-greedy``, ``hopper-quick``, …)
with :func:`resolve`, or from any task and a method with :func:`env_config` (``Pendulum-v1``,
``rp1``), optionally overridden with ``key=value`` strings (``model.hidden=64,64``), and validated
once. The
methods of SPEC §8 differ only in their :class:`LambdaConfig`, early stopping α and bonus type.

One place per default: every value is written once. Where a library function has a default of its
own (so that a piece lifted out of rp1 behaves as in a run: ``ExpWeights()``, ``fit(…)``,
``train_policy(…)``), the value is a constant of that function's module and the field here reads
it (``lr: float = bandit.LEARNING_RATE``); every other default is written in its field only.
Library functions never read a :class:`Config`: the agents pass its fields on. Values that no
field exposes (PPO's γ and clip ε, the stop rule's 70 % and 6 checks) are constants of their
modules only.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from dataclasses import dataclass, field, fields, replace
from typing import Any

from rp1.acquisition import bandit, pca
from rp1.dynamics import ensemble, heads, store
from rp1.dynamics.fit import BATCH_SIZE, CHECK_EVERY, MAX_EPOCHS, PATIENCE, STOP_RULES
from rp1.dynamics.fit import LEARNING_RATE as MODEL_LEARNING_RATE
from rp1.envs import make as make_task
from rp1.envs import names as task_names
from rp1.envs import Task, path_name
from rp1.envs.task import SOURCES
from rp1.errors import ConfigError
from rp1.imagination import rollouts
from rp1.imagination import policy_training
from rp1.policy import networks, ppo

BONUSES = tuple(rollouts.BONUSES)
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
    stop_on: str = "any"  # any | dynamics: what early stopping counts with learned heads (fit.STOP_RULES)


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
        """Plain JSON-serialisable dict (tuples become lists)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Config":
        """Inverse of :meth:`to_dict`."""
        return _from_dict(cls, data)


def _from_dict(cls, data: dict[str, Any]):
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


# --- methods (SPEC §8) -------------------------------------------------------------------------

MODEL_BASED_METHODS = {
    # method: (λ mode, fixed λ, early-stopping α, bonus); α: the paper's, or 0 (off)
    "rp1": ("adaptive", 0.0, CollectConfig.alpha, "reward"),
    "greedy": ("fixed", 0.0, 0.0, "reward"),
    "vr": ("fixed", 0.5, 0.0, "reward"),
    "rp1-noadapt": ("fixed", 0.0, CollectConfig.alpha, "reward"),
    "rp1-nopca": ("adaptive", 0.0, 0.0, "reward"),
    "rp1-statevar": ("adaptive", 0.0, CollectConfig.alpha, "state"),
}


def method_config(task: str, method: str, preset: str, **top) -> Config:
    """The paper-scale config of ``method`` on ``task``."""
    mode, value, alpha, bonus = MODEL_BASED_METHODS[method]
    return Config(
        preset=preset,
        task=task,
        method=method,
        bonus=bonus,
        collect=CollectConfig(alpha=alpha),
        lam=LambdaConfig(mode=mode, value=value),
        **top,
    )


MODEL_FREE = "modelfree"
METHODS = (*MODEL_BASED_METHODS, MODEL_FREE)
MODEL_FREE_BUDGETS = (1_000_000, 5_000_000, 10_000_000)


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else ConfigError listing them."""
    _check(method in METHODS, f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    return method


def modelfree_config(task: str, preset: str) -> Config:
    """PPO in the real env with the paper's policy hyperparameters and a budget of 10^6 steps."""
    return Config(preset=preset, task=task, method=MODEL_FREE, budget=MODEL_FREE_BUDGETS[0], lam=LambdaConfig(mode="fixed"))


# --- scales ------------------------------------------------------------------------------------

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
(SPEC). Every method is scaled the same way, and nothing a method is defined by (λ, α, bonus,
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
    """RP1 at small scale with 10^4 samples: learns visibly on a 2-core CPU in minutes."""
    return with_scale(method_config(task, "rp1", preset, budget=QUICK_BUDGET), "small")


def _build_presets() -> dict[str, tuple[str, typing.Callable[[], Config]]]:
    presets = {}
    for task in task_names():
        for method in MODEL_BASED_METHODS:
            name = f"{task}-{method}"
            presets[name] = (
                f"{method} on {task} at paper settings (10^5 samples)",
                lambda t=task, m=method, n=name: method_config(t, m, n),
            )
        presets[f"{task}-quick"] = (
            f"{task}-rp1 at small scale (--scale small) with 10^4 samples: learns on a laptop CPU in minutes",
            lambda t=task, n=f"{task}-quick": quick_config(t, n),
        )
        presets[f"{task}-modelfree"] = (
            f"model-free PPO on {task} in the real env, 10^6 steps (--budget 5000000 or 10000000 for the others)",
            lambda t=task, n=f"{task}-modelfree": modelfree_config(t, n),
        )
    return presets


PRESETS = _build_presets()


def preset_names() -> list[str]:
    """All preset names, in registry order."""
    return list(PRESETS)


def preset_descriptions() -> dict[str, str]:
    """``{name: one-line description}``."""
    return {name: desc for name, (desc, _) in PRESETS.items()}


def get_preset(name: str) -> Config:
    """The config of preset ``name``; ``ConfigError`` listing the valid names if unknown."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; valid presets: {', '.join(PRESETS)}")
    return PRESETS[name][1]()


# --- overrides and validation --------------------------------------------------------------------

FIXED_KEYS = ("preset", "task", "method", "scale")  # scale: set by --scale, before any --set


def settable_keys(cfg: Config | None = None) -> list[str]:
    """Every ``key`` accepted by :func:`apply_overrides` (dotted for nested sections)."""
    keys = []
    for f in fields(Config):
        if f.name in FIXED_KEYS:
            continue
        hint = typing.get_type_hints(Config)[f.name]
        if dataclasses.is_dataclass(hint):
            keys += [f"{f.name}.{g.name}" for g in fields(hint)]
        else:
            keys.append(f.name)
    return keys


def _parse(text: str, hint, key: str):
    try:
        if hint is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return text.lower() in ("true", "1", "yes")
        if typing.get_origin(hint) is tuple:
            (item,) = set(a for a in typing.get_args(hint) if a is not Ellipsis)
            return tuple(item(x) for x in text.split(",") if x.strip())
        if hint is int:
            return int(float(text)) if float(text).is_integer() else int(text)
        return hint(text)
    except (ValueError, TypeError):
        raise ConfigError(f"--set {key}={text}: expected {getattr(hint, '__name__', hint)}") from None


def apply_overrides(cfg: Config, overrides: dict[str, str]) -> Config:
    """``cfg`` with ``{"model.hidden": "64,64", "budget": "2e4"}`` applied (strings parsed by type)."""
    valid = settable_keys()
    for key, text in overrides.items():
        if key not in valid:
            raise ConfigError(f"unknown --set key {key!r}; valid keys: {', '.join(valid)}")
        section, _, name = key.rpartition(".")
        if section:
            sub = getattr(cfg, section)
            value = _parse(text, typing.get_type_hints(type(sub))[name], key)
            cfg = replace(cfg, **{section: replace(sub, **{name: value})})
        else:
            cfg = replace(cfg, **{name: _parse(text, typing.get_type_hints(Config)[name], key)})
    return cfg


SEED_LIMIT = 2**31 - 2**22
"""Seeds are in ``[0, SEED_LIMIT)``: ``jax.random.PRNGKey`` keeps only a seed's low 32 bits (larger
seeds would repeat smaller ones) and the agents add offsets of up to about 2·10⁶ for the
environments' seeds, so every seed derived from one stays a distinct non-negative int32."""


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


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


# Lower bounds of the values that count or size something (for a tuple: of every item).
AT_LEAST = {
    "budget": 1,
    "horizon": 0,
    "eval_episodes": 1,
    "model.members": 1,
    "model.hidden": 1,
    "model.batch_size": 1,
    "model.check_every": 1,
    "model.patience": 1,
    "model.max_epochs": 1,
    "model.max_train_samples": 1,
    "model.head_hidden": 1,
    "policy.hidden": 1,
    "policy.epochs": 1,
    "policy.max_updates": 1,
    "policy.first_check": 1,
    "collect.phase_cap": 1,
    "collect.min_val_rollouts": 0,
    "lam.window": 1,
    "modelfree.workers": 1,
    "modelfree.envs": 1,
    "modelfree.eval_every": 1,
}
POSITIVE = ("model.lr", "policy.lr", "policy.action_std", "lam.lr")


def validate(cfg: Config) -> Config:
    """Raise ``ConfigError`` for any value a run would fail on; return ``cfg`` unchanged otherwise.

    Checks every constraint that does not need the file system: numbers are finite (``nan`` and
    ``±inf`` are refused everywhere), counts and sizes at least :data:`AT_LEAST`, rates and scales
    positive, fractions in their ranges, the seed in ``[0, SEED_LIMIT)``, the task one that
    :func:`rp1.envs.make` can make, ``model.reward`` and ``model.done`` sources the task can give
    (:meth:`~rp1.envs.task.Task.source`), and ``policy.batch_steps`` at least the task's horizon for
    a model-based method (one imagined rollout), at least 1 for ``modelfree``. The message names
    the key, what is allowed and the value given.
    """
    for key, value in _values(cfg):
        items = value if isinstance(value, tuple) else (value,)
        _check(all(math.isfinite(x) for x in items if isinstance(x, float)), f"{key} must be a finite number, got {value}")
        if key in AT_LEAST:
            _check(all(x >= AT_LEAST[key] for x in items), f"{key} must be >= {AT_LEAST[key]}, got {value}")
        if key in POSITIVE:
            _check(value > 0, f"{key} must be > 0, got {value}")
    check_method(cfg.method)
    task = _task(cfg)
    _check(0 <= cfg.seed < SEED_LIMIT, f"seed must be in [0, {SEED_LIMIT}) (2**31 - 2**22), got {cfg.seed}")
    _check(cfg.bonus in BONUSES, f"bonus must be one of {', '.join(BONUSES)}, got {cfg.bonus!r}")
    lam = cfg.lam
    _check(lam.mode in ("adaptive", "fixed"), f"lam.mode must be adaptive or fixed, got {lam.mode!r}")
    _check(0.0 <= lam.value <= 1.0, f"lam.value must be in [0, 1], got {lam.value}")
    _check(len(lam.arms) >= 1 and all(0.0 <= a <= 1.0 for a in lam.arms), f"lam.arms must be in [0, 1], got {lam.arms}")
    _check(0.0 in lam.arms or lam.mode == "fixed", "lam.arms must contain 0 (the first iteration's λ)")
    _check(0.0 <= lam.eps <= 1.0, f"lam.eps must be in [0, 1], got {lam.eps}")
    _check(0.0 <= lam.decay <= 1.0, f"lam.decay must be in [0, 1], got {lam.decay}")
    for key, value, allowed in (
        ("lam.weighting", lam.weighting, bandit.WEIGHTINGS),
        ("lam.baseline", lam.baseline, bandit.BASELINES),
        ("lam.first_feedback", lam.first_feedback, FIRST_FEEDBACK),
        ("lam.g_normalizers", lam.g_normalizers, G_NORMALIZERS),
        ("policy.advantage", cfg.policy.advantage, ppo.ADVANTAGES),
    ):
        _check(value in allowed, f"{key} must be one of {', '.join(allowed)}, got {value!r}")
    _check(cfg.scale in SCALES, f"scale must be one of {', '.join(SCALES)}, got {cfg.scale!r}")
    col = cfg.collect
    _check(col.alpha >= 0.0, f"collect.alpha must be >= 0, got {col.alpha}")
    _check(col.noise_max >= 0.0, f"collect.noise_max must be >= 0, got {col.noise_max}")
    _check(0.0 < col.share <= 1.0, f"collect.share must be in (0, 1], got {col.share}")
    for what in ("reward", "done"):
        mode = getattr(cfg.model, what)
        _check(mode in SOURCES, f"model.{what} must be one of {', '.join(SOURCES)}, got {mode!r}")
    _check(cfg.model.stop_on in STOP_RULES, f"model.stop_on must be one of {', '.join(STOP_RULES)}, got {cfg.model.stop_on!r}")
    mf = cfg.modelfree
    _check(mf.envs % mf.workers == 0, f"modelfree.envs ({mf.envs}) must be a multiple of modelfree.workers ({mf.workers})")
    if cfg.method == MODEL_FREE:
        _check(cfg.policy.batch_steps >= 1, f"policy.batch_steps must be >= 1, got {cfg.policy.batch_steps}")
        return cfg
    _check(cfg.budget >= col.phase_cap, f"budget ({cfg.budget}) must be at least one phase (collect.phase_cap = {col.phase_cap})")
    uses_bonus = lam.mode == "adaptive" and max(lam.arms) > 0 or lam.value > 0
    _check(cfg.model.members >= 2 or not uses_bonus, f"model.members must be >= 2 with a variance bonus, got {cfg.model.members}")
    task.source("reward", cfg.model.reward)
    task.source("done", cfg.model.done)
    _check(
        cfg.policy.batch_steps >= task.horizon,
        f"policy.batch_steps must be >= {task.horizon} (one imagined rollout of {cfg.task}'s horizon), got {cfg.policy.batch_steps}",
    )
    return cfg


def resolve(
    preset: str,
    seed: int | None = None,
    budget: int | None = None,
    overrides: dict[str, str] | None = None,
    scale: str | None = None,
) -> Config:
    """Preset, then ``scale`` (if given), then ``--set`` overrides, then seed and budget; validated."""
    return _finish(get_preset(preset), seed, budget, overrides, scale)


def env_config(
    env: str,
    method: str = "rp1",
    seed: int | None = None,
    budget: int | None = None,
    overrides: dict[str, str] | None = None,
    scale: str | None = None,
) -> Config:
    """:func:`resolve` for ``method`` (SPEC §8, or ``modelfree``) on any task ``env`` (a paper
    task, a Gymnasium id or ``package.module:attribute``, see :func:`rp1.envs.make`), built as the
    presets are: the paper's settings, preset name ``<env>-<method>``. The horizon is the override
    ``horizon`` (default 0: the task's own)."""
    preset = f"{path_name(env)}-{check_method(method)}"
    cfg = modelfree_config(env, preset) if method == MODEL_FREE else method_config(env, method, preset)
    return _finish(cfg, seed, budget, overrides, scale)


def _finish(cfg: Config, seed: int | None, budget: int | None, overrides: dict[str, str] | None, scale: str | None) -> Config:
    """``cfg``, then ``scale`` (if given), then overrides, then seed and budget; validated."""
    if scale is not None:
        cfg = with_scale(cfg, scale)
    cfg = apply_overrides(cfg, overrides or {})
    if seed is not None:
        cfg = replace(cfg, seed=seed)
    if budget is not None:
        cfg = replace(cfg, budget=budget)
    return validate(cfg)
