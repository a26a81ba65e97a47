"""From a task's name to its :class:`TaskSpec`: the paper's four tasks, any Gymnasium id, or a
``TaskSpec`` of the user's named ``package.module:attribute``.

Tasks are named by strings everywhere (``config.json``, sweeps, environment worker processes), so
that any process can make them again: a name never depends on what a process registered before.
"""

from __future__ import annotations

import dataclasses
import importlib
from functools import partial
from types import ModuleType
from typing import Any

import gymnasium as gym

from rp1.core.errors import ConfigError, clipped, described, did_you_mean
from rp1.envs import locomotion, rewards
from rp1.envs.spec import TaskSpec

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
    f"a task is one of the paper's ({', '.join(PAPER_TASKS)}), a Gymnasium id (e.g. Pendulum-v1) "
    "or package.module:attribute naming an rp1.envs.TaskSpec; see `rp1 envs`"
)


def spec_of(name: str) -> TaskSpec:
    """The :class:`TaskSpec` of ``name``; ConfigError naming the problem if there is none."""
    if name in PAPER_TASKS:
        return PAPER_TASKS[name]
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
    unlimited = dataclasses.replace(registered, max_episode_steps=None)
    return TaskSpec(partial(gym.make, unlimited), horizon=registered.max_episode_steps)


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
