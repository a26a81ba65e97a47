"""Videos: ``rp1 evaluate --video-file`` and ``rp1 train --video`` write one frame per state of every
episode at the requested size, from a rendering pass that gives the evaluation's returns; no
OpenGL, a task that cannot render or a missing package is one line and nothing written.

The tests that render skip, with the reason, where no OpenGL is available (MuJoCo offscreen:
``MUJOCO_GL=egl`` with Mesa's EGL, which ``.ci/run`` installs); those that ask for a video skip
without the video extra."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import rp1
from helpers import TINY, read_events, snapshot
from helpers import run_cli_output as run_cli
from rp1.config import resolve
from rp1.outputs.writer import RunOptions
from rp1.train import run_training

HORIZON = 20  # frames per episode: HORIZON + 1
SETS = {
    **TINY,
    "horizon": str(HORIZON),
    "policy.batch_steps": "100",
    "collect.phase_cap": "100",
    "collect.alpha": "0",
}


def config(**extra: str):
    return resolve("halfcheetah-rp1", seed=1, budget=300, overrides={**SETS, **extra})


@pytest.fixture(scope="module")
def gl():
    """Skip unless MuJoCo can render offscreen here."""
    from rp1.core.errors import RenderError
    from rp1.outputs.video import check_rendering

    try:
        check_rendering("halfcheetah", HORIZON, (64, 48))
    except RenderError as err:
        pytest.skip(f"no OpenGL for offscreen rendering: {err}")


@pytest.fixture(scope="module")
def video_extra():
    """Skip unless the video extra's packages are here: without them rp1 refuses ``--video`` first."""
    from rp1.outputs.video import PACKAGES

    for module, _ in PACKAGES.values():
        pytest.importorskip(module, reason='the video extra: pip install "ready-policy-one[video]"')


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_training(config(), tmp_path_factory.mktemp("runs") / "run", progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_evaluate_video_has_a_frame_per_state_at_the_requested_size(
    suffix, video_extra, gl, run, tmp_path, capsys
):
    from rp1.outputs.video import read_video

    video = tmp_path / f"best{suffix}"
    code, out, _ = run_cli(
        ["evaluate", run, "--episodes", "2", "--video-file", video, "--size", "160x120"], capsys
    )
    assert code == 0 and f"video: {video}" in out
    frames = read_video(video)
    assert frames.shape == (2 * (HORIZON + 1), 120, 160, 3)


@pytest.mark.slow
def test_rendering_gives_the_evaluations_returns(gl, run):
    from rp1.evaluation import evaluate_run
    from rp1.outputs.video import render_episodes

    result = evaluate_run(run, episodes=3)
    frames: dict[int, tuple] = {}
    returns = render_episodes(
        result.policy, result.replay, (64, 48), lambda k, f: frames.setdefault(k, np.shape(f))
    )
    np.testing.assert_array_equal(returns, result.returns)
    assert frames == dict.fromkeys(range(3), (HORIZON + 1, 48, 64, 3))


@pytest.mark.slow
def test_train_video_renders_every_new_best(video_extra, gl, tmp_path):
    from rp1.outputs.video import read_video

    options = RunOptions(video=True, tensorboard=True, video_size=(96, 64))
    out = run_training(config(), tmp_path / "run", progress=False, options=options)
    with open(out / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f) if int(r["iteration"]) >= 1]
    best, expected = None, []
    for row in rows:
        if best is None or float(row["eval_return"]) > best:
            best = float(row["eval_return"])
            expected.append(f"best_{row['samples']}.mp4")
    assert sorted(p.name for p in (out / "videos").iterdir()) == sorted(expected)
    assert read_video(out / "videos" / expected[-1]).shape == (HORIZON + 1, 64, 96, 3)
    assert rp1.load_policy(out).samples == int(expected[-1][5:-4])
    # and TensorBoard shows each as a video (an animated GIF) at its samples
    videos = {
        e.step: v.image
        for e in read_events(out / "tensorboard")
        for v in e.summary.value
        if v.tag == "best_policy"
    }
    assert sorted(f"best_{step}.mp4" for step in videos) == sorted(expected)
    assert {(image.width, image.height) for image in videos.values()} == {(96, 64)}


def test_no_opengl_one_line_exit_1_nothing_written(video_extra, run, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "no-such-backend")
    before = snapshot(run)
    code, out, err = run_cli(["evaluate", run, "--video-file", tmp_path / "v.mp4"], capsys)
    assert code == 1 and out == "" and len(err) == 1
    assert (
        err[0].startswith("rp1: error: cannot render")
        and "MUJOCO_GL" in err[0]
        and "apt-get install" in err[0]
    )
    assert snapshot(run) == before and not (tmp_path / "v.mp4").exists()

    args = [
        "train",
        "--preset",
        "halfcheetah-rp1",
        "--budget",
        "300",
        "--out",
        tmp_path / "train",
        "--quiet",
        "--video",
    ]
    code, _, err = run_cli(
        args + [arg for k, v in SETS.items() for arg in ("--set", f"{k}={v}")], capsys
    )
    assert code == 1 and len(err) == 1 and "MUJOCO_GL" in err[0]
    assert not (tmp_path / "train").exists()


@pytest.mark.slow
def test_unusable_mujoco_gl_one_line_exit_1(run, tmp_path):
    """MuJoCo >= 4 sets up OpenGL for MUJOCO_GL when it is imported: a backend it cannot use is
    one line too, before anything runs."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "MUJOCO_GL": "no-such-backend"}
    cmd = [
        sys.executable,
        "-m",
        "rp1",
        "evaluate",
        str(run),
        "--video-file",
        str(tmp_path / "v.mp4"),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    err = done.stderr.strip().splitlines()
    assert (
        done.returncode == 1
        and len(err) == 1
        and err[0].startswith("rp1: error: MuJoCo cannot set up OpenGL")
    )
    assert "MUJOCO_GL=no-such-backend" in err[0] and "apt-get install" in err[0]
    assert not (tmp_path / "v.mp4").exists()


def test_task_that_cannot_render(video_extra, tmp_path, capsys):
    """A TaskSpec whose environment takes no render_mode: refused before anything is written."""
    args = [
        "train",
        "--env",
        "point_mass:POINT_MASS",
        "--method",
        "greedy",
        "--out",
        tmp_path / "run",
        "--video",
        "--quiet",
    ]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and len(err) == 1 and "cannot render" in err[0]
    assert not (tmp_path / "run").exists()


def test_missing_video_package(run, tmp_path, capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "imageio_ffmpeg" else find_spec(name, *a),
    )
    code, _, err = run_cli(["evaluate", run, "--video-file", tmp_path / "v.mp4"], capsys)
    assert code == 2 and len(err) == 1 and 'pip install "ready-policy-one[video]"' in err[0]
    assert not (tmp_path / "v.mp4").exists()
