"""The methods of algorithm.md §8 as configs: RP1, its baselines, ablations and controls differ only in how
λ is chosen, the early-stopping α, the bonus and the phase length; ``modelfree`` is PPO in the
real environment.

:data:`METHOD_TABLE` holds rp1's model-based methods; :func:`register_method` (in one process) and
:data:`METHODS_VARIABLE` (in every process rp1 starts) add rows of one's own after them.
:func:`model_based_methods` is the one list: presets, ``--method``, validation, the report's labels
and groupings and the λ figures are derived from it when they are used.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rp1.config.schema import (
    ADAPTIVE,
    FIXED,
    LAMBDA_MODES,
    CollectConfig,
    Config,
    EvalConfig,
    LambdaConfig,
    LambdaMode,
)
from rp1.core.errors import ConfigError, did_you_mean
from rp1.envs.lookup import import_reference

MATCHED_PHASE_LENGTH: dict[str, int] = {
    "halfcheetah": 300,
    "ant": 294,
    "hopper": 600,
    "swimmer": 600,
}
"""Real samples per collection phase of the ``-matched`` controls, per paper task: the median
``phase_samples`` of iterations ≥ 1 over the committed ten-seed small-scale RP1 runs
(``docs/laptop-scale/runs``; :func:`rp1.report.stats.median_phase_lengths` recomputes it)."""


@dataclass(frozen=True)
class Method:
    """One model-based method: a row of algorithm.md §8, or one's own.

    A row of one's own is added with [`register_method`][rp1.config.register_method] or
    `RP1_METHODS`; build it with keywords:
    `Method(name="greedy-half", label="Greedy (λ = 0.5)", lam="fixed", lam_value=0.5,
    early_stop=False)`.

    Attributes:
        name: Its name: `--method`, and the presets `<task>-<name>`.
        label: The report's name of it.
        lam: `"adaptive"`, λ chosen by the bandit (§6), or `"fixed"`, λ fixed at `lam_value`.
        lam_value: λ in [0, 1] when `lam` is `"fixed"`.
        early_stop: The PCA early stopping of §5 with the paper's α (else α = 0, off).
        bonus: `"reward"` or `"state"` variance, or `package.module:function` (the config key
            `bonus`; unused while λ stays 0).
        matched_phases: Phases of the task's length in `rp1.config.MATCHED_PHASE_LENGTH` (the
            median phase of rp1's small-scale runs) instead of `collect.phase_cap`'s default.
        in_paper: False for a control beyond the paper, which the report shows beside rp1's
            controls, not the paper's methods of its kind.
        short_label: Its name as a column of the tables that compare rp1's controls (its label
            if None).
    """

    name: str
    label: str
    lam: LambdaMode
    lam_value: float
    early_stop: bool
    bonus: str = "reward"
    matched_phases: bool = False
    in_paper: bool = True
    short_label: str | None = None

    @property
    def adaptive(self) -> bool:
        """Whether the method chooses λ online with the bandit (its runs enter the λ analysis)."""
        return self.lam == ADAPTIVE

    @property
    def uses_bonus(self) -> bool:
        """Whether the bonus enters its imagined rewards: λ from the bandit or fixed above 0."""
        return self.adaptive or self.lam_value > 0

    @property
    def alpha(self) -> float:
        """The early-stopping threshold α of its config (0: off)."""
        return CollectConfig.alpha if self.early_stop else 0.0

    def phase_cap(self, task: str) -> int | None:
        """``collect.phase_cap`` of the method on ``task``; None for a matched method on a task
        without a matched length (its runs must set ``collect.phase_cap``)."""
        if not self.matched_phases:
            return CollectConfig.phase_cap
        return MATCHED_PHASE_LENGTH.get(task)


RP1 = "rp1"
"""The paper's method: the row the report compares the others with."""
GREEDY = "greedy"
VR = "vr"
RP1_NOADAPT = "rp1-noadapt"
RP1_NOPCA = "rp1-nopca"
RP1_STATEVAR = "rp1-statevar"
GREEDY_MATCHED = "greedy-matched"
RP1_NOPCA_MATCHED = "rp1-nopca-matched"
RP1_FIXED05 = "rp1-fixed05"
"""The names of :data:`METHOD_TABLE`'s rows, for the code that names a method (the report's
comparisons, the paper's numbers)."""

DEFAULT_METHOD = RP1
"""The method of a run or sweep on a task (``--env``, ``--envs``) that names none."""

METHOD_TABLE: tuple[Method, ...] = (
    Method(RP1, "RP1", ADAPTIVE, 0.0, True),
    Method(GREEDY, "Greedy", FIXED, 0.0, False),
    Method(VR, "V+R", FIXED, 0.5, False),
    Method(RP1_NOADAPT, "RP1 (λ = 0)", FIXED, 0.0, True),
    Method(RP1_NOPCA, "RP1 (No EarlyStop)", ADAPTIVE, 0.0, False, short_label="No EarlyStop"),
    Method(RP1_STATEVAR, "RP1 (state variance)", ADAPTIVE, 0.0, True, bonus="state"),
    Method(
        GREEDY_MATCHED, "Greedy (matched phases)", FIXED, 0.0, False,
        matched_phases=True, in_paper=False, short_label="Greedy (matched)",
    ),
    Method(
        RP1_NOPCA_MATCHED, "RP1 (No EarlyStop, matched phases)", ADAPTIVE, 0.0, False,
        matched_phases=True, in_paper=False, short_label="No EarlyStop (matched)",
    ),
    Method(RP1_FIXED05, "RP1 (λ = 0.5)", FIXED, 0.5, True, in_paper=False),
)  # fmt: skip
"""rp1's model-based methods, the paper's first (algorithm.md §8), then rp1's controls."""

MODEL_FREE = "modelfree"
MODEL_FREE_LABEL = "PPO"
MODEL_FREE_BUDGETS = (1_000_000, 5_000_000, 10_000_000)
"""Real steps of model-free PPO in the paper (algorithm.md §8): the presets' budget is the first;
the report draws PPO's best return by each as a reference line."""
MODEL_FREE_EVAL_EVERY = 50_000
"""``eval.every`` of model-free runs: one grid evaluation per PPO update of the paper's 50,000-step
batches (its policy changes no more often; a 1,000-sample grid would evaluate more than it trains)."""
QUICK = "quick"
"""The suffix of the presets ``<task>-quick`` (:func:`rp1.config.presets.quick_config`), which no
method may be named."""
FIRST = "first"
"""The suffix of the presets ``<task>-first`` (:func:`rp1.config.presets.first_config`), which no
method may be named."""

METHODS_VARIABLE = "RP1_METHODS"
"""The environment variable that names rows of one's own, ``package.module:ATTRIBUTE[,…]``, each
a :class:`Method`: every rp1 process imports them the first time it reads the methods
(:func:`model_based_methods`), so ``rp1 train``, a sweep's workers (which inherit it), ``--resume``
and ``rp1 report`` know the same methods."""

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a method's name may be: it ends preset names (``<task>-<name>``) and run directories, and
``--methods`` separates names by commas."""

_REGISTERED: dict[str, Method] = {}
"""The rows :func:`register_method` added in this process, by name, in the order added."""


def register_method(row: Method) -> Method:
    """Add a method to this process's methods, after rp1's and those added before.

    Its presets `<task>-<name>`, `--method`, validation, the report's label and pooling and, for
    an adaptive λ, the λ analysis then know it. Registering the same row again changes nothing.
    Other processes (a sweep's workers, `--resume`, `rp1 report`) know it through the environment
    variable `RP1_METHODS` (`package.module:ATTRIBUTE[,…]`).

    Args:
        row: The method.

    Returns:
        `row`.

    Raises:
        ConfigError: For a row that is not a [`Method`][rp1.config.Method], a name that is not
            letters, digits, `.`, `_` and `-` (starting with a letter or digit), `modelfree` or
            `quick`, a name another row has, `lam` not `"adaptive"` or `"fixed"`, `lam_value`
            outside [0, 1], an empty label or an empty short label.
    """
    _REGISTERED[row.name] = _checked(
        row, _rows(METHOD_TABLE, _REGISTERED.values()), "register_method"
    )
    return row


def model_based_methods() -> dict[str, Method]:
    """Every model-based method by name: :data:`METHOD_TABLE`'s rows, then those added with
    :func:`register_method`, then those :data:`METHODS_VARIABLE` names (their modules imported
    once per value of the variable). ConfigError if a named row does not import, is not a
    :class:`Method` or is not a row :func:`register_method` would take."""
    return _rows(
        METHOD_TABLE, _REGISTERED.values(), _named_rows(os.environ.get(METHODS_VARIABLE, ""))
    )


def method_names() -> tuple[str, ...]:
    """The names ``--method`` takes: every model-based method, then ``modelfree``."""
    return (*model_based_methods(), MODEL_FREE)


def method_label(method: str, short: bool = False) -> str:
    """The report's display name of ``method`` (its row's label, or with ``short`` its short label
    where it has one; PPO for ``modelfree``); the name itself for a method this process does not
    know."""
    if method == MODEL_FREE:
        return MODEL_FREE_LABEL
    row = model_based_methods().get(method)
    if row is None:
        return method
    return (row.short_label or row.label) if short else row.label


def adaptive_lambda() -> tuple[str, ...]:
    """The methods that choose λ online with the bandit (algorithm.md §6, §8): their runs enter the λ
    analysis."""
    return tuple(name for name, row in model_based_methods().items() if row.adaptive)


@lru_cache
def _named_rows(references: str) -> tuple[object, ...]:
    """The objects that ``references`` (:data:`METHODS_VARIABLE`'s value) names, imported."""
    names = [reference.strip() for reference in references.split(",") if reference.strip()]
    return tuple(import_reference(reference, METHODS_VARIABLE) for reference in names)


def _rows(*groups: Iterable[object]) -> dict[str, Method]:
    """The rows of ``groups`` by name, each :func:`_checked` against those before it."""
    rows: dict[str, Method] = {}
    for group in groups:
        for row in group:
            checked = _checked(row, rows, METHODS_VARIABLE)
            rows[checked.name] = checked
    return rows


def _checked(row: object, known: dict[str, Method], source: str) -> Method:
    """``row`` if it is a :class:`Method` that may join ``known`` (see :func:`register_method`),
    else ConfigError naming ``source``."""
    if not isinstance(row, Method):
        raise ConfigError(f"{source}: a method is an rp1.config.Method, got a {type(row).__name__}")
    problems = (
        (
            not isinstance(row.name, str) or not NAME.fullmatch(row.name),
            f"a name must match {NAME.pattern}",
        ),
        (row.name in (MODEL_FREE, QUICK, FIRST), f"the presets <task>-{row.name} are rp1's"),
        (
            known.get(row.name, row) != row,
            f"another row has this name ({known.get(row.name, row).label})",
        ),
        (
            row.lam not in LAMBDA_MODES,
            f"lam must be {' or '.join(LAMBDA_MODES)}, got {row.lam!r}",
        ),
        (
            not isinstance(row.lam_value, (int, float)) or not 0.0 <= row.lam_value <= 1.0,
            f"lam_value must be in [0, 1], got {row.lam_value!r}",
        ),
        (
            not isinstance(row.label, str) or not row.label,
            f"label must be a non-empty string, got {row.label!r}",
        ),
        (
            row.short_label is not None
            and (not isinstance(row.short_label, str) or not row.short_label),
            f"short_label must be None or a non-empty string, got {row.short_label!r}",
        ),
    )
    for bad, problem in problems:
        if bad:
            raise ConfigError(f"{source}: method {row.name!r}: {problem}")
    return row


UNSET_PHASE_CAP = 0
"""``collect.phase_cap`` of a matched method on a task without a matched length: validation asks
for ``--set collect.phase_cap=N``."""


def method_config(task: str, method: str, preset: str, **top: Any) -> Config:
    """The paper-scale config of ``method`` on ``task``."""
    m = model_based_methods()[method]
    cap = m.phase_cap(task)
    return Config(
        preset=preset,
        task=task,
        method=method,
        bonus=m.bonus,
        collect=CollectConfig(alpha=m.alpha, phase_cap=UNSET_PHASE_CAP if cap is None else cap),
        lam=LambdaConfig(mode=m.lam, value=m.lam_value),
        **top,
    )


def check_method(method: str) -> str:
    """``method`` if it is one of :func:`method_names`, else ConfigError listing them."""
    names = method_names()
    if not isinstance(method, str) or method not in names:
        raise ConfigError(
            f"unknown method {method!r}; {did_you_mean(str(method), names)}valid methods: {', '.join(names)} (one's own: {METHODS_VARIABLE}, see docs/extending.md)"
        )
    return method


def modelfree_config(task: str, preset: str) -> Config:
    """PPO in the real env with the paper's policy hyperparameters and a budget of 10^6 steps."""
    return Config(
        preset=preset,
        task=task,
        method=MODEL_FREE,
        budget=MODEL_FREE_BUDGETS[0],
        lam=LambdaConfig(mode=FIXED),
        eval=EvalConfig(every=MODEL_FREE_EVAL_EVERY),
    )


DEFINING_KEYS: tuple[str, ...] = (
    "lam.mode",
    "lam.value",
    "collect.alpha",
    "bonus",
    "collect.phase_cap",
)
"""The config keys (dotted) that tell the model-based methods apart."""


def defining_values(method: Method, task: str) -> dict[str, Any] | None:
    """The :data:`DEFINING_KEYS` of ``method`` on ``task`` as its config holds them (λ's value
    only for a fixed λ, the bonus only where λ can be above 0), or None where its phase length on
    ``task`` is the run's choice (a matched method off the paper's tasks)."""
    cap = method.phase_cap(task)
    if cap is None:
        return None
    return _relevant(
        {
            "lam.mode": method.lam,
            "lam.value": method.lam_value,
            "collect.alpha": method.alpha,
            "bonus": method.bonus,
            "collect.phase_cap": cap,
        }
    )


def _relevant(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without λ's value under an adaptive λ and without the bonus when λ stays 0:
    settings a run never uses."""
    values = dict(values)
    if values["lam.mode"] == ADAPTIVE:
        values.pop("lam.value")
    elif values["lam.value"] == 0.0:
        values.pop("bonus")
    return values


def run_cell(config: dict[str, Any]) -> str:
    """The method a stored config (``config.json``, migrated) ran as, for pooling runs in a report:
    its ``method``, unless its :data:`DEFINING_KEYS` are not that method's but another method's of
    :func:`model_based_methods` on the run's task; then that method (``rp1`` run with ``--set
    lam.mode=fixed --set lam.value=0.5`` is ``rp1-fixed05``, ``greedy`` with the matched phase cap
    is ``greedy-matched``). Model-free runs and unknown methods keep ``method``."""
    method, task = str(config.get("method")), str(config.get("task"))
    methods = model_based_methods()
    if method not in methods:
        return method
    try:
        run = _relevant({key: _dotted(config, key) for key in DEFINING_KEYS})
    except (KeyError, TypeError):
        return method
    own = defining_values(methods[method], task)
    if own is not None and _same(run, own):
        return method
    for other in methods.values():
        values = defining_values(other, task)
        if values is not None and _same(run, values):
            return other.name
    return method


def _dotted(config: dict[str, Any], key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        value = value[part]
    return value


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal keys and values, numbers compared as numbers (``300 == 300.0``)."""
    if a.keys() != b.keys():
        return False
    return all(
        math.isclose(float(a[k]), float(b[k]))
        if isinstance(b[k], (int, float)) and isinstance(a[k], (int, float))
        else a[k] == b[k]
        for k in a
    )
