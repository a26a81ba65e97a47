"""From a task's name to its :class:`TaskSpec`: the paper's four tasks, any Gymnasium id, a
``TaskSpec`` of the user's named ``package.module:attribute``, or a name :func:`register_task`
gave a task in this process.

Tasks are named by strings everywhere (``config.json``, sweeps, environment worker processes), so
that any process can make them again. A name :func:`register_task` gave is the exception: it is
known to the process that registered it only (an environment worker process is sent the
``TaskSpec`` itself, :func:`rp1.realenv.environments.task_maker`), so a run of it is continued or
evaluated after registering it again.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

import gymnasium as gym

from rp1.core.errors import ConfigError, clipped, described, did_you_mean
from rp1.envs import locomotion, rewards
from rp1.envs.spec import TaskSpec, check_makes

PAPER_TASKS = {
    "halfcheetah": TaskSpec(
        locomotion.RP1HalfCheetah, 100, rewards.halfcheetah_reward, rewards.never_done
    ),
    "ant": TaskSpec(locomotion.RP1Ant, 100, rewards.ant_reward, rewards.ant_done),
    "hopper": TaskSpec(locomotion.RP1Hopper, 200, rewards.hopper_reward, rewards.never_done),
    "swimmer": TaskSpec(locomotion.RP1Swimmer, 200, rewards.swimmer_reward, rewards.never_done),
}
"""The paper's tasks (algorithm.md §1), with their horizons, rewards and terminations."""

KINDS = (
    f"a task is one of the paper's ({', '.join(PAPER_TASKS)}), a Gymnasium id (e.g. Pendulum-v1), "
    "package.module:attribute naming an rp1.envs.TaskSpec (known to every process) "
    "or a name rp1.register_task gave in this process (call it first); see `rp1 envs`"
)

TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a name :func:`register_task` gives may be: it starts presets' names (``<task>-<method>``)
and run directories, and holds no ``:`` (``package.module:attribute`` names a module's task)."""

_REGISTERED: dict[str, TaskSpec] = {}
"""The tasks :func:`register_task` named in this process, by name."""


def register_task(
    name: str, task: TaskSpec | Callable[[], gym.Env], replace: bool = False
) -> TaskSpec:
    """Name a task of one's own in this process: a `TaskSpec` or a Gymnasium environment factory.

    The name is then a task as a Gymnasium id is, in this process: for
    [`env_config`][rp1.config.env_config], [`make_env`][rp1.envs.make], validation, a run's
    `config.json` and, after registering it again, resuming or evaluating the run
    ([`load_policy`][rp1.evaluation.load_policy]). Other processes do not know it: a sweep's
    workers and `rp1` commands need a `TaskSpec` named `package.module:attribute` instead; the
    processes a model-free run steps its environments in (`modelfree.workers`) are sent the
    `TaskSpec` itself. The factory is called once here to check the environment it makes,
    whose spaces every environment it makes later in this process must have.

    Args:
        name: Letters, digits, `.`, `_` and `-`, starting with a letter or digit; not a paper
            task or a registered Gymnasium id.
        task: A [`TaskSpec`][rp1.envs.TaskSpec], or `make_env() -> gymnasium.Env` (a class,
            a function, a lambda), which becomes `TaskSpec(make_env)`: horizon from the
            environment's time limit or the config's `horizon`, reward and termination learned
            by the world model, as for a Gymnasium id.
        replace: Replace the task `name` already names in this process (registering the same
            task again changes nothing).

    Returns:
        The registered `TaskSpec`.

    Raises:
        ConfigError: For a name that is taken or not of that form, a `task` that is neither,
            or a factory that fails, returns no `gymnasium.Env` or makes one of spaces rp1
            cannot handle (as [`make_env`][rp1.envs.make] checks them).
    """
    spec = _as_spec(name, task)
    _check_name(name, spec, replace)
    check_makes(name, spec)
    _REGISTERED[name] = spec
    return spec


def _as_spec(name: str, task: object) -> TaskSpec:
    """``task`` as a :class:`TaskSpec`: itself, or ``TaskSpec(task)`` for a factory; ConfigError
    for anything else."""
    if isinstance(task, TaskSpec):
        return task
    if not callable(task):
        raise ConfigError(
            f"register_task({clipped(repr(name))}): a task is an rp1.TaskSpec or a function that "
            f"returns a gymnasium.Env, got {clipped(repr(task))}"
        )
    return TaskSpec(task)


def _check_name(name: object, spec: TaskSpec, replace: bool) -> None:
    """ConfigError unless ``name`` may name ``spec`` (see :func:`register_task`)."""
    if not isinstance(name, str) or not TASK_NAME.fullmatch(name):
        raise ConfigError(
            f"register_task: a task's name must match {TASK_NAME.pattern}, got {clipped(repr(name))}"
        )
    taken = (
        (name in PAPER_TASKS, "is the paper's task"),
        (
            name in gym.registry,
            "is a Gymnasium id (another process would make Gymnasium's environment)",
        ),
        (
            not replace and _REGISTERED.get(name, spec) != spec,
            "names another task in this process; pass replace=True to replace it",
        ),
    )
    for clash, why in taken:
        if clash:
            raise ConfigError(f"register_task: {name!r} {why}")


def registered(name: str) -> TaskSpec | None:
    """The :class:`TaskSpec` :func:`register_task` gave ``name`` in this process, or None."""
    return _REGISTERED.get(name)


def spec_of(name: str) -> TaskSpec:
    """The :class:`TaskSpec` of ``name``; ConfigError naming the problem if there is none."""
    if name in PAPER_TASKS:
        return PAPER_TASKS[name]
    if name in _REGISTERED:
        return _REGISTERED[name]
    if ":" in name:
        return reference_spec(name)
    return gymnasium_spec(name)


def gymnasium_spec(env_id: str) -> TaskSpec:
    """The task of a registered Gymnasium environment: made by ``gymnasium.make`` without its time
    limit, which becomes the horizon; reward and termination unknown (learned). An unknown id is
    a ConfigError that names the paper's task it is spelt like (``halfchetah``), else Gymnasium's
    own suggestion."""
    try:
        registered = gym.spec(env_id)
    except gym.error.Error as err:
        cause = did_you_mean(env_id.lower(), PAPER_TASKS).strip() or err
        raise ConfigError(f"unknown task {env_id!r} ({cause}); {KINDS}") from None
    return TaskSpec(GymnasiumMaker(env_id), horizon=registered.max_episode_steps)


@dataclasses.dataclass(frozen=True)
class GymnasiumMaker:
    """``make_env`` of a Gymnasium id's :class:`TaskSpec`: ``gymnasium.make`` of the id without
    its time limit (rp1 adds the horizon's). Equal for one id, so that every environment of the
    id a process makes is compared with its first (:func:`rp1.envs.spec.build`)."""

    env_id: str

    def __call__(self, **kwargs: Any) -> gym.Env:
        """A fresh environment of the id; ``kwargs`` (``render_mode``, …) go to ``gymnasium.make``."""
        unlimited = dataclasses.replace(gym.spec(self.env_id), max_episode_steps=None)
        return gym.make(unlimited, **kwargs)


def import_module_of(reference: str, what: str) -> tuple[ModuleType, str]:
    """``(module, attribute)`` of ``reference``, ``package.module:attribute``, with the module
    imported; ConfigError naming ``what`` (``"task"``, ``"bonus"``) if it is not of that form or
    does not import: it is missing, or its code raises or calls ``sys.exit`` (the exception is
    named, its message cut to one line)."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"{what} {clipped(repr(reference))}: expected package.module:attribute")
    try:
        return importlib.import_module(module_name), attribute
    except (Exception, SystemExit) as err:  # the user's code: anything it raises, or its exit
        raise ConfigError(
            f"{what} {clipped(repr(reference))}: cannot import {module_name} ({described(err)})"
        ) from None


def import_reference(reference: str, what: str) -> Any:
    """The object at ``package.module:attribute``, importing the module (:func:`import_module_of`);
    ConfigError naming ``what`` if the module has no such attribute (or reading it raises)."""
    module, attribute = import_module_of(reference, what)
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ConfigError(
            f"{what} {clipped(repr(reference))}: module {module.__name__} has no attribute {attribute!r}"
        ) from None
    except (Exception, SystemExit) as err:  # a module __getattr__ of the user's
        raise ConfigError(
            f"{what} {clipped(repr(reference))}: reading {attribute} failed ({described(err)})"
        ) from None


def reference_spec(reference: str) -> TaskSpec:
    """The ``TaskSpec`` at ``package.module:attribute``, importing the module. Gymnasium's own
    ``module:env_id`` (an id that importing the module registers) is a Gymnasium id."""
    module, attribute = import_module_of(reference, "task")
    if not hasattr(module, attribute) and attribute in gym.registry:
        return gymnasium_spec(attribute)
    value = import_reference(reference, "task")
    if not isinstance(value, TaskSpec):
        raise ConfigError(
            f"task {reference!r}: {attribute} is a {type(value).__name__}, not an rp1.envs.TaskSpec"
        )
    return value
