"""`rp1 train`: bad input fails fast with one line and exit code 2; a run killed at any point
resumes identically."""

from __future__ import annotations

import pytest

from helpers import (
    kill_at_pause,
    metrics_without_timing,
    run_cli,
    run_cli_output,
    snapshot,
    train_args,
)
from rp1.cli import main

BAD = {
    "unknown preset": (["--preset", "cheetah-rp1"], "valid presets"),
    "unknown key": (["--set", "model.width=3"], "`rp1 config` lists the valid keys"),
    "malformed set": (["--set", "budget"], "key=value"),
    "wrong type": (["--set", "model.members=five"], "expected int"),
    "lambda out of range": (["--set", "lam.value=1.5"], "lam.value must be in [0, 1]"),
    "negative alpha": (["--set", "collect.alpha=-0.1"], "collect.alpha must be >= 0"),
    "one member with bonus": (["--set", "model.members=1"], "model.members must be >= 2"),
    "budget below one phase": (["--budget", "100"], "at least one phase"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_one_line_exit_2_files_untouched(case, finished_run, capsys):
    extra, message = BAD[case]
    before = snapshot(finished_run)
    args = ["train", "--preset", "halfcheetah-rp1", "--out", str(finished_run), "--quiet"]
    if "--preset" in extra:
        args = ["train", *extra, "--out", str(finished_run)]
    else:
        args += extra
    code, err = run_cli(args, capsys)
    assert code == 2
    assert len(err) == 1 and err[0].startswith("rp1: error:") and message in err[0]
    assert snapshot(finished_run) == before


def test_out_with_another_config_is_refused(finished_run, capsys):
    before = snapshot(finished_run)
    args = train_args(finished_run, "--seed", "1")
    code, err = run_cli(args, capsys)
    assert code == 2 and len(err) == 1 and "another config" in err[0] and "seed" in err[0]
    assert snapshot(finished_run) == before


def test_a_finished_run_again_says_so(finished_run, capsys):
    """The same command on a finished run changes nothing, says the run has finished and where
    its results are, and exits 0 (quietly with --quiet)."""
    before = snapshot(finished_run)
    args = [a for a in train_args(finished_run) if a != "--quiet"]
    code, out, err = run_cli_output(args, capsys)
    assert code == 0 and err == [], err
    assert f"{finished_run} holds this run, finished" in out and "--overwrite" in out
    assert "best evaluation return" in out and str(finished_run / "metrics.csv") in out
    assert run_cli_output(train_args(finished_run), capsys)[:2] == (0, "")
    assert snapshot(finished_run) == before


def test_an_unfinished_run_again_needs_resume(copied_run, capsys):
    (copied_run / "finished").unlink()
    code, err = run_cli(train_args(copied_run), capsys)
    assert code == 2 and len(err) == 1 and "--resume" in err[0]


def test_resume_with_nothing_to_resume(tmp_path, capsys):
    code, err = run_cli(
        ["train", "--preset", "halfcheetah-rp1", "--out", str(tmp_path / "none"), "--resume"],
        capsys,
    )
    assert code == 2 and len(err) == 1 and "no run to resume" in err[0]
    assert not (tmp_path / "none").exists()


@pytest.mark.slow
@pytest.mark.parametrize("at", ["metrics", "checkpoint"])
def test_kill_and_resume_gives_identical_metrics(at, finished_run, tmp_path):
    """SIGKILL after the third row was appended, before its checkpoint (``metrics``), or right
    after its checkpoint (``checkpoint``); the resumed run writes the uninterrupted run's metrics."""
    killed = tmp_path / "killed"
    kill_at_pause(train_args(killed), tmp_path / "ready", "--pause-after-row", "3", "--at", at)
    assert len(metrics_without_timing(killed)) == 3 and not (killed / "finished").exists()
    assert main(train_args(killed, "--resume")) == 0
    assert metrics_without_timing(killed) == metrics_without_timing(finished_run)
