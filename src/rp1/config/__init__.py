"""Typed, frozen run configuration with the paper's values as defaults, and the preset registry.

A :class:`Config` is built from a preset (``halfcheetah-rp1``, ``ant-greedy``, ``hopper-quick``, …)
with :func:`resolve`, or from any task and a method with :func:`env_config` (``Pendulum-v1``,
``rp1``), optionally overridden with ``key=value`` strings (``model.hidden=64,64``), and validated
once (:func:`validate`).

The package, one job per module:

- :mod:`~rp1.config.defaults` — the paper's defaults as plain values, which the algorithm's modules
  read too (the config sits below the algorithm and imports neither it nor JAX);
- :mod:`~rp1.config.schema` — the sections and their defaults (:class:`Config`, ``config.json``);
- :mod:`~rp1.config.methods` — the methods of algorithm.md §8 as configs, and rows of one's own;
- :mod:`~rp1.config.presets` — scales and the preset registry;
- :mod:`~rp1.config.overrides` — ``--set key=value``;
- :mod:`~rp1.config.sources` — which runs a command means: a preset or a task and method, the
  overrides beside them, a sweep's seeds, a tree of runs to read;
- :mod:`~rp1.config.validation` — :func:`validate`;
- :mod:`~rp1.config.migrations` — schema versions, and a config written by an earlier rp1 read as it ran.
"""

from __future__ import annotations

from collections.abc import Mapping

from rp1.config.methods import (
    MATCHED_PHASE_LENGTH,
    METHOD_TABLE,
    METHODS_VARIABLE,
    MODEL_FREE,
    MODEL_FREE_BUDGETS,
    Method,
    adaptive_lambda,
    check_method,
    method_config,
    method_label,
    method_names,
    model_based_methods,
    modelfree_config,
    register_method,
    run_cell,
)
from rp1.config.overrides import FIXED_KEYS, apply_overrides, settable_keys
from rp1.config.presets import (
    QUICK_BUDGET,
    SCALES,
    get_preset,
    preset_descriptions,
    preset_registry,
    quick_config,
    with_scale,
)
from rp1.config.schema import (
    FIRST_FEEDBACK,
    G_NORMALIZERS,
    CollectConfig,
    Config,
    EvalConfig,
    LambdaConfig,
    ModelConfig,
    ModelFreeConfig,
    PolicyConfig,
)
from rp1.config.validation import SEED_LIMIT, validate
from rp1.core.errors import ConfigError
from rp1.envs import path_name


def resolve(
    preset: str,
    seed: int | None = None,
    budget: int | None = None,
    overrides: Mapping[str, object] | None = None,
    scale: str | None = None,
) -> Config:
    """Build a preset's config, as `rp1 train --preset` does, and validate it.

    The preset first, then `scale`, then `overrides`, then `seed` and `budget`.

    Args:
        preset: A preset's name (`rp1 presets` lists them), e.g. `"halfcheetah-quick"`.
        seed: The seed every random stream of the run is spawned from (`None`: the preset's, 0).
        budget: Real samples to collect (`None`: the preset's).
        overrides: Config keys and their values, as `--set` strings (`{"model.hidden": "64,64"}`)
            or typed (`{"model.hidden": [64, 64], "budget": 2e4}`: an `int` for a count, a float
            only if whole); the Configuration page lists the keys.
        scale: `"paper"` or `"small"`, the sizes of networks and batches (`None`: the preset's).

    Returns:
        The validated config.

    Raises:
        ConfigError: For anything it cannot take, a name or a value; the message names it.
    """
    return _finish(get_preset(preset), seed, budget, overrides, scale)


def env_config(
    env: str,
    method: str = "rp1",
    seed: int | None = None,
    budget: int | None = None,
    overrides: Mapping[str, object] | None = None,
    scale: str | None = None,
) -> Config:
    """Build the config of a method on any task, as `rp1 train --env --method` does.

    Built as the presets are (the paper's settings, preset name `<env>-<method>`), then as
    [`resolve`][rp1.config.resolve] goes on: `scale`, `overrides`, `seed`, `budget`; validated.
    The horizon is the override `horizon` (default 0: the task's own).

    Args:
        env: The task: a paper task, a Gymnasium id, `package.module:attribute` or a name
            [`register_task`][rp1.envs.register_task] gave (what [`make_env`][rp1.envs.make]
            takes).
        method: A method of algorithm.md §8 (`rp1 presets` shows each as `TASK-METHOD`), one
            added with [`register_method`][rp1.config.register_method], or `"modelfree"`.
        seed: As for [`resolve`][rp1.config.resolve].
        budget: As for [`resolve`][rp1.config.resolve].
        overrides: As for [`resolve`][rp1.config.resolve].
        scale: As for [`resolve`][rp1.config.resolve].

    Returns:
        The validated config.

    Raises:
        ConfigError: For anything it cannot take (an unknown method, a task that is not a
            name, a bad override); the message names it.
    """
    if not isinstance(env, str):
        raise ConfigError(
            f"a task is a name, not {env!r}; `rp1 envs` lists the paper's tasks, and "
            "rp1.register_task names a TaskSpec or an environment factory of one's own"
        )
    preset = f"{path_name(env)}-{check_method(method)}"
    cfg = (
        modelfree_config(env, preset)
        if method == MODEL_FREE
        else method_config(env, method, preset)
    )
    return _finish(cfg, seed, budget, overrides, scale)


def _finish(
    cfg: Config,
    seed: int | None,
    budget: int | None,
    overrides: Mapping[str, object] | None,
    scale: str | None,
) -> Config:
    """``cfg``, then ``scale`` (if given), then overrides, then seed and budget; validated."""
    if scale is not None:
        cfg = with_scale(cfg, scale)
    cfg = apply_overrides(cfg, overrides or {})
    given = {"seed": seed, "budget": budget}
    return validate(apply_overrides(cfg, {k: v for k, v in given.items() if v is not None}))


__all__ = [
    "FIRST_FEEDBACK",
    "FIXED_KEYS",
    "G_NORMALIZERS",
    "MATCHED_PHASE_LENGTH",
    "METHODS_VARIABLE",
    "METHOD_TABLE",
    "MODEL_FREE",
    "MODEL_FREE_BUDGETS",
    "QUICK_BUDGET",
    "SCALES",
    "SEED_LIMIT",
    "CollectConfig",
    "Config",
    "EvalConfig",
    "LambdaConfig",
    "Method",
    "ModelConfig",
    "ModelFreeConfig",
    "PolicyConfig",
    "adaptive_lambda",
    "apply_overrides",
    "check_method",
    "env_config",
    "get_preset",
    "method_config",
    "method_label",
    "method_names",
    "model_based_methods",
    "modelfree_config",
    "preset_descriptions",
    "preset_registry",
    "quick_config",
    "register_method",
    "resolve",
    "run_cell",
    "settable_keys",
    "validate",
    "with_scale",
]
