"""The real environments of a task in ``slots`` side by side, in this process or in worker
processes (:class:`RealEnvs`); how an episode is seeded (:data:`UNSEEDED`, :data:`UNUSED`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

from rp1 import envs
from rp1.envs.spec import build

# ``fork`` would copy JAX's threads into the workers; a fork server starts them clean.
MP_CONTEXT = "forkserver"
UNUSED = -1  # the seed of a slot that runs no episode in a round
UNSEEDED = -2  # the seed of an episode that resets from its environment's own random stream

MakeEnv = Callable[[str, int | None, int], gym.Env]
"""``make_env(task_name, seed, horizon) -> env``: how an :class:`EnvGroup` makes its environments."""


def make_task_env(task_name: str, seed: int | None, horizon: int) -> gym.Env:
    """The environment of :func:`rp1.envs.make` (a :data:`MakeEnv`)."""
    return envs.make(task_name, seed, horizon)[0]


def make_spec_env(spec: envs.TaskSpec, task_name: str, seed: int | None, horizon: int) -> gym.Env:
    """The environment of ``spec`` named ``task_name``, as :func:`make_task_env` makes a name's (a
    :data:`MakeEnv` once ``spec`` is bound)."""
    return build(task_name, spec, seed, horizon)[0]


def task_maker(task_name: str) -> MakeEnv:
    """How every process makes the environments of ``task_name``: by its name
    (:func:`make_task_env`), but a task :func:`rp1.envs.register_task` named in this process
    with its ``TaskSpec`` bound (:func:`make_spec_env`), which a worker process, knowing no
    registrations, is sent (cloudpickled, so its factory may be a lambda or a class of
    ``__main__``)."""
    spec = envs.registered(task_name)
    return make_task_env if spec is None else partial(make_spec_env, spec)


class EnvGroup(gym.Env):
    """``size`` real environments of one task stepped one after another, as one environment with
    batched observations ``[size, obs_dim]``, actions ``[size, act_dim]`` and rewards / flags
    ``[size]``. Environment ``i`` is made with seed ``seed + offset + i`` (unseeded without a
    ``seed``) and episodes of ``horizon`` steps (0: the task's own, see :func:`rp1.envs.make`). Slot ``i`` reads its episode seed ``seeds[offset + i]`` from ``reset``'s ``options``
    (:data:`UNSEEDED`: from its own stream); a slot whose episode ended (or that got
    :data:`UNUSED`) is no longer stepped: it keeps its last observation and returns reward 0. Only
    for :class:`RealEnvs` (no autoreset). ``make_env(task_name, seed, horizon) -> env`` makes each
    environment (default: :func:`rp1.envs.make`'s)."""

    observation_space: Box
    action_space: Box

    def __init__(
        self,
        task_name: str,
        offset: int,
        size: int,
        seed: int | None = None,
        horizon: int = 0,
        make_env: MakeEnv | None = None,
    ) -> None:
        make_env = make_env or make_task_env
        self.envs = [
            make_env(task_name, None if seed is None else seed + offset + i, horizon)
            for i in range(size)
        ]
        self.offset = offset
        single_obs, single_act = self.envs[0].observation_space, self.envs[0].action_space
        # as rp1.envs.make checks them, each environment with the spaces of the first it made
        assert isinstance(single_obs, Box) and isinstance(single_act, Box)
        self.observation_space = Box(-np.inf, np.inf, (size, *single_obs.shape), np.float64)
        self.action_space = Box(
            np.broadcast_to(single_act.low, (size, *single_act.shape)),
            np.broadcast_to(single_act.high, (size, *single_act.shape)),
            dtype=single_act.dtype,
        )
        self._obs = np.zeros(self.observation_space.shape)
        self._running = np.zeros(size, bool)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        assert options is not None, "the episodes' seeds: options={'seeds': ...}"
        seeds = np.asarray(options["seeds"])[self.offset : self.offset + len(self.envs)]
        self._running = seeds != UNUSED
        self._obs = np.zeros(self.observation_space.shape)
        for i, (env, s) in enumerate(zip(self.envs, seeds, strict=True)):
            if s != UNUSED:
                self._obs[i] = env.reset(seed=None if s == UNSEEDED else int(s))[0]
        return self._obs.copy(), {}

    def step(  # type: ignore[override]  # batched: arrays where one environment returns scalars
        self, action: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        size = len(self.envs)
        reward, terminated, truncated = np.zeros(size), np.zeros(size, bool), np.zeros(size, bool)
        for i in np.flatnonzero(self._running):
            self._obs[i], reward[i], terminated[i], truncated[i], _ = self.envs[i].step(action[i])
        self._running &= ~(terminated | truncated)
        return self._obs.copy(), reward, terminated, truncated, {}

    def generators(self) -> list[np.random.Generator]:
        """The generator every environment draws its reset noise from (the objects themselves)."""
        return [env.unwrapped.np_random for env in self.envs]

    def use_generators(self, generators: list[np.random.Generator]) -> None:
        """Make environment ``i`` draw from ``generators[i]`` from now on (the object, not a copy)."""
        for env, generator in zip(self.envs, generators, strict=True):
            env.unwrapped.np_random = generator

    def close(self) -> None:
        for env in self.envs:
            env.close()


class RealEnvs:
    """``slots`` real environments of ``task_name`` in ``workers`` :class:`EnvGroup` s of equal
    size: one in this process when ``workers == 1``, else one process each (``AsyncVectorEnv``,
    autoreset off). ``seed`` seeds the environments' own streams (slot ``i``: ``seed + i``);
    ``horizon`` (0: the task's own) limits their episodes; ``make_env`` makes them (see
    :class:`EnvGroup`; picklable when ``workers > 1``; default: :func:`task_maker`'s).
    ``reset(seeds [slots]) -> obs [slots, obs_dim]`` and ``step(action [slots, act_dim]) -> (obs,
    reward, terminated, truncated)``, each ``[slots, …]``; ``task`` is the task's :class:`Task`."""

    def __init__(
        self,
        task_name: str,
        slots: int,
        workers: int = 1,
        seed: int | None = None,
        horizon: int = 0,
        make_env: MakeEnv | None = None,
    ) -> None:
        size = slots // workers
        self.slots = slots
        probe, self.task = envs.make(task_name, horizon=horizon)
        probe.close()
        make_env = make_env or task_maker(task_name)
        groups = [
            partial(EnvGroup, task_name, w * size, size, seed, horizon, make_env)
            for w in range(workers)
        ]
        self._env: EnvGroup | AsyncVectorEnv
        if workers == 1:
            self._env = groups[0]()
        else:
            self._env = AsyncVectorEnv(
                groups, context=MP_CONTEXT, autoreset_mode=AutoresetMode.DISABLED
            )

    def reset(self, seeds: np.ndarray) -> np.ndarray:
        obs, _ = self._env.reset(options={"seeds": seeds})
        return np.reshape(obs, (self.slots, -1))

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        shape = self._env.action_space.shape
        assert shape is not None  # a Box
        obs, reward, terminated, truncated, _ = self._env.step(np.reshape(action, shape))
        flat = lambda x: np.reshape(x, (self.slots,))  # noqa: E731
        return np.reshape(obs, (self.slots, -1)), flat(reward), flat(terminated), flat(truncated)

    def _group(self) -> EnvGroup:
        if not isinstance(self._env, EnvGroup):
            raise ValueError(
                "the environments' random streams are reachable with workers == 1 only"
            )
        return self._env

    def generators(self) -> list[np.random.Generator]:
        """Every slot's own random stream, ``[slots]`` (:meth:`EnvGroup.generators`; ``workers ==
        1`` only)."""
        return self._group().generators()

    def use_generators(self, generators: list[np.random.Generator]) -> None:
        """Make every slot draw from ``generators [slots]`` (:meth:`EnvGroup.use_generators`;
        ``workers == 1`` only)."""
        self._group().use_generators(generators)

    def close(self) -> None:
        self._env.close()
