"""A run directory is never lost: bad input is refused before anything is written, an error after
the start is one line naming the file and the cause, a damaged or foreign file is refused and
nothing changes, ``--overwrite`` deletes only what rp1 wrote, and a diverging run stops with its
checkpoint kept.

Every run here is the tiny ``halfcheetah-rp1`` of ``helpers.train_args`` (seed 0, 1,800 samples):
the session's uninterrupted run (``finished_run``) is the reference that a restarted or resumed run
must reproduce, metric for metric except the wall-clock columns.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from flax import serialization

from helpers import (
    PRESET,
    before_each_save,
    fill_disk,
    metrics_without_timing,
    one_error,
    run_cli,
    run_cli_unprivileged,
    set_args,
    snapshot,
    tiny_overrides,
    train_args,
)
from rp1.cli import main
from rp1.config import resolve
from rp1.core.errors import ConfigError, StorageError
from rp1.rundir.chunks import chunk_name
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
from rp1.sweep.plan import SweepRequest, plan_sweep

# --- validation before anything is written --------------------------------------------------------

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


# --- output paths and I/O errors ------------------------------------------------------------------


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
    out = tmp_path / "run"
    checkpoint = out / CHECKPOINT
    saved = {}

    def fill_disk_from_the_second_save(state):
        """The second checkpoint goes to /dev/full (ENOSPC, as on a full disk)."""
        if "bytes" not in saved and checkpoint.exists():
            saved["bytes"] = checkpoint.read_bytes()
            fill_disk(patch, CHECKPOINT.name)

    with monkeypatch.context() as patch:
        before_each_save(patch, fill_disk_from_the_second_save)
        one_error(*run_cli(train_args(out), capsys), 1, str(checkpoint), "No space left on device")
    # no temporary file left; the second save's chunk of rows stays unlisted until a save replaces it
    assert checkpoint.read_bytes() == saved["bytes"] and sorted(os.listdir(checkpoint.parent)) == [
        chunk_name(0),
        chunk_name(1),
        CHECKPOINT.name,
    ]
    assert main(train_args(out, "--resume")) == 0
    assert metrics_without_timing(out) == metrics_without_timing(finished_run)


# --- run directories are never lost ---------------------------------------------------------------


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


def resealed_head(change):
    """A damage that unseals a checkpoint's head, applies ``change(what it holds)`` and seals it
    again (its checksum then matches: only the checks of its content can find it), as a tool that
    rewrites files would."""

    def damage(data: bytes) -> bytes:
        payload, sealed = unseal(data, Path("state.msgpack"), "checkpoint")
        assert sealed
        change(payload)
        return seal(payload)

    return damage


def resealed(change):
    """:func:`resealed_head` applying ``change(agent state, metadata)``."""

    def change_meta(payload: dict) -> None:
        meta = json.loads(payload["agent"]["meta"])
        change(payload["agent"], meta)
        payload["agent"]["meta"] = json.dumps(meta)

    return resealed_head(change_meta)


def first_actor_weight(agent: dict) -> dict:
    return agent["device"]["learner"]["policy"]["actor"]["0"]


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
    "a flipped bit in stored transitions": (
        CHECKPOINT.parent / chunk_name(0),
        flip_a_bit,
        "SHA-256 differs",
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


AT_ODDS = {
    "one chunk fewer": (
        resealed_head(lambda head: head["chunks"].pop()),
        "transitions, but its metadata counts 1,800 samples",
    ),
    "a chunk twice": (
        resealed_head(lambda head: head["chunks"].append(head["chunks"][-1])),
        "belongs (a head lists its chunks from rows-00000.msgpack on, each once, in order)",
    ),
    "a chunk left out": (
        resealed_head(lambda head: head["chunks"].pop(2)),
        f"lists {chunk_name(3)} as chunk 2, where {chunk_name(2)} belongs",
    ),
    "a metric row fewer": (
        resealed(lambda a, m: m["rows"].pop()),
        "metric rows (one per iteration)",
    ),
}


@pytest.mark.parametrize("case", list(AT_ODDS))
def test_a_validly_sealed_head_at_odds_with_its_own_counts_is_refused(case, copied_run, capsys):
    """A head re-sealed with a valid checksum whose list of chunks is not each chunk once, in
    order, whose store does not hold the samples its metadata counts, or whose metric rows are not
    one per iteration: ``--resume`` of the unfinished run is one line naming the checkpoint, exit
    code 2, nothing written."""
    damage, message = AT_ODDS[case]
    (copied_run / FINISHED).unlink()
    checkpoint = copied_run / CHECKPOINT
    checkpoint.write_bytes(damage(checkpoint.read_bytes()))
    before = snapshot(copied_run)
    one_error(*run_cli(train_args(copied_run, "--resume"), capsys), 2, str(checkpoint), message)
    assert snapshot(copied_run) == before


def test_damaged_environment_record_is_rewritten_and_the_run_goes_on(copied_run, capsys):
    """``environment.json`` is a record, not an input: a damaged one is written anew."""
    (copied_run / FINISHED).unlink()  # not finished: --resume goes on and records where it runs
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


# --- --overwrite deletes only what rp1 wrote, and only in an rp1 run ------------------------------


def test_a_directory_whose_config_json_is_not_rp1s_is_refused_untouched(tmp_path, capsys):
    out = tmp_path / "project"
    out.mkdir()
    (out / CONFIG).write_text(json.dumps({"name": "my web app", "port": 8080}))
    (out / METRICS).write_text("mine\n")
    before = snapshot(out)
    for flag in ([], ["--overwrite"], ["--resume"]):
        one_error(
            *run_cli(train_args(out, *flag), capsys),
            2,
            str(out / CONFIG),
            "not the config of an rp1 run",
        )
        assert snapshot(out) == before


@pytest.mark.slow
def test_overwrite_deletes_only_the_files_rp1_wrote(copied_run, capsys):
    mine = {
        "notes.txt": "mine",
        "policy/my_policy.msgpack": "mine",
        "checkpoint/backup.msgpack": "mine",
        "videos/holiday.mp4": "mine",
        "tensorboard/readme.txt": "mine",
    }
    for name, text in mine.items():
        (copied_run / name).parent.mkdir(exist_ok=True)
        (copied_run / name).write_text(text)
    (copied_run / "checkpoint" / ".state.msgpack.abc123.tmp").write_bytes(b"left by a kill")
    assert main(train_args(copied_run, "--overwrite", "--seed", "1")) == 0
    for name, text in mine.items():
        assert (copied_run / name).read_text() == text, name
    assert not (copied_run / "checkpoint" / ".state.msgpack.abc123.tmp").exists()
    assert json.loads((copied_run / CONFIG).read_text())["seed"] == 1


# --- a diverging run stops with one line, its checkpoint kept -------------------------------------

DIVERGING = {  # the stop rule would restore a policy from before it diverged, unless told not to
    "model fit": (["model.lr=1e6"], "the world model's fit diverged", "model.lr = 1000000.0"),
    "policy": (
        ["policy.lr=1e8", "policy.restore_best=false"],
        "policy training in the model diverged",
        "policy.lr = 100000000.0",
    ),
}


@pytest.mark.parametrize("case", list(DIVERGING))
def test_divergence_is_one_line_exit_1_without_a_nan_row_and_the_checkpoint_kept(
    case, tmp_path, capsys
):
    import math

    from helpers import read_rows

    settings, *fragments = DIVERGING[case]
    out = tmp_path / "run"
    one_error(*run_cli(train_args(out, *set_args(settings)), capsys), 1, *fragments, "iteration 1")
    rows = read_rows(out)
    assert [row["iteration"] for row in rows] == ["0"] and math.isfinite(
        float(rows[0]["eval_return"])
    )
    assert (out / CHECKPOINT).is_file() and not (out / FINISHED).exists()
