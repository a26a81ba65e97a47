"""Tasks: ``make(name, seed, horizon) -> (env, task)`` for the paper's four tasks (algorithm.md §1), any
Gymnasium id, a user's :class:`TaskSpec` named ``package.module:attribute`` and a task
:func:`register_task` named in this process.

Example::

    env, task = rp1.envs.make("halfcheetah", seed=0)
    obs, _ = env.reset()
    obs2, r, terminated, truncated, _ = env.step(env.action_space.sample())
    assert abs(task.reward(obs2, a) - r) < 1e-6
    env, task = rp1.envs.make("Pendulum-v1", horizon=100)   # task.reward_fn is None: learned
    rp1.envs.register_task("pendulum-100", lambda: gymnasium.make("Pendulum-v1", max_episode_steps=100))
    env, task = rp1.envs.make("pendulum-100")                # in this process
"""

from __future__ import annotations

import re

import gymnasium as gym

from rp1.envs.lookup import PAPER_TASKS, register_task, registered, spec_of
from rp1.envs.rewards import never_done
from rp1.envs.spec import TaskSpec, build
from rp1.envs.task import Task


def names() -> list[str]:
    """The paper's task names: ``halfcheetah``, ``ant``, ``hopper``, ``swimmer``."""
    return list(PAPER_TASKS)


def make(
    name: str,
    seed: int | None = None,
    horizon: int | None = None,
    render: tuple[int, int] | None = None,
) -> tuple[gym.Env, Task]:
    """Build a task's real environment, limited to its horizon, and its pure reward and shapes.

    `rp1.make_env` is this function.

    Args:
        name: A paper task (`"halfcheetah"`, `"ant"`, `"hopper"`, `"swimmer"`), a Gymnasium id,
            `package.module:attribute` naming a [`TaskSpec`][rp1.envs.TaskSpec] or a name
            [`register_task`][rp1.envs.register_task] gave in this process.
        seed: Seeds the environment's RNG (reset noise) and its action space, so the first
            `env.reset()` and everything after it are reproducible without passing a seed
            again; `None`: unseeded.
        horizon: Steps per episode; `None` or 0: the task's own (a Gymnasium id's is its time
            limit).
        render: `(width, height)`: an environment whose `render()` returns
            `[height, width, 3]` frames (`render_mode="rgb_array"`); `None`: no rendering.

    Returns:
        The Gymnasium environment (in a `TimeLimit` of the horizon) and its
            [`Task`][rp1.envs.Task].

    Raises:
        ConfigError: Naming the problem, for a name that is no task, a package that is not
            installed, spaces rp1 cannot handle (an empty `Box` among them) or other than
            those of the first environment of the task made in this process or, with `render`,
            an environment that cannot render.
    """
    return build(name, spec_of(name), seed, horizon, render)


ANY_TASK = """\
Any other task runs with --env instead of --preset (and --method, default rp1):
  a Gymnasium id with a 1-D Box observation and bounded 1-D Box actions
    rp1 train --env Pendulum-v1 --method rp1 --scale small [--horizon H]   (H: its time limit)
  or a task of your own, an rp1.envs.TaskSpec at package.module:attribute
    rp1 train --env mypackage.tasks:POINT --method greedy --scale small
Reward and termination a task does not give are learned by the world model.
`rp1 envs ID` shows one task of any kind; see docs/extending.md."""
"""How to run a task that is not one of the paper's (``rp1 envs`` prints it)."""


def describe(tasks: list[str] | None = None) -> str:
    """A table of ``tasks`` (names, as :func:`make` takes them), a line each under a header:
    observation and action sizes, horizon (steps), step duration ``dt`` (seconds), and whether
    the reward and the termination are given or learned by the world model. Each task is made
    (and closed) to read them. ``None``: the paper's tasks (:func:`names`), then how to run any
    other (:data:`ANY_TASK`), as ``rp1 envs`` prints them."""
    made = []
    for name in names() if tasks is None else tasks:
        env, task = make(name)
        env.close()
        made.append(task)
    width = max(12, *(len(task.name) for task in made))
    lines = [f"{'task':<{width}} {'obs':>4} {'act':>4} {'horizon':>8} {'dt':>6}  reward   done"]
    for task in made:
        given = ["given" if fn is not None else "learned" for fn in (task.reward_fn, task.done_fn)]
        lines.append(
            f"{task.name:<{width}} {task.obs_dim:>4} {task.act_dim:>4} {task.horizon:>8} {task.dt:>6.3f}  {given[0]:<8} {given[1]}"
        )
    return "\n".join(lines) + (f"\n\n{ANY_TASK}" if tasks is None else "")


def path_name(name: str) -> str:
    """``name`` as one file or directory name: every run of characters other than letters,
    digits, ``.``, ``_`` and ``-`` becomes ``-`` (``mypkg.tasks:POINT`` -> ``mypkg.tasks-POINT``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)


__all__ = [
    "ANY_TASK",
    "Task",
    "TaskSpec",
    "describe",
    "make",
    "names",
    "never_done",
    "path_name",
    "register_task",
    "registered",
]
