"""The methods of SPEC §8 as configs: RP1, its baselines and ablations differ only in how λ is
chosen, the early-stopping α and the bonus; ``modelfree`` is PPO in the real environment."""

from __future__ import annotations

from rp1.config.schema import CollectConfig, Config, LambdaConfig
from rp1.errors import ConfigError

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
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    return method


def modelfree_config(task: str, preset: str) -> Config:
    """PPO in the real env with the paper's policy hyperparameters and a budget of 10^6 steps."""
    return Config(preset=preset, task=task, method=MODEL_FREE, budget=MODEL_FREE_BUDGETS[0], lam=LambdaConfig(mode="fixed"))

