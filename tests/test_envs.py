"""The four tasks against algorithm.md §1: shapes, velocity entry, rewards, termination, horizons, seeding."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rp1 import envs
from rp1.envs import rewards

DIMS = {
    "halfcheetah": (18, 6, 100),
    "ant": (28, 8, 100),
    "hopper": (12, 3, 200),
    "swimmer": (9, 2, 200),
}


def rollout(name, steps=300, seed=0):
    """Random-action transitions over several episodes: obs2 [T, o], act [T, a], rew, term, info."""
    env, task = envs.make(name, seed=seed)
    obs, _ = env.reset()
    rows = []
    for _ in range(steps):
        act = env.action_space.sample()
        obs2, rew, term, trunc, info = env.step(act)
        rows.append((obs, act, obs2, rew, term, trunc, info))
        obs = obs2
        if term or trunc:
            obs, _ = env.reset()
    return env, task, rows


def test_names():
    assert envs.names() == ["halfcheetah", "ant", "hopper", "swimmer"]


@pytest.mark.parametrize("name", list(DIMS))
def test_dimensions(name):
    env, task = envs.make(name)
    obs_dim, act_dim, horizon = DIMS[name]
    assert (task.obs_dim, task.act_dim, task.horizon) == (obs_dim, act_dim, horizon)
    assert env.observation_space.shape == (obs_dim,)
    assert env.action_space.shape == (act_dim,)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (obs_dim,)


@pytest.mark.parametrize("name", list(DIMS))
def test_reward_and_done_match_env(name):
    _, task, rows = rollout(name)
    obs2 = np.stack([r[2] for r in rows])
    act = np.stack([r[1] for r in rows])
    env_rew = np.array([r[3] for r in rows])
    term = np.array([r[4] for r in rows])
    expected = env_rew.copy()
    if name == "ant":  # the model never sees the contact cost; the env's reward includes it
        expected = expected + np.array([-r[6]["reward_contact"] for r in rows])
        assert np.any(np.array([r[6]["reward_contact"] for r in rows]) != 0)
    for o2, a, want, t in zip(obs2, act, expected, term, strict=True):
        assert task.reward(o2, a) == pytest.approx(want, rel=1e-5, abs=1e-6)
        assert bool(task.done(o2)) == bool(t)
    # batched, under jit, on stacked arrays
    batched_r = jax.jit(task.reward)(jnp.asarray(obs2), jnp.asarray(act))
    batched_d = jax.jit(task.done)(jnp.asarray(obs2))
    np.testing.assert_allclose(np.asarray(batched_r), expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(batched_d), term)
    # any leading axes
    r2 = task.reward(obs2[:10].reshape(2, 5, -1), act[:10].reshape(2, 5, -1))
    assert r2.shape == (2, 5)


def test_ant_terminates_and_others_never():
    *_, rows = rollout("ant", steps=400)
    assert any(r[4] for r in rows)
    for name in ("halfcheetah", "hopper", "swimmer"):
        *_, rows = rollout(name, steps=250)
        assert not any(r[4] for r in rows)


def test_ant_done_edges():
    obs = np.zeros((4, 28))
    obs[:, 0] = [0.19, 0.2, 1.0, 1.01]
    np.testing.assert_array_equal(rewards.ant_done(obs), [True, False, False, True])
    obs[1, 5] = np.nan
    assert rewards.ant_done(obs)[1]


def forward_x(name: str, base) -> float:
    """The x position whose change over a step is the task's velocity entry."""
    if name == "swimmer":
        return float(base.data.site("tip").xpos[0])
    if name == "ant":  # Gymnasium's Ant measures the torso body's position
        return float(base.data.body(1).xpos[0])
    return float(base.data.qpos[0])


@pytest.mark.parametrize("name", list(DIMS))
def test_velocity_entry(name):
    env, task = envs.make(name, seed=3)
    obs, _ = env.reset()
    assert obs[-1] == 0.0
    for _ in range(5):
        before = forward_x(name, env.unwrapped)
        obs, *_ = env.step(env.action_space.sample())
        after = forward_x(name, env.unwrapped)
        assert obs[-1] == pytest.approx((after - before) / task.dt, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("name", ["halfcheetah", "swimmer"])
def test_truncates_at_horizon(name):
    env, task = envs.make(name, seed=0)
    env.reset()
    for t in range(task.horizon):
        *_, term, trunc, _ = env.step(env.action_space.sample())
        assert trunc == (t == task.horizon - 1)
        assert not term


@pytest.mark.parametrize("name", list(DIMS))
def test_seeding_reproduces(name):
    def trajectory(seed):
        env, _ = envs.make(name, seed=seed)
        obs, _ = env.reset()
        out = [obs]
        for _ in range(20):
            out.append(env.step(env.action_space.sample())[0])
        return np.stack(out)

    a, b, c = trajectory(7), trajectory(7), trajectory(8)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a[0], c[0])


def test_swimmer_tip_velocity_drives_reward_and_gait_moves_forward():
    env, task = envs.make("swimmer", seed=0)
    env.reset()
    base = env.unwrapped
    total, ctrl = 0.0, 0.0
    x0 = float(base.data.site("tip").xpos[0])
    for t in range(task.horizon):
        phase = 2 * np.pi * 0.5 * t * task.dt  # a 0.5 Hz square-wave gait, tail lagging by π/4
        act = np.sign(np.sin([phase, phase - np.pi / 4])).astype(np.float32)
        obs, rew, *_, info = env.step(act)
        assert obs[-1] == info["tip_velocity"]
        assert rew == pytest.approx(info["tip_velocity"] - 1e-4 * float(act @ act), rel=1e-5)
        total += rew
        ctrl += 1e-4 * float(act @ act)
    x1 = float(base.data.site("tip").xpos[0])
    assert x1 - x0 > 0.5
    # the return telescopes to the tip's displacement over dt, minus the control cost
    assert total == pytest.approx((x1 - x0) / task.dt - ctrl, rel=1e-4)


def test_fixed_swimmer_model_matches_reference():
    from importlib import resources

    import mujoco

    ours = mujoco.MjModel.from_xml_path(
        str(resources.files("rp1.envs") / "assets" / "fixed_swimmer.xml")
    )
    names = [ours.joint(i).name for i in range(ours.njnt)]
    assert names == ["slider1", "slider2", "rot_1", "rot_2", "rot_3"]
    np.testing.assert_allclose(ours.jnt_pos[2], [-1.5, 0, 0])
    assert ours.opt.timestep == 0.01
    assert ours.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT
    np.testing.assert_allclose(ours.actuator_gear[:, 0], [150.0, 150.0])


def test_unknown_task_errors():
    with pytest.raises(
        ValueError,
        match=r"unknown task 'cheetah' .*the paper's \(halfcheetah, ant, hopper, swimmer\)",
    ):
        envs.make("cheetah")


def test_cli_envs_lists_and_rejects(capsys):
    from rp1.cli import main

    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    for name, (o, _, _) in DIMS.items():
        assert f"{name}" in out and f" {o} " in out
    assert main(["envs", "cheetah"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown task 'cheetah'" in err[0] and "see `rp1 envs`" in err[0]
