"""The methods of SPEC §8 as configs: RP1, its baselines, ablations and controls differ only in how
λ is chosen, the early-stopping α, the bonus and the phase length; ``modelfree`` is PPO in the
real environment.

:data:`METHOD_TABLE` is the one list of model-based methods: presets, ``--method``, the report's
labels and groupings and the λ figures are derived from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rp1.config.schema import CollectConfig, Config, LambdaConfig
from rp1.errors import ConfigError

MATCHED_PHASE_LENGTH: dict[str, int] = {"halfcheetah": 300, "ant": 294, "hopper": 600, "swimmer": 600}
"""Real samples per collection phase of the ``-matched`` controls, per paper task: the median
``phase_samples`` of iterations ≥ 1 over the committed ten-seed small-scale RP1 runs
(``docs/laptop-scale/runs``; :func:`rp1.experiments.stats.median_phase_lengths` recomputes it)."""


@dataclass(frozen=True)
class Method:
    """One model-based method of SPEC §8.

    ``lam``: ``"adaptive"`` (the exponential-weights bandit, §6) or ``"fixed"`` at ``lam_value``;
    ``early_stop``: the PCA early stopping of §5 with the paper's α (else α = 0, off); ``bonus``:
    ``"reward"`` or ``"state"`` variance (unused while λ stays 0); ``matched_phases``: phases of the
    task's :data:`MATCHED_PHASE_LENGTH` instead of ``collect.phase_cap``'s default (3,000);
    ``label``: the report's name; ``in_paper``: False for rp1's controls.
    """

    name: str
    label: str
    lam: str
    lam_value: float
    early_stop: bool
    bonus: str = "reward"
    matched_phases: bool = False
    in_paper: bool = True

    @property
    def adaptive(self) -> bool:
        """Whether the method chooses λ online with the bandit (its runs enter the λ analysis)."""
        return self.lam == "adaptive"

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


METHOD_TABLE: tuple[Method, ...] = (
    Method("rp1", "RP1", "adaptive", 0.0, True),
    Method("greedy", "Greedy", "fixed", 0.0, False),
    Method("vr", "V+R", "fixed", 0.5, False),
    Method("rp1-noadapt", "RP1 (λ = 0)", "fixed", 0.0, True),
    Method("rp1-nopca", "RP1 (No EarlyStop)", "adaptive", 0.0, False),
    Method("rp1-statevar", "RP1 (state variance)", "adaptive", 0.0, True, bonus="state"),
    Method("greedy-matched", "Greedy (matched phases)", "fixed", 0.0, False, matched_phases=True, in_paper=False),
    Method(
        "rp1-nopca-matched", "RP1 (No EarlyStop, matched phases)", "adaptive", 0.0, False,
        matched_phases=True, in_paper=False,
    ),
    Method("rp1-fixed05", "RP1 (λ = 0.5)", "fixed", 0.5, True, in_paper=False),
)  # fmt: skip
"""Every model-based method, the paper's first (SPEC §8), then rp1's controls."""

MODEL_BASED_METHODS: dict[str, Method] = {method.name: method for method in METHOD_TABLE}

MODEL_FREE = "modelfree"
MODEL_FREE_LABEL = "PPO"
METHODS = (*MODEL_BASED_METHODS, MODEL_FREE)
MODEL_FREE_BUDGETS = (1_000_000, 5_000_000, 10_000_000)

METHOD_LABELS: dict[str, str] = {**{m.name: m.label for m in METHOD_TABLE}, MODEL_FREE: MODEL_FREE_LABEL}
"""Display name of each method."""

ADAPTIVE_LAMBDA: tuple[str, ...] = tuple(m.name for m in METHOD_TABLE if m.adaptive)
"""Methods that choose λ online with the bandit (SPEC §6, §8)."""


UNSET_PHASE_CAP = 0
"""``collect.phase_cap`` of a matched method on a task without a matched length: validation asks
for ``--set collect.phase_cap=N``."""


def method_config(task: str, method: str, preset: str, **top: Any) -> Config:
    """The paper-scale config of ``method`` on ``task``."""
    m = MODEL_BASED_METHODS[method]
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
    """``method`` if it is one of :data:`METHODS`, else ConfigError listing them."""
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    return method


def modelfree_config(task: str, preset: str) -> Config:
    """PPO in the real env with the paper's policy hyperparameters and a budget of 10^6 steps."""
    return Config(preset=preset, task=task, method=MODEL_FREE, budget=MODEL_FREE_BUDGETS[0], lam=LambdaConfig(mode="fixed"))


DEFINING_KEYS: tuple[str, ...] = ("lam.mode", "lam.value", "collect.alpha", "bonus", "collect.phase_cap")
"""The config keys (dotted) that tell the model-based methods apart."""


def defining_values(method: Method, task: str) -> dict[str, Any] | None:
    """The :data:`DEFINING_KEYS` of ``method`` on ``task`` as its config holds them (λ's value
    only for a fixed λ, the bonus only where λ can be above 0), or None where its phase length on
    ``task`` is the run's choice (a matched method off the paper's tasks)."""
    cap = method.phase_cap(task)
    if cap is None:
        return None
    return _relevant(
        {"lam.mode": method.lam, "lam.value": method.lam_value, "collect.alpha": method.alpha, "bonus": method.bonus, "collect.phase_cap": cap}
    )


def _relevant(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without λ's value under an adaptive λ and without the bonus when λ stays 0:
    settings a run never uses."""
    values = dict(values)
    if values["lam.mode"] == "adaptive":
        values.pop("lam.value")
    elif values["lam.value"] == 0.0:
        values.pop("bonus")
    return values


def run_cell(config: dict[str, Any]) -> str:
    """The method a stored config (``config.json``, migrated) ran as, for pooling runs in a report:
    its ``method``, unless its :data:`DEFINING_KEYS` are not that method's but another method's of
    :data:`METHOD_TABLE` on the run's task; then that method (``rp1`` run with ``--set
    lam.mode=fixed --set lam.value=0.5`` is ``rp1-fixed05``, ``greedy`` with the matched phase cap
    is ``greedy-matched``). Model-free runs and unknown methods keep ``method``."""
    method, task = str(config.get("method")), str(config.get("task"))
    if method not in MODEL_BASED_METHODS:
        return method
    try:
        run = _relevant({key: _dotted(config, key) for key in DEFINING_KEYS})
    except (KeyError, TypeError):
        return method
    own = defining_values(MODEL_BASED_METHODS[method], task)
    if own is not None and _same(run, own):
        return method
    for other in METHOD_TABLE:
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
        math.isclose(float(a[k]), float(b[k])) if isinstance(b[k], (int, float)) and isinstance(a[k], (int, float)) else a[k] == b[k]
        for k in a
    )
