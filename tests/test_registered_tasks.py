"""A task of one's own named in Python (``rp1.register_task``): a ``TaskSpec`` or a Gymnasium
environment factory, known by its name in the process that registered it; its runs train, record
the name, and are refused, as one line, in a process that has not registered it again."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces import Box

import point_mass
from helpers import TINY, one_error, read_rows, run_cli
from rp1 import envs
from rp1.config import Config, env_config
from rp1.core.errors import ConfigError
from rp1.envs import lookup
from rp1.envs.lookup import register_task
from rp1.evaluation import load_policy
from rp1.train import run_training

NAME = "line"
HORIZON = 50


class Line(gym.Env):
    """A point mass on a line: state ``[x, v]``, a force in ``[-1, 1]``, reward ``−x²``; no time
    limit of its own."""

    observation_space = Box(-np.inf, np.inf, (2,), np.float64)
    action_space = Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._state = np.array([self.np_random.uniform(-1.0, 1.0), 0.0])
        return self._state.copy(), {}

    def step(self, action):
        velocity = self._state[1] + 0.1 * float(np.clip(action[0], -1.0, 1.0))
        self._state = np.array([self._state[0] + 0.1 * velocity, velocity])
        return self._state.copy(), -(self._state[0] ** 2), False, False, {}


@pytest.fixture(autouse=True)
def no_registered_tasks(monkeypatch):
    """The tasks ``register_task`` names go away after each test."""
    monkeypatch.setattr(lookup, "_REGISTERED", {})


def tiny_config(method: str, budget: int, **extra: str) -> Config:
    """A tiny run of ``method`` on :data:`NAME` (registered by the test)."""
    sets = {**TINY, "horizon": str(HORIZON), "modelfree.envs": "2", **extra}
    return env_config(NAME, method, seed=0, budget=budget, overrides=sets)


# --- registering ----------------------------------------------------------------------------------


def test_a_factory_is_a_task_of_this_process_with_reward_and_done_learned():
    spec = register_task(NAME, Line)
    assert spec == envs.TaskSpec(Line) and register_task(NAME, Line) == spec  # again: no change
    env, task = envs.make(NAME, seed=0, horizon=HORIZON)
    assert (task.name, task.obs_dim, task.act_dim, task.horizon) == (NAME, 2, 1, HORIZON)
    assert task.reward_fn is None and task.done_fn is None
    assert isinstance(env, gym.wrappers.TimeLimit) and env.reset()[0].shape == (2,)
    assert tiny_config("rp1", 600).preset == f"{NAME}-rp1"


def test_a_task_spec_keeps_its_horizon_reward_and_done():
    register_task("plane", point_mass.POINT_MASS)
    task = envs.make("plane")[1]
    assert task.horizon == point_mass.HORIZON and task.reward_fn is point_mass.reward
    assert env_config("plane", "greedy").task == "plane"


def test_replace_gives_a_name_another_task():
    register_task(NAME, Line)
    register_task(NAME, point_mass.POINT_MASS, replace=True)
    assert envs.make(NAME)[1].obs_dim == 4


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("hopper", "register_task: 'hopper' is the paper's task"),
        ("Pendulum-v1", "register_task: 'Pendulum-v1' is a Gymnasium id"),
        ("mine:LINE", "a task's name must match"),
        ("", "a task's name must match"),
        (3, "a task's name must match"),
    ],
)
def test_a_name_that_is_taken_or_malformed_is_refused(name, fragment):
    with pytest.raises(ConfigError, match=fragment):
        register_task(name, Line)


def test_a_name_given_another_task_is_refused_without_replace():
    register_task(NAME, Line)
    with pytest.raises(
        ConfigError, match="'line' names another task in this process; pass replace"
    ):
        register_task(NAME, lambda: Line())
    assert lookup.registered(NAME) == envs.TaskSpec(Line)


def failing() -> gym.Env:
    raise RuntimeError("no simulator here")


@pytest.mark.parametrize(
    ("task", "fragment"),
    [
        (3, "a task is an rp1.TaskSpec or a function that returns a gymnasium.Env, got 3"),
        (lambda: None, "its environment factory returned a NoneType, not a gymnasium.Env"),
        (point_mass.DiscretePointMass, "rp1 needs continuous actions"),
        (point_mass.UnboundedPointMass, "unbounded actions"),
        (point_mass.ImagePointMass, "rp1 needs a 1-D Box"),
        (point_mass.EmptyActionPointMass, "has an empty action space (Box([], [], (0,), float32))"),
        (point_mass.EmptyObservationPointMass, "has an empty observation space (Box([], [], (0,)"),
        (failing, "making its environment failed (RuntimeError: no simulator here)"),
    ],
)
def test_a_bad_factory_is_one_line_and_registers_nothing(task, fragment):
    with pytest.raises(ConfigError) as refused:
        register_task(NAME, task)
    assert fragment in str(refused.value) and "\n" not in str(refused.value)
    assert lookup.registered(NAME) is None


def changing(at: int, space: str) -> Callable[[], gym.Env]:
    """A factory of :class:`Line` environments whose ``space`` changes from its call ``at`` on (0:
    the first): ``"observation"`` 3 numbers instead of 2, ``"action"`` bounds [-2, 1] instead
    of [-1, 1]."""
    calls = itertools.count()

    def make() -> gym.Env:
        env = Line()
        if next(calls) < at:
            return env
        if space == "observation":
            env.observation_space = Box(-np.inf, np.inf, (3,), np.float64)
        else:
            env.action_space = Box(-2.0, 1.0, (1,), np.float32)
        return env

    return make


CHANGED = {
    "observation": "observation spaces (shape (2,) first, then (3,))",
    "action": "action spaces (bounds [-1.] to [1.] first, then [-2.] to [1.])",
}
"""What the refusal of :func:`changing` says differs, by space."""


@pytest.mark.parametrize(
    ("method", "at", "space"),
    [
        ("rp1", 1, "observation"),  # the config's check (rp1.config.validate)
        ("rp1", 3, "action"),  # the first environment of the collecting pool
        ("rp1", 5, "observation"),  # the evaluation pool's
        ("rp1", 8, "observation"),  # the start states' environment, the last a run makes
        ("modelfree", 3, "action"),  # PPO's pool
    ],
)
def test_a_factory_whose_spaces_change_is_refused_before_the_run_writes_a_file(
    tmp_path, method, at, space
):
    """The factory's first environment (registering it) is the reference: a later one of other
    spaces, wherever the run makes it, is one line naming the task and both spaces, and the run's
    directory is not made."""
    register_task(NAME, Line)
    cfg = tiny_config(method, 600)
    register_task(NAME, changing(at, space), replace=True)
    with pytest.raises(ConfigError) as refused:
        run_training(cfg, tmp_path / "run", progress=False)
    message = str(refused.value)
    assert f"task 'line' made environments of different {CHANGED[space]}" in message
    assert "its factory must make the same spaces every time" in message and "\n" not in message
    assert not (tmp_path / "run").exists()


def test_a_name_no_process_registered_says_to_register_it():
    with pytest.raises(ConfigError, match=r"unknown task 'line' .*rp1\.register_task"):
        env_config(NAME)


# --- runs -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_factory_task_trains_and_its_run_needs_the_name_registered_again(tmp_path, capsys):
    """RP1 on a factory's task (learned reward and termination): the run finishes and records the
    name; without the registration, resuming or evaluating it is one line saying to register it;
    registered again, its policy loads."""
    register_task(NAME, lambda: Line())
    cfg = tiny_config("rp1", 600, **{"collect.alpha": "0"})  # two phases of 300 samples
    run = run_training(cfg, tmp_path / "run", progress=False)
    assert [row["iteration"] for row in read_rows(run)] == ["0", "1"]
    assert (run / "finished").exists()
    stored = json.loads((run / "config.json").read_text())
    assert stored["task"] == NAME and stored["horizon"] == HORIZON
    assert load_policy(run).task == NAME

    lookup._REGISTERED.clear()  # a new process
    for refused in (
        lambda: run_training(Config.from_dict(stored), run, resume=True, progress=False),
        lambda: load_policy(run),
    ):
        with pytest.raises(ConfigError, match=r"unknown task 'line' .*call it first"):
            refused()
    code, err = run_cli(["evaluate", str(run), "--episodes", "1"], capsys)
    one_error(code, err, 2, "unknown task 'line'", "rp1.register_task", "module:attribute")

    register_task(NAME, Line)
    assert run_training(Config.from_dict(stored), run, resume=True, progress=False) == run
    assert load_policy(run).task == NAME


@pytest.mark.slow
def test_environment_worker_processes_are_sent_the_factory(tmp_path):
    """Model-free PPO stepping its environments in two worker processes, which know no
    registrations: they make the task from the factory they are sent, a class local to this
    function (so it cannot be imported by name)."""

    class Local(Line):
        pass

    register_task(NAME, Local)
    cfg = tiny_config("modelfree", 600, **{"modelfree.workers": "2"})
    run = run_training(cfg, tmp_path / "run", progress=False)
    assert (run / "finished").exists()
    assert np.isfinite(float(read_rows(run)[-1]["eval_return"]))
