"""Issue 12: bad input is refused before anything is written, a run directory is never lost, errors
after the start are one line naming the file and the cause, and Ctrl-C / SIGTERM stop a run at once.

Every run here is the tiny ``halfcheetah-rp1`` of ``test_cli_train.train_cmd`` (seed 0, 1,800
samples): one uninterrupted run (``finished_run``) is the reference that a restarted, resumed or
interrupted run must reproduce, metric for metric except the wall-clock columns.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import metrics_without_timing
from rp1.cli import main
from rp1.config import resolve
from rp1.errors import ConfigError
from rp1.experiments.sweep_plan import SweepRequest, plan_sweep
from rp1.runs import CHECKPOINT, CONFIG, FINISHED, METRIC_COLUMNS, METRICS
from test_cli_train import run_cli, snapshot, train_cmd

PRESET = "halfcheetah-rp1"


def train_args(out: Path, *extra: str) -> list[str]:
    """``rp1 train`` arguments (for :func:`main`) of the tiny run in ``out``."""
    return train_cmd(out, *extra)[3:]


def tiny_overrides(args: list[str]) -> dict[str, str]:
    """The ``--set`` values of ``args`` as a dict."""
    return dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--set")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """The uninterrupted tiny run."""
    out = tmp_path_factory.mktemp("reference") / "run"
    assert main(train_args(out)) == 0
    return out


@pytest.fixture
def copied_run(finished_run, tmp_path) -> Path:
    """A copy of the finished run, to damage."""
    return Path(shutil.copytree(finished_run, tmp_path / "run"))


def one_error(code: int, err: list[str], expected_code: int, *fragments: str) -> None:
    """``err`` is the single line ``rp1: error: …`` holding every fragment, and the code is right."""
    assert code == expected_code and len(err) == 1, err
    assert err[0].startswith("rp1: error: ") and all(f in err[0] for f in fragments), err


# --- validation before anything is written (defects 3, 4, 5) -------------------------------------

BAD_VALUES = {
    "batch_steps below the horizon": (["--set", "policy.batch_steps=50"], "policy.batch_steps", ">= 100"),
    "batch_steps zero": (["--set", "policy.batch_steps=0"], "policy.batch_steps", ">= 100"),
    "infinite policy.lr": (["--set", "policy.lr=inf"], "policy.lr", "finite"),
    "infinite policy.action_std": (["--set", "policy.action_std=inf"], "policy.action_std", "finite"),
    "infinite model.lr": (["--set", "model.lr=inf"], "model.lr", "finite"),
    "infinite collect.noise_max": (["--set", "collect.noise_max=inf"], "collect.noise_max", "finite"),
    "negative infinity": (["--set", "collect.alpha=-inf"], "collect.alpha", "finite"),
    "seed too large for the generators": (["--seed", "100000000000000000000"], "seed", "2143289344"),
    "seed just above the bound": (["--seed", str(2**31 - 2**22)], "seed", "2143289344"),
}


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_bad_value_is_refused_before_anything_is_written(case, copied_run, tmp_path, capsys):
    extra, *fragments = BAD_VALUES[case]
    one_error(*run_cli(train_args(tmp_path / "new", *extra), capsys), 2, *fragments)
    assert not (tmp_path / "new").exists()
    before = snapshot(copied_run)
    one_error(*run_cli(train_args(copied_run, "--resume", *extra), capsys), 2, *fragments)
    assert snapshot(copied_run) == before


def test_largest_seed_is_accepted():
    assert resolve(PRESET, seed=2**31 - 2**22 - 1).seed == 2**31 - 2**22 - 1


# --- output paths and I/O errors (defect 6) ------------------------------------------------------


def test_out_that_is_a_file_or_lies_under_one_is_refused(finished_run, tmp_path, capsys):
    file = tmp_path / "file"
    file.write_text("mine")
    one_error(*run_cli(train_args(file), capsys), 2, str(file), "not a directory")
    one_error(*run_cli(train_args(file / "run"), capsys), 2, str(file / "run"), str(file))
    one_error(*run_cli(["report", str(finished_run.parent), "--out", str(file)], capsys), 2, str(file))
    assert file.read_text() == "mine"


def test_out_in_a_read_only_directory_is_refused(finished_run, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):
        pytest.skip("this process may write into read-only directories (root with CAP_DAC_OVERRIDE)")
    one_error(*run_cli(train_args(locked / "run"), capsys), 2, str(locked), "not writable")
    one_error(*run_cli(["report", str(finished_run.parent), "--out", str(locked / "report")], capsys), 2, str(locked))
    assert list(locked.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_during_a_checkpoint_is_one_line_and_keeps_the_last_checkpoint(finished_run, tmp_path, monkeypatch, capsys):
    from rp1.agent import ModelBasedAgent

    out = tmp_path / "run"
    checkpoint, tmp = out / CHECKPOINT, out / CHECKPOINT.with_name(CHECKPOINT.name + ".tmp")
    saved = {}
    step = ModelBasedAgent.step

    def step_then_fill_disk(self, state):
        """The second iteration's checkpoint goes to /dev/full (ENOSPC, as on a full disk)."""
        if state.iteration == 1:
            saved["bytes"] = checkpoint.read_bytes()
            tmp.symlink_to("/dev/full")
        return step(self, state)

    with monkeypatch.context() as patch:
        patch.setattr(ModelBasedAgent, "step", step_then_fill_disk)
        one_error(*run_cli(train_args(out), capsys), 1, str(checkpoint), "No space left on device")
    assert checkpoint.read_bytes() == saved["bytes"] and not tmp.is_symlink()
    assert main(train_args(out, "--resume")) == 0
    assert metrics_without_timing(out) == metrics_without_timing(finished_run)


# --- run directories are never lost (defects 1, 7, 8, 10) ----------------------------------------


def killed_before_first_checkpoint(out: Path) -> None:
    """What a run killed during its first evaluation or first checkpoint write leaves behind."""
    cfg = resolve(PRESET, seed=0, budget=1800, overrides=tiny_overrides(train_args(out)))
    (out / "checkpoint").mkdir(parents=True)
    (out / CONFIG).write_text(json.dumps(cfg.to_dict(), indent=2))
    (out / METRICS).write_text(",".join(METRIC_COLUMNS) + "\n")
    (out / CHECKPOINT.with_name(CHECKPOINT.name + ".tmp")).write_bytes(b"\x85\xa4meta")


@pytest.mark.parametrize("flag", ["--resume", "--overwrite"])
def test_run_killed_before_its_first_checkpoint_can_continue_or_restart(flag, finished_run, tmp_path, capsys):
    out = tmp_path / "run"
    killed_before_first_checkpoint(out)
    before = snapshot(out)
    one_error(*run_cli(train_args(out), capsys), 2, str(out), "--resume", "--overwrite")
    assert snapshot(out) == before
    assert main(train_args(out, flag)) == 0
    assert metrics_without_timing(out) == metrics_without_timing(finished_run)


def test_resume_and_overwrite_together_are_refused(copied_run, capsys):
    before = snapshot(copied_run)
    one_error(*run_cli(train_args(copied_run, "--resume", "--overwrite"), capsys), 2, "--resume", "--overwrite")
    assert snapshot(copied_run) == before


CORRUPT = {
    "truncated checkpoint": (CHECKPOINT, lambda data: data[: len(data) // 2]),
    "empty checkpoint": (CHECKPOINT, lambda data: b""),
    "garbage checkpoint": (CHECKPOINT, lambda data: b"\x00garbage" * 100),
    "checkpoint of something else": (CHECKPOINT, lambda data: b"\x81\xa3key\xa5value"),
    "config.json not JSON": (CONFIG, lambda data: data[:-10]),
    "config.json a list": (CONFIG, lambda data: b"[1, 2]"),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_corrupt_file_is_one_line_naming_it(case, copied_run, capsys):
    name, damage = CORRUPT[case]
    file = copied_run / name
    file.write_bytes(damage(file.read_bytes()))
    before = snapshot(copied_run)
    one_error(*run_cli(train_args(copied_run, "--resume"), capsys), 2, str(file))
    assert snapshot(copied_run) == before


def test_run_without_config_json_is_not_overwritten(copied_run, capsys):
    (copied_run / CONFIG).unlink()
    before = snapshot(copied_run)
    one_error(*run_cli(train_args(copied_run), capsys), 2, str(copied_run), "--resume", "--overwrite")
    assert snapshot(copied_run) == before
    # the checkpoint records its config: --resume continues (here: finds the run finished) and
    # writes config.json again
    assert main(train_args(copied_run, "--resume")) == 0
    assert (copied_run / CONFIG).exists() and (copied_run / FINISHED).exists()


def test_finished_marker_of_another_config_does_not_skip_a_sweep_run(finished_run, tmp_path):
    """A finished 1,800-sample run lost its config.json; a sweep asking for 3,000 must not skip it."""
    run = tmp_path / PRESET / "seed0"
    shutil.copytree(finished_run, run)
    (run / CONFIG).unlink()
    overrides = tiny_overrides(train_args(run))
    assert [j.action for j in plan_sweep(SweepRequest([PRESET], [0], tmp_path, budget=1800, overrides=overrides))] == ["skip"]
    with pytest.raises(ConfigError, match="another config"):
        plan_sweep(SweepRequest([PRESET], [0], tmp_path, budget=3000, overrides=overrides))


def test_overwrite_replaces_the_run_and_its_finished_marker(copied_run, finished_run, tmp_path, capsys):
    (copied_run / "notes.txt").write_text("mine")
    assert main(train_args(copied_run, "--overwrite", "--seed", "1")) == 0
    assert json.loads((copied_run / CONFIG).read_text())["seed"] == 1
    assert metrics_without_timing(copied_run) != metrics_without_timing(finished_run)
    assert (copied_run / "notes.txt").read_text() == "mine"
    # the directory now holds the seed-1 run: the seed-0 config may not resume there
    one_error(*run_cli(train_args(copied_run, "--resume"), capsys), 2, "another config", "seed")


def test_checkpoint_of_another_config_is_refused(finished_run, tmp_path, capsys):
    """A seed-0 checkpoint copied into a seed-1 run directory."""
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    config = json.loads((out / CONFIG).read_text())
    (out / CONFIG).write_text(json.dumps({**config, "seed": 1}))
    (out / FINISHED).unlink()
    before = snapshot(out)
    one_error(*run_cli(train_args(out, "--resume", "--seed", "1"), capsys), 2, str(out / CHECKPOINT), "another config", "seed")
    assert snapshot(out) == before


# --- interrupts (defect 2) -----------------------------------------------------------------------


def wait_for(condition, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Poll ``condition()`` until it holds; fail if ``proc`` ends or ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, proc.communicate()[1].decode()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_the_run_at_once_and_it_resumes(sig, code, finished_run, tmp_path, capsys):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(train_cmd(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: (out / CHECKPOINT).exists(), proc)
    time.sleep(1.5)  # JAX is tracing the second iteration's programs
    sent = time.monotonic()
    proc.send_signal(sig)
    err = proc.communicate(timeout=60)[1].decode().strip().splitlines()
    assert time.monotonic() - sent < 5 and not (out / FINISHED).exists()
    assert proc.returncode == code and len(err) == 1 and err[0].startswith("rp1: interrupted") and "--resume" in err[0], err
    assert main(train_args(out, "--resume")) == 0
    assert metrics_without_timing(out) == metrics_without_timing(finished_run)


def test_ctrl_c_while_the_command_starts_is_one_line_and_130(monkeypatch, capsys):
    """Before a run stops on signals itself (the imports, the config), Ctrl-C raises
    KeyboardInterrupt: one line, exit code 130, no traceback."""
    import rp1.config

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rp1.config, "resolve", interrupted)
    assert main(["train", "--preset", "halfcheetah-quick"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["rp1: interrupted (SIGINT)"]


# --- the compilation cache (defect 11) -----------------------------------------------------------


def test_import_creates_no_cache_directory_a_run_creates_it_user_only(tmp_path):
    cache = tmp_path / "cache"
    script = (
        "import rp1, rp1.cli, rp1.train, pathlib, sys\n"
        "assert not pathlib.Path(sys.argv[1]).exists(), 'created on import'\n"
        "from rp1.compilation import enable_compilation_cache\n"
        "print(oct(enable_compilation_cache().stat().st_mode & 0o777))\n"
    )
    env = {**os.environ, "RP1_JAX_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", script, str(cache)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0o700"
