"""The four real environments: Gymnasium ``*-v5`` MuJoCo tasks with the paper's changes (algorithm.md §1).

Each class subclasses Gymnasium's environment and changes only what the paper changes: one
observation entry appended with the forward velocity of the last step (0 after reset), no
contact forces, Hopper without termination and with the paper's reward, and FixedSwimmer with its
own model and a reward from the velocity of its ``tip`` site. Horizons are applied in
:func:`rp1.envs.make` with Gymnasium's ``TimeLimit``.
"""

from __future__ import annotations

import logging
import os
from importlib import resources
from typing import TYPE_CHECKING, Any

from rp1.core.errors import RenderError

try:
    import mujoco  # MuJoCo >= 4 sets up OpenGL for MUJOCO_GL on import
except (ImportError, RuntimeError, AttributeError) as err:
    if not os.environ.get("MUJOCO_GL"):
        raise
    raise RenderError.of("MuJoCo cannot set up OpenGL", os.environ["MUJOCO_GL"], err) from None
import numpy as np
from gymnasium.envs.mujoco.ant_v5 import AntEnv
from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv
from gymnasium.envs.mujoco.hopper_v5 import HopperEnv
from gymnasium.envs.mujoco.swimmer_v5 import SwimmerEnv
from gymnasium.spaces import Box

from rp1.envs import rewards

if TYPE_CHECKING:
    from gymnasium.envs.mujoco.mujoco_env import MujocoEnv as _MixinBase
else:
    _MixinBase = object  # the mixin's methods resolve super() in the environment it is mixed into

_log = logging.getLogger("rp1.mujoco")


def _mujoco_warning(message: str) -> None:
    """Route MuJoCo's warnings to logging instead of stderr and a MUJOCO_LOG.TXT in the cwd.

    Gymnasium's half_cheetah.xml uses the deprecated ``settotalmass``; that notice is demoted to
    debug, every other MuJoCo warning stays a warning.
    """
    _log.log(logging.DEBUG if "settotalmass" in message else logging.WARNING, message)


mujoco.set_mju_user_warning(_mujoco_warning)


class _ForwardVelocityObs(_MixinBase):
    """Mixin: append the step's forward velocity ``info[_velocity_key]`` to every observation."""

    _velocity_key = "x_velocity"

    def _widen_observation_space(self) -> None:
        shape = self.observation_space.shape
        assert shape is not None  # the environment's Box
        dim = shape[0] + 1
        self.observation_space = Box(low=-np.inf, high=np.inf, shape=(dim,), dtype=np.float64)

    def reset_model(self) -> np.ndarray:
        return np.append(super().reset_model(), 0.0)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return np.append(obs, info[self._velocity_key]), reward, terminated, truncated, info


class RP1HalfCheetah(_ForwardVelocityObs, HalfCheetahEnv):
    """HalfCheetah-v5, obs 17 + v_x = 18; reward ``v_x − 0.1‖a‖²`` (Gymnasium's own)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(ctrl_cost_weight=rewards.HALFCHEETAH_CTRL, **kwargs)
        self._widen_observation_space()


class RP1Ant(_ForwardVelocityObs, AntEnv):
    """Ant-v5 without contact forces in the obs: 27 + v_x = 28; Gymnasium's reward and termination."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            ctrl_cost_weight=rewards.ANT_CTRL,
            contact_cost_weight=rewards.ANT_CONTACT,
            healthy_reward=rewards.ANT_HEALTHY,
            healthy_z_range=rewards.ANT_Z_RANGE,
            include_cfrc_ext_in_observation=False,
            terminate_when_unhealthy=True,
            **kwargs,
        )
        self._widen_observation_space()


class RP1Hopper(_ForwardVelocityObs, HopperEnv):
    """Hopper-v5 without termination, obs 11 + v_x = 12, reward ``v_x + 1 − 0.1‖a‖² − 3(z − 1.3)²``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            ctrl_cost_weight=rewards.HOPPER_CTRL, terminate_when_unhealthy=False, **kwargs
        )
        self._widen_observation_space()

    def _get_rew(self, x_velocity: float, action: np.ndarray) -> tuple[float, dict[str, float]]:
        z = self.data.qpos[1]
        forward = x_velocity
        ctrl = self.control_cost(action)
        height = rewards.HOPPER_Z_WEIGHT * (z - rewards.HOPPER_Z_TARGET) ** 2
        reward = forward + rewards.HOPPER_ALIVE - ctrl - height
        info = {
            "reward_forward": forward,
            "reward_ctrl": -ctrl,
            "reward_survive": rewards.HOPPER_ALIVE,
            "reward_height": -height,
        }
        return reward, info


class RP1Swimmer(_ForwardVelocityObs, SwimmerEnv):
    """FixedSwimmer: obs qpos[2:] (3) + qvel (5) + v_tip = 9, reward ``v_tip − 1e-4‖a‖²``.

    ``v_tip`` is the x-velocity of the ``tip`` site over the step (frame skip 4 × 0.01 s).
    """

    _velocity_key = "tip_velocity"

    def __init__(self, **kwargs: Any) -> None:
        xml = resources.files("rp1.envs") / "assets" / "fixed_swimmer.xml"
        super().__init__(xml_file=str(xml), ctrl_cost_weight=rewards.SWIMMER_CTRL, **kwargs)
        self._tip_velocity = 0.0
        self._widen_observation_space()

    def _tip_x(self) -> float:
        return float(self.data.site("tip").xpos[0])

    def do_simulation(self, ctrl: np.ndarray, n_frames: int) -> None:
        before = self._tip_x()
        super().do_simulation(ctrl, n_frames)
        # mj_step leaves site positions one substep stale; bring them up to date.
        mujoco.mj_kinematics(self.model, self.data)
        self._tip_velocity = (self._tip_x() - before) / self.dt

    def _get_rew(self, x_velocity: float, action: np.ndarray) -> tuple[float, dict[str, float]]:
        ctrl = self.control_cost(action)
        reward = self._tip_velocity - ctrl
        info = {
            "tip_velocity": self._tip_velocity,
            "reward_forward": self._tip_velocity,
            "reward_ctrl": -ctrl,
        }
        return reward, info
