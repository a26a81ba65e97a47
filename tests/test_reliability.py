"""Bad input is refused before anything is written, a run directory is never lost, errors
after the start are one line naming the file and the cause, and Ctrl-C / SIGTERM stop a run at once.

Every run here is the tiny ``halfcheetah-rp1`` of ``helpers.train_args`` (seed 0, 1,800 samples):
the session's uninterrupted run (``finished_run``) is the reference that a restarted, resumed or
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

import numpy as np
import pytest
from flax import serialization

from helpers import (
    PRESET,
    driver_cmd,
    fill_disk,
    metrics_without_timing,
    one_error,
    run_cli,
    run_cli_unprivileged,
    snapshot,
    subprocess_env,
    tiny_overrides,
    train_args,
    wait_for,
)
from rp1.cli import main
from rp1.config import resolve
from rp1.core.errors import ConfigError, StorageError
from rp1.experiments.sweep_plan import SweepRequest, plan_sweep
from rp1.rundir.files import (
    CHECKPOINT,
    CONFIG,
    ENVIRONMENT,
    FINISHED,
    METRIC_COLUMNS,
    METRICS,
    RunDir,
)
from rp1.rundir.sealed import seal, unseal

# --- validation before anything is written (defects 3, 4, 5) -------------------------------------

BAD_VALUES = {
    "batch_steps below the horizon": (
        ["--set", "policy.batch_steps=50"],
        "policy.batch_steps",
        ">= 100",
    ),
    "batch_steps zero": (["--set", "policy.batch_steps=0"], "policy.batch_steps", ">= 100"),
    "infinite policy.lr": (["--set", "policy.lr=inf"], "policy.lr", "finite"),
    "infinite policy.action_std": (
        ["--set", "policy.action_std=inf"],
        "policy.action_std",
        "finite",
    ),
    "infinite model.lr": (["--set", "model.lr=inf"], "model.lr", "finite"),
    "infinite collect.noise_max": (
        ["--set", "collect.noise_max=inf"],
        "collect.noise_max",
        "finite",
    ),
    "negative infinity": (["--set", "collect.alpha=-inf"], "collect.alpha", "finite"),
    "nan policy.lr": (["--set", "policy.lr=nan"], "policy.lr", "finite"),
    "nan collect.alpha": (["--set", "collect.alpha=nan"], "collect.alpha", "finite"),
    "nan lam.value": (["--set", "lam.value=nan"], "lam.value", "finite"),
    "nan among lam.arms": (["--set", "lam.arms=0,0.1,nan"], "lam.arms", "finite"),
    "nan for a count": (["--set", "model.members=nan"], "model.members", "expected int"),
    "seed too large for the generators": (
        ["--seed", "100000000000000000000"],
        "seed",
        "2143289344",
    ),
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
    one_error(
        *run_cli(["report", str(finished_run.parent), "--out", str(file)], capsys), 2, str(file)
    )
    assert file.read_text() == "mine"


@pytest.mark.slow
def test_permissions_are_obeyed_read_only_out_exit_2_unreadable_checkpoint_exit_1(
    finished_run, copied_run, tmp_path
):
    """In a process that obeys file permissions (as root too: CI runs as root): ``--out`` in a
    read-only directory is bad input (exit code 2, nothing written); a checkpoint it may not read
    is a file the machine fails to read, named with the operating system's cause (exit code 1,
    nothing changed)."""
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    checkpoint = copied_run / CHECKPOINT
    before = snapshot(copied_run)
    checkpoint.chmod(0o000)
    try:
        train, report, resumed = run_cli_unprivileged(
            train_args(locked / "run"),
            ["report", str(finished_run.parent), "--out", str(locked / "report")],
            train_args(copied_run, "--resume"),
        )
    finally:
        checkpoint.chmod(0o600)
    one_error(*train, 2, str(locked), "not writable")
    one_error(*report, 2, str(locked))
    assert list(locked.iterdir()) == []
    one_error(*resumed, 1, str(checkpoint), "Permission denied")
    assert snapshot(copied_run) == before


def test_checkpoint_that_cannot_be_read_is_one_line_exit_1_and_debug_shows_the_traceback(
    copied_run, capsys, monkeypatch
):
    """A checkpoint path that is a directory: reading it fails in the operating system (EISDIR):
    one line naming it, exit code 1; with ``RP1_DEBUG=1`` the error propagates with its traceback
    (here: out of ``main``), for bad input too."""
    checkpoint = copied_run / CHECKPOINT
    checkpoint.unlink()
    checkpoint.mkdir()
    before = snapshot(copied_run)
    one_error(
        *run_cli(train_args(copied_run, "--resume"), capsys), 1, str(checkpoint), "Is a directory"
    )
    assert snapshot(copied_run) == before
    monkeypatch.setenv("RP1_DEBUG", "1")
    with pytest.raises(StorageError, match="Is a directory"):
        main(train_args(copied_run, "--resume"))
    with pytest.raises(ConfigError, match=r"policy.lr must be a finite number"):
        main(train_args(copied_run, "--resume", "--set", "policy.lr=nan"))
    assert capsys.readouterr().err == ""  # no one-line error instead of the traceback
    assert snapshot(copied_run) == before


def test_metrics_that_cannot_be_written_is_one_line_exit_1_and_keeps_the_checkpoint(
    copied_run, capsys
):
    """``metrics.csv`` replaced by a directory: resuming rewrites it from the checkpoint, which
    fails in the operating system: one line naming it, exit code 1; the checkpoint stays."""
    metrics = copied_run / METRICS
    metrics.unlink()
    metrics.mkdir()
    (copied_run / FINISHED).unlink()  # not finished: --resume goes on to write the metrics
    checkpoint = (copied_run / CHECKPOINT).read_bytes()
    one_error(
        *run_cli(train_args(copied_run, "--resume"), capsys), 1, str(metrics), "Is a directory"
    )
    assert (copied_run / CHECKPOINT).read_bytes() == checkpoint and metrics.is_dir()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_during_a_checkpoint_is_one_line_and_keeps_the_last_checkpoint(
    finished_run, tmp_path, monkeypatch, capsys
):
    from rp1.agents.model_based import ModelBasedAgent

    out = tmp_path / "run"
    checkpoint = out / CHECKPOINT
    saved = {}
    step = ModelBasedAgent.step

    def step_then_fill_disk(self, state):
        """The second iteration's checkpoint goes to /dev/full (ENOSPC, as on a full disk)."""
        if state.iteration == 1:
            saved["bytes"] = checkpoint.read_bytes()
            fill_disk(patch, CHECKPOINT.name)
        return step(self, state)

    with monkeypatch.context() as patch:
        patch.setattr(ModelBasedAgent, "step", step_then_fill_disk)
        one_error(*run_cli(train_args(out), capsys), 1, str(checkpoint), "No space left on device")
    assert checkpoint.read_bytes() == saved["bytes"] and os.listdir(checkpoint.parent) == [
        CHECKPOINT.name
    ]
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


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--resume", "--overwrite"])
def test_run_killed_before_its_first_checkpoint_can_continue_or_restart(
    flag, finished_run, tmp_path, capsys
):
    out = tmp_path / "run"
    killed_before_first_checkpoint(out)
    before = snapshot(out)
    one_error(*run_cli(train_args(out), capsys), 2, str(out), "--resume", "--overwrite")
    assert snapshot(out) == before
    assert main(train_args(out, flag)) == 0
    assert metrics_without_timing(out) == metrics_without_timing(finished_run)


def test_resume_and_overwrite_together_are_refused(copied_run, capsys):
    before = snapshot(copied_run)
    one_error(
        *run_cli(train_args(copied_run, "--resume", "--overwrite"), capsys),
        2,
        "--resume",
        "--overwrite",
    )
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


def flip_a_bit(data: bytes) -> bytes:
    """``data`` with one bit of its last kilobyte flipped (inside a sealed file's body)."""
    at = len(data) - 1000
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


def resealed(change):
    """A damage that unseals a checkpoint, applies ``change(agent state, metadata)`` and seals it
    again (its checksum then matches: only the checks of its content can find it)."""

    def damage(data: bytes) -> bytes:
        payload, sealed = unseal(data, Path("state.msgpack"), "checkpoint")
        assert sealed
        meta = json.loads(payload["agent"]["meta"])
        change(payload["agent"], meta)
        payload["agent"]["meta"] = json.dumps(meta)
        return seal(payload)

    return damage


def first_actor_weight(agent: dict) -> dict:
    return agent["device"]["policy"]["actor"]["0"]


DAMAGED = {
    "a flipped bit in a weight": (CHECKPOINT, flip_a_bit, "does not match its SHA-256 checksum"),
    "NaN weights": (
        CHECKPOINT,
        resealed(
            lambda a, m: first_actor_weight(a).update({"0": first_actor_weight(a)["0"] * np.nan})
        ),
        "holds inf or NaN",
    ),
    "a weight of the wrong shape": (
        CHECKPOINT,
        resealed(lambda a, m: first_actor_weight(a).update({"0": np.zeros((18, 5), np.float32)})),
        "is float32[18, 5], expected float32[18, 16]",
    ),
    "rows that are not rows": (CHECKPOINT, resealed(lambda a, m: m.update(rows=[1, 2])), "rows"),
    "a negative sample count": (CHECKPOINT, resealed(lambda a, m: m.update(samples=-5)), "samples"),
    "a λ that is text": (CHECKPOINT, resealed(lambda a, m: m.update(lam="x")), "λ = 'x'"),
    "a finished marker of binary bytes": (
        FINISHED,
        lambda data: b"\x80\xff\xfe\x00binary",
        "finished marker",
    ),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_damaged_checkpoint_or_marker_is_one_line_naming_it_and_nothing_changes(
    case, copied_run, capsys
):
    """``--resume``: one line naming the file and what is wrong, exit code 2, nothing written; the
    checkpoint's fault, never the config's (no "diverged … likely cause")."""
    name, damage, message = DAMAGED[case]
    file = copied_run / name
    file.write_bytes(damage(file.read_bytes()))
    before = snapshot(copied_run)
    code, err = run_cli(train_args(copied_run, "--resume"), capsys)
    one_error(code, err, 2, str(file), message)
    assert "diverged" not in err[0]
    assert snapshot(copied_run) == before


def test_damaged_environment_record_is_rewritten_and_the_run_goes_on(copied_run, capsys):
    """``environment.json`` is a record, not an input: a damaged one is written anew."""
    record = copied_run / ENVIRONMENT
    damaged = json.loads(record.read_text())
    damaged["environments"][0]["from_iteration"] = "x"
    record.write_text(json.dumps(damaged))
    code, err = run_cli(train_args(copied_run, "--resume"), capsys)
    assert code == 0 and len(err) == 1 and str(record) in err[0] and "rewritten" in err[0], err
    entries = json.loads(record.read_text())["environments"]
    assert [type(e["from_iteration"]) for e in entries] == [int]


class Killed(Exception):
    """Stands for a kill right after a checkpoint was written."""


@pytest.mark.slow
def test_a_checkpoint_written_before_checksums_resumes_exactly(finished_run, tmp_path, monkeypatch):
    """The migration: a checkpoint without a checksum (its payload at the top level, as an rp1
    before checksums wrote it) is read as it is, and the resumed run is the uninterrupted one."""
    out = tmp_path / "run"
    save_checkpoint, saved = RunDir.save_checkpoint, []

    def save_then_stop(self, state):
        save_checkpoint(self, state)
        saved.append(1)
        if len(saved) == 2:
            raise Killed  # a kill right after the second checkpoint

    with monkeypatch.context() as patch:
        patch.setattr(RunDir, "save_checkpoint", save_then_stop)
        with pytest.raises(Killed):
            main(train_args(out))
    checkpoint = out / CHECKPOINT
    payload, sealed = unseal(checkpoint.read_bytes(), checkpoint, "checkpoint")
    checkpoint.write_bytes(serialization.msgpack_serialize(payload))
    assert sealed and main(train_args(out, "--resume")) == 0
    assert metrics_without_timing(out) == metrics_without_timing(finished_run)
    assert unseal(checkpoint.read_bytes(), checkpoint, "checkpoint")[1]  # sealed from there on


def test_run_without_config_json_is_not_overwritten(copied_run, capsys):
    (copied_run / CONFIG).unlink()
    before = snapshot(copied_run)
    one_error(
        *run_cli(train_args(copied_run), capsys), 2, str(copied_run), "--resume", "--overwrite"
    )
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
    assert [
        j.action
        for j in plan_sweep(SweepRequest([PRESET], [0], tmp_path, budget=1800, overrides=overrides))
    ] == ["skip"]
    with pytest.raises(ConfigError, match="another config"):
        plan_sweep(SweepRequest([PRESET], [0], tmp_path, budget=3000, overrides=overrides))


@pytest.mark.slow
def test_overwrite_replaces_the_run_and_its_finished_marker(
    copied_run, finished_run, tmp_path, capsys
):
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
    one_error(
        *run_cli(train_args(out, "--resume", "--seed", "1"), capsys),
        2,
        str(out / CHECKPOINT),
        "another config",
        "seed",
    )
    assert snapshot(out) == before


# --- interrupts (defect 2) -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_the_run_inside_a_compiled_call_and_it_resumes(
    sig, code, finished_run, tmp_path
):
    """The driver holds the run inside a compiled JAX call (its first policy update, after the first
    checkpoint) and says so; only then is the signal sent."""
    out, ready = tmp_path / "run", tmp_path / "ready"
    proc = subprocess.Popen(
        [*driver_cmd(ready, "--hold-train-step"), *train_args(out)],
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(ready.exists, proc)
    sent = time.monotonic()
    proc.send_signal(sig)
    err = proc.communicate(timeout=60)[1].strip().splitlines()
    assert time.monotonic() - sent < 5 and not (out / FINISHED).exists()
    assert (
        proc.returncode == code
        and len(err) == 1
        and err[0].startswith("rp1: interrupted")
        and "--resume" in err[0]
    ), err
    assert len(metrics_without_timing(out)) == 1  # held in the second iteration
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


@pytest.mark.slow
def test_import_creates_no_cache_directory_a_run_creates_it_user_only(tmp_path):
    cache = tmp_path / "cache"
    script = (
        "import rp1, rp1.cli, rp1.train, pathlib, sys\n"
        "assert not pathlib.Path(sys.argv[1]).exists(), 'created on import'\n"
        "from rp1.core.compilation import enable_compilation_cache\n"
        "print(oct(enable_compilation_cache().stat().st_mode & 0o777))\n"
    )
    env = {**os.environ, "RP1_JAX_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(cache)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0o700"


def test_empty_cache_variable_turns_the_cache_off_and_a_directory_turns_it_on_there(tmp_path):
    """``RP1_JAX_CACHE=""``: no cache (nothing configured, nothing created, not even under
    ``HOME``), also after a compilation; ``RP1_JAX_CACHE=DIR``: JAX's cache is DIR."""
    cache = tmp_path / "cache"
    script = (
        "import os, pathlib, sys, jax\n"
        "from rp1.core.compilation import enable_compilation_cache\n"
        "assert enable_compilation_cache() is None\n"
        "jax.jit(lambda x: x + 1)(1.0).block_until_ready()\n"
        "home = [entry for entry in os.listdir(os.environ['HOME']) if entry != '.nv']  # CUDA's own cache\n"
        "print(jax.config.jax_compilation_cache_dir, sorted(home))\n"
        "os.environ['RP1_JAX_CACHE'] = sys.argv[1]\n"
        "print(enable_compilation_cache(), jax.config.jax_compilation_cache_dir)\n"
    )
    env = {
        k: v
        for k, v in subprocess_env(RP1_JAX_CACHE="", HOME=str(tmp_path / "home")).items()
        if k != "JAX_COMPILATION_CACHE_DIR"
    }
    (tmp_path / "home").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, str(cache)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["None []", f"{cache} {cache}"]
    assert cache.is_dir()
