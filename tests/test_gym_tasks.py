"""Any Gymnasium task and a user's own task (``--env``): the Task made from the env's spaces and
time limit, the horizon override, end-to-end runs through the Python API, the CLI (kill and
resume), a sweep over ``--envs/--methods`` and its report, and bad input.

On a task without reward or termination functions a model-based method runs on the world model's
learned heads (``model.reward=auto``, ``model.done=auto``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import point_mass
from helpers import (
    TINY,
    Crash,
    crash_after_steps,
    kill_at_pause,
    metrics_without_timing,
    read_rows,
    set_args,
    snapshot,
    tiny_sets,
)
from rp1 import envs
from rp1.cli import main
from rp1.config import env_config, resolve
from rp1.core.errors import ConfigError
from rp1.train import run_training

POINT = "point_mass:POINT_MASS"

# --- tasks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "obs_dim", "act_dim", "bound", "horizon", "dt"),
    [
        ("Pendulum-v1", 3, 1, 2.0, 200, 0.05),
        ("InvertedPendulum-v5", 4, 1, 3.0, 1000, 0.04),
        ("MountainCarContinuous-v0", 2, 1, 1.0, 999, 0.0),
    ],
)
def test_gymnasium_task_from_its_spaces_and_time_limit(name, obs_dim, act_dim, bound, horizon, dt):
    env, task = envs.make(name)
    assert (task.name, task.obs_dim, task.act_dim, task.horizon) == (
        name,
        obs_dim,
        act_dim,
        horizon,
    )
    assert task.action_low == (-bound,) * act_dim and task.action_high == (bound,) * act_dim
    assert task.dt == pytest.approx(dt)
    assert task.reward_fn is None and task.done_fn is None  # learned by the world model
    assert env.observation_space.shape == (obs_dim,)
    env.close()


@pytest.mark.parametrize("horizon", [30, 300])
def test_horizon_override_replaces_the_time_limit(horizon):
    env, task = envs.make("Pendulum-v1", seed=0, horizon=horizon)  # 300: longer than its own 200
    assert task.horizon == horizon
    env.reset()
    steps, truncated = 0, False
    while not truncated:
        truncated = env.step(env.action_space.sample())[3]
        steps += 1
    assert steps == horizon


def test_seeded_gymnasium_task_is_reproducible():
    first = [envs.make("Pendulum-v1", seed=7)[0].reset()[0] for _ in range(2)]
    other = envs.make("Pendulum-v1", seed=8)[0].reset()[0]
    np.testing.assert_array_equal(first[0], first[1])
    assert not np.array_equal(first[0], other)


def test_own_task_reward_matches_its_env_in_numpy_and_jax():
    env, task = envs.make(POINT, seed=0)
    assert (task.name, task.obs_dim, task.act_dim, task.horizon, task.dt) == (
        POINT,
        4,
        2,
        point_mass.HORIZON,
        point_mass.DT,
    )
    assert task.action_low == (-1.0, -1.0) and task.action_high == (1.0, 1.0)
    env.reset()
    next_obs, actions, returned = [], [], []
    for _ in range(task.horizon):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, _ = env.step(action)
        next_obs.append(obs), actions.append(action), returned.append(reward)
    assert truncated and not terminated
    next_obs, actions = np.stack(next_obs), np.stack(actions)
    np.testing.assert_allclose(task.reward(next_obs, actions), returned)
    jitted = jax.jit(task.reward)(jnp.asarray(next_obs, jnp.float32), jnp.asarray(actions))
    np.testing.assert_allclose(jitted, returned, rtol=1e-5)
    assert not np.asarray(jax.jit(task.done)(jnp.asarray(next_obs))).any()


def test_path_name_makes_one_path_component():
    assert envs.path_name("Pendulum-v1") == "Pendulum-v1"
    assert envs.path_name("my.pkg:TASK") == "my.pkg-TASK"
    assert envs.path_name("ALE/Pong-v5") == "ALE-Pong-v5"
    assert env_config(POINT, "greedy").preset == "point_mass-POINT_MASS-greedy"


def test_env_config_of_a_paper_task_is_its_preset():
    assert env_config("hopper", "vr") == resolve("hopper-vr")
    assert env_config("hopper", "modelfree") == resolve("hopper-modelfree")


# --- runs -----------------------------------------------------------------------------------------


def tiny_run(tmp_path: Path, task: str, method: str, budget: int, **extra: str) -> Path:
    """A tiny run of ``method`` on ``task`` through the Python API; returns its directory."""
    cfg = env_config(
        task, method, seed=1, budget=budget, overrides={**TINY, "modelfree.envs": "2", **extra}
    )
    return run_training(cfg, tmp_path / "run", progress=False)


def assert_finished_with_evaluations(run_dir: Path, iterations: int) -> None:
    """The run reached its budget with at least ``iterations`` rows (PCA early stopping may cut
    phases short) and its last row holds a finite evaluation."""
    metrics = read_rows(run_dir)
    assert len(metrics) >= iterations and (run_dir / "finished").exists()
    assert np.isfinite(float(metrics[-1]["eval_return"]))


def test_own_task_modelfree_through_the_python_api(tmp_path):
    run_dir = tiny_run(tmp_path, POINT, "modelfree", 600)  # 300-step batches: 2 updates
    assert_finished_with_evaluations(run_dir, 2)


@pytest.mark.slow
def test_rp1_on_own_task_with_its_reward_function(tmp_path):
    run_dir = tiny_run(tmp_path, POINT, "rp1", 600)  # phases of at most 300 samples
    assert_finished_with_evaluations(run_dir, 2)
    # imagined with its reward
    assert all(np.isfinite(float(r["model_return"])) for r in read_rows(run_dir)[1:])


@pytest.mark.slow
def test_rp1_on_pendulum_learns_reward_and_done_and_resumes_identically_after_a_crash(
    tmp_path, monkeypatch
):
    """RP1 on a Gymnasium task with no reward function (learned heads): the run writes finite
    metrics, and one that dies after two iterations and is resumed writes exactly the metrics of
    the uninterrupted run (α = 0: four 150-sample phases whatever the data)."""
    cfg = env_config(
        "Pendulum-v1",
        "rp1",
        seed=1,
        budget=600,
        overrides={**TINY, "horizon": "50", "collect.phase_cap": "150", "collect.alpha": "0"},
    )
    assert cfg.horizon == 50
    reference = run_training(cfg, tmp_path / "reference", progress=False)
    assert_finished_with_evaluations(reference, 4)
    # imagined with the learned reward
    assert all(np.isfinite(float(r["model_return"])) for r in read_rows(reference)[1:])

    crash_after_steps(monkeypatch, 2)
    with pytest.raises(Crash):
        run_training(cfg, tmp_path / "resumed", progress=False)
    monkeypatch.undo()
    run_training(cfg, tmp_path / "resumed", resume=True, progress=False)
    assert metrics_without_timing(tmp_path / "resumed") == metrics_without_timing(reference)


@pytest.mark.slow
def test_rp1_on_own_task_without_reward_function(tmp_path):
    run_dir = tiny_run(tmp_path, "point_mass:POINT_MASS_UNKNOWN_REWARD", "rp1", 600)
    assert_finished_with_evaluations(run_dir, 2)


def pendulum_args(*extra: str) -> list[str]:
    sets = tiny_sets(policy__batch_steps="200", modelfree__envs="2", modelfree__eval_every="1")
    return [
        "train",
        "--env",
        "Pendulum-v1",
        "--method",
        "modelfree",
        "--horizon",
        "50",
        "--budget",
        "1000",
        "--quiet",
        *set_args(sets),
        *extra,
    ]


@pytest.mark.slow
def test_cli_gymnasium_modelfree_run_writes_metrics_and_resumes_identically_after_a_kill(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(pendulum_args()) == 0
    reference = tmp_path / "runs" / "Pendulum-v1-modelfree" / "seed0"  # the default run directory
    assert [int(r["samples"]) for r in read_rows(reference)] == [200, 400, 600, 800, 1000]
    assert all(np.isfinite(float(r["eval_return"])) for r in read_rows(reference))

    killed = tmp_path / "killed"
    kill_at_pause(pendulum_args("--out", str(killed)), tmp_path / "ready", "--pause-after-row", "2")
    assert main(pendulum_args("--out", str(killed), "--resume")) == 0
    assert metrics_without_timing(killed) == metrics_without_timing(reference)


@pytest.mark.slow
def test_sweep_over_envs_and_methods_and_its_report(tmp_path, capsys):
    out = tmp_path / "sweep"
    args = [
        "sweep",
        "--envs",
        POINT,
        "--methods",
        "greedy,modelfree",
        "--seeds",
        "0",
        "--budget",
        "600",
        "--out",
        str(out),
    ]
    assert main([*args, "--workers", "2", *set_args(tiny_sets(modelfree__envs="2"))]) == 0
    for method in ("greedy", "modelfree"):
        assert_finished_with_evaluations(out / f"point_mass-POINT_MASS-{method}" / "seed0", 2)
    report = tmp_path / "report"
    assert main(["report", str(out), "--out", str(report)]) == 0
    # one seed of one method of Table 1: nothing to compare, so no table, and a note that says so
    assert not (report / "table1.md").exists()
    assert "table1: nothing to compare — only greedy has runs" in (report / "index.md").read_text()
    assert (report / "fig1_point_mass-POINT_MASS.png").is_file()
    assert (report / "diag_point_mass-POINT_MASS.png").is_file()


# --- bad input ------------------------------------------------------------------------------------


BOX2D_INSTALLED = importlib.util.find_spec("Box2D") is not None
BAD = {
    "discrete actions": (["--env", "CartPole-v1"], "needs continuous actions"),
    "discrete actions of own task": (["--env", "point_mass:DISCRETE"], "needs continuous actions"),
    "unbounded actions": (["--env", "point_mass:UNBOUNDED"], "unbounded actions"),
    "image observations": (["--env", "point_mass:IMAGE"], "needs a 1-D Box"),
    "empty actions": (["--env", "point_mass:EMPTY_ACTIONS"], "has an empty action space"),
    "empty observations": (
        ["--env", "point_mass:EMPTY_OBSERVATIONS"],
        "has an empty observation space",
    ),
    "spaces that change between calls": (
        ["--env", "point_mass:GROWING"],
        "'point_mass:GROWING' made environments of different observation spaces",
    ),
    "discrete observations": (["--env", "FrozenLake-v1"], "needs a 1-D Box"),
    "unknown gymnasium id": (["--env", "Pendulum-v9"], "see `rp1 envs`"),
    "package not installed": (
        ["--env", "LunarLanderContinuous-v3"],
        "a package it needs is missing",
    ),
    "module does not import": (
        ["--env", "no_such_module_rp1:TASK"],
        "cannot import no_such_module_rp1",
    ),
    "attribute missing": (["--env", "point_mass:NOPE"], "has no attribute 'NOPE'"),
    "attribute of the wrong type": (["--env", "point_mass:NOT_A_SPEC"], "not an rp1.envs.TaskSpec"),
    "no horizon": (["--env", "point_mass:NO_HORIZON"], "--horizon"),
    "negative horizon": (["--env", POINT, "--horizon", "-1"], "horizon must be >= 0"),
    "horizon longer than an imagined batch": (
        ["--env", POINT, "--horizon", "400", "--set", "policy.batch_steps=300"],
        "policy.batch_steps must be >= 400",
    ),
    "env and preset": (["--env", POINT, "--preset", "hopper-rp1"], "exclude each other"),
    "neither env nor preset": ([], "--preset PRESET"),
    "unknown method": (["--env", POINT, "--method", "rp2"], "valid methods: rp1, greedy"),
    "method with preset": (
        ["--preset", "hopper-rp1", "--method", "greedy"],
        "--method goes with --env",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_task_input_is_one_line_exit_2_files_untouched(case, finished_run, capsys):
    if case == "package not installed" and BOX2D_INSTALLED:
        pytest.skip("Box2D is installed here")
    extra, message = BAD[case]
    before = snapshot(finished_run)
    code = main(["train", *extra, "--out", str(finished_run), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("rp1: error:") and message in err[0], err
    assert snapshot(finished_run) == before


@pytest.mark.parametrize(
    "case", ["empty actions", "empty observations", "spaces that change between calls"]
)
def test_spaces_rp1_cannot_run_make_no_run_directory(case, tmp_path, capsys):
    """Refused before the run's directory is made: once, such a task wrote the run's first files,
    then failed inside a step (a ZeroDivisionError, NumPy's broadcast ValueError)."""
    extra, message = BAD[case]
    out = tmp_path / "run"
    code = main(["train", *extra, *set_args(tiny_sets()), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("rp1: error:") and message in err[0], err
    assert not out.exists()


def test_missing_package_of_own_task_is_a_config_error(monkeypatch):
    missing = envs.TaskSpec(lambda: __import__("no_such_physics_engine_rp1"), horizon=10)
    monkeypatch.setattr(point_mass, "MISSING", missing, raising=False)
    with pytest.raises(
        ConfigError, match=r"a package it needs is missing .*no_such_physics_engine_rp1"
    ):
        envs.make("point_mass:MISSING")


def test_a_gymnasium_id_whose_spaces_change_between_calls_is_refused(monkeypatch):
    """Every environment of an id is compared with the first this process made of it."""
    env_id = "Rp1Growing-v0"
    registered = gym.envs.registration.EnvSpec(
        env_id, point_mass.GrowingPointMass, max_episode_steps=point_mass.HORIZON
    )
    monkeypatch.setitem(gym.registry, env_id, registered)
    envs.make(env_id)[0].close()
    with pytest.raises(ConfigError) as refused:
        envs.make(env_id)
    message = str(refused.value)
    assert f"task '{env_id}' made environments of different observation spaces (shape" in message
    assert "its factory must make the same spaces every time" in message and "\n" not in message


def test_bad_task_spec_is_refused_where_it_is_written():
    with pytest.raises(ConfigError, match=r"TaskSpec.horizon"):
        envs.TaskSpec(point_mass.PointMass, horizon=0)
    with pytest.raises(ConfigError, match=r"TaskSpec.reward must be callable"):
        envs.TaskSpec(point_mass.PointMass, reward=1.0)


def test_sweep_methods_without_envs_is_refused(tmp_path, capsys):
    code = main(
        ["sweep", "--presets", "hopper-rp1", "--methods", "greedy", "--out", str(tmp_path / "s")]
    )
    assert code == 2 and "--methods goes with --envs" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
