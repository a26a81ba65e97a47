"""``TaskSpec``: how to make a task's environment, and what rp1 knows of it; ``build`` makes both.

A ``TaskSpec`` is what a user writes to run rp1 on an environment of their own (docs/extending.md, "Any
Gymnasium task"); the paper's tasks and Gymnasium ids become one too (:mod:`rp1.envs.lookup`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box

from rp1.core.errors import ConfigError, described
from rp1.envs.task import Task


@dataclass(frozen=True)
class TaskSpec:
    """A task of one's own: an environment factory, its horizon and, where known, its reward and
    termination.

    Named `package.module:attribute`, it is a task for `--env` and
    [`make_env`][rp1.envs.make]. Defined at module level, so that `--env mypackage.tasks:POINT`
    finds it in any process:

    ```python
    POINT = TaskSpec(PointEnv, horizon=50, reward=lambda s, a: -(s[..., :2] ** 2).sum(-1))
    ```

    Attributes:
        make_env: `make_env() -> gymnasium.Env` with a 1-D `Box` observation space and a bounded
            1-D `Box` action space, neither empty, the same on every call, resetting from the
            task's start distribution with `self.np_random`; rp1 limits its episodes to the
            horizon (`TimeLimit`), so it needs no time limit of its own.
        horizon: Steps per episode; `None`: the time limit of the environment `make_env`
            returns (`env.spec.max_episode_steps`).
        reward: `reward(next_obs [..., obs_dim], action [..., act_dim]) -> [...]`, written with
            array operators only, so that it runs on NumPy and (under `jax.jit`) JAX arrays;
            `None`: learned by the world model.
        done: `done(next_obs [..., obs_dim]) -> [...]` (bool), written as `reward` is;
            [`never_done`][rp1.envs.never_done] for a task that never terminates; `None`:
            learned by the world model.

    Raises:
        ConfigError: If `make_env` is not callable, `reward` or `done` is neither callable
            nor `None`, or `horizon` is neither an `int` ≥ 1 nor `None`.
    """

    make_env: Callable[..., gym.Env]
    horizon: int | None = None
    reward: Callable | None = None
    done: Callable | None = None

    def __post_init__(self) -> None:
        optional = {"reward": self.reward, "done": self.done}
        for field, value in {"make_env": self.make_env, **optional}.items():
            if not callable(value) and not (field in optional and value is None):
                raise ConfigError(f"TaskSpec.{field} must be callable, got {value!r}")
        if self.horizon is not None and (not isinstance(self.horizon, int) or self.horizon < 1):
            raise ConfigError(f"TaskSpec.horizon must be an int >= 1 or None, got {self.horizon!r}")


def build(
    name: str,
    spec: TaskSpec,
    seed: int | None = None,
    horizon: int | None = None,
    render: tuple[int, int] | None = None,
) -> tuple[gym.Env, Task]:
    """The environment of ``spec`` limited to its horizon, and its :class:`Task` named ``name``.

    ``horizon`` (``None`` or 0: the spec's) overrides the spec's. With a ``seed``, the environment's
    own random stream (``env.unwrapped.np_random``, its reset noise) and its action space are
    seeded. ConfigError (nothing left open) if making the environment fails (a package it needs is
    not installed, a task's own code raises or exits) or gives no ``gymnasium.Env``,
    if its spaces are not a 1-D ``Box`` observation and a bounded 1-D ``Box`` action, neither
    empty, or not those of the first environment ``spec`` made as ``name`` in this process (its
    factory changed them), or if it has no horizon. ``render = (width, height)``: made with ``render_mode="rgb_array"`` and that size;
    ConfigError if ``make_env`` takes no such arguments or the environment has no ``rgb_array`` mode.
    """
    env = _made(name, spec, render)
    try:
        limit = horizon or spec.horizon or getattr(env.spec, "max_episode_steps", None)
        if not limit:
            raise ConfigError(
                f"task {name!r} has no time limit: give its horizon (--horizon H, the config key horizon)"
            )
        obs_dim, act_dim = _check_spaces(name, spec, env)
    except ConfigError:
        env.close()
        raise
    limited = gym.wrappers.TimeLimit(env, max_episode_steps=limit)
    if seed is not None:
        env.unwrapped.np_random = np.random.default_rng(seed)
        limited.action_space.seed(seed)
    space = env.action_space
    assert isinstance(space, Box)  # checked by _check_spaces
    task = Task(
        name=name,
        obs_dim=obs_dim,
        act_dim=act_dim,
        horizon=int(limit),
        action_low=tuple(float(x) for x in space.low),
        action_high=tuple(float(x) for x in space.high),
        dt=float(getattr(env.unwrapped, "dt", 0.0) or 0.0),
        reward_fn=spec.reward,
        done_fn=spec.done,
    )
    return limited, task


def check_makes(name: str, spec: TaskSpec) -> None:
    """ConfigError unless ``spec.make_env()`` makes an environment rp1 can run, as :func:`build`
    checks it but for the horizon (a config may give it); the environment is closed."""
    env = _made(name, spec, None)
    try:
        _check_spaces(name, spec, env)
    finally:
        env.close()


def _made(name: str, spec: TaskSpec, render: tuple[int, int] | None) -> gym.Env:
    """A fresh environment of ``spec`` (rendering ``render = (width, height)`` frames, if given);
    ConfigError if making it fails or gives no ``gymnasium.Env``."""
    try:
        env = spec.make_env() if render is None else _make_rendering(name, spec, *render)
    except ConfigError:
        raise
    except (gym.error.DependencyNotInstalled, ImportError) as err:
        raise ConfigError(
            f"cannot make task {name!r}: a package it needs is missing ({err})"
        ) from None
    except (Exception, SystemExit) as err:  # a task's own code: what it raises, or its exit
        raise ConfigError(
            f"cannot make task {name!r}: making its environment failed ({described(err)})"
        ) from None
    if not isinstance(env, gym.Env):
        raise ConfigError(
            f"cannot make task {name!r}: its environment factory returned a {type(env).__name__}, not a gymnasium.Env"
        )
    return env


def _make_rendering(name: str, spec: TaskSpec, width: int, height: int) -> gym.Env:
    """``spec.make_env(render_mode="rgb_array", width=…, height=…)``; ConfigError if it cannot render."""
    try:
        env = spec.make_env(render_mode="rgb_array", width=width, height=height)
    except TypeError as err:
        raise ConfigError(
            f"task {name!r} cannot render: its environment takes no render_mode, width and height ({err})"
        ) from None
    if env.render_mode != "rgb_array":
        env.close()
        raise ConfigError(
            f"task {name!r} cannot render: its environment ignores render_mode='rgb_array'"
        )
    return env


def _check_spaces(name: str, spec: TaskSpec, env: gym.Env) -> tuple[int, int]:
    """``(obs_dim, act_dim)``; ConfigError unless the observation space is a 1-D ``Box`` and the
    action space a 1-D ``Box`` with finite bounds, neither empty, and both are those of the first
    environment ``spec`` made in this process (:func:`_check_as_first`)."""
    obs, act = env.observation_space, env.action_space
    for what, space in (("observation", obs), ("action", act)):
        if isinstance(space, Box) and math.prod(space.shape) == 0:
            raise ConfigError(
                f"task {name!r} has an empty {what} space ({space}); rp1 needs at least one "
                f"number per {what} (a 1-D Box of size 1 or more)"
            )
    if not (isinstance(obs, Box) and len(obs.shape) == 1):
        raise ConfigError(
            f"task {name!r} has observation space {obs}; rp1 needs a 1-D Box (a flat vector of numbers)"
        )
    if not (isinstance(act, Box) and len(act.shape) == 1):
        raise ConfigError(
            f"task {name!r} has action space {act}; rp1 needs continuous actions (a 1-D Box)"
        )
    if not (np.isfinite(act.low).all() and np.isfinite(act.high).all()):
        raise ConfigError(
            f"task {name!r} has unbounded actions ({act}); rp1 needs finite action bounds"
        )
    _check_as_first(name, spec, obs, act)
    return int(obs.shape[0]), int(act.shape[0])


_FIRST_SPACES: dict[str, tuple[TaskSpec, Box, Box]] = {}
"""By task name: the ``TaskSpec`` that made the first environment of that name in this process,
and that environment's ``(observation space, action space)``, which every later one must have."""


def _check_as_first(name: str, spec: TaskSpec, obs: Box, act: Box) -> None:
    """ConfigError unless ``obs`` and ``act``, the spaces of an environment ``spec`` just made,
    are those of the first environment it made as ``name`` in this process (recorded here if
    this is the first, or ``name`` now names another ``spec``: ``register_task(…, replace=True)``,
    a module imported again): a factory whose spaces change between calls would make a run's
    environments disagree with the sizes of its networks."""
    first = _FIRST_SPACES.get(name)
    if first is None or first[0] != spec:
        _FIRST_SPACES[name] = (spec, obs, act)
        return
    _, first_obs, first_act = first
    for what, before, now in (("observation", first_obs, obs), ("action", first_act, act)):
        if before != now:
            raise ConfigError(
                f"task {name!r} made environments of different {what} spaces "
                f"({_difference(before, now)}); its factory must make the same spaces every time"
            )


def _difference(first: Box, then: Box) -> str:
    """What tells the space ``then`` from ``first``, on one line: their shapes, else their dtypes,
    else their bounds (``[low … ], [high …]``, long ones elided)."""
    if first.shape != then.shape:
        return f"shape {first.shape} first, then {then.shape}"
    if first.dtype != then.dtype:
        return f"dtype {first.dtype} first, then {then.dtype}"
    return f"bounds {_bounds(first)} first, then {_bounds(then)}"


def _bounds(space: Box) -> str:
    """``[low …] to [high …]`` of ``space``, on one line, long ones elided (:func:`_numbers`)."""
    return f"{_numbers(space.low)} to {_numbers(space.high)}"


def _numbers(values: np.ndarray) -> str:
    """``values`` as ``[a, b, …]`` on one line: the first and last two of more than six."""
    return np.array2string(
        values, max_line_width=sys.maxsize, separator=", ", threshold=6, edgeitems=2
    )
