"""`rp1 train`: bad input fails fast with one line and exit code 2; a killed run resumes identically."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import kill_after_rows, metrics_without_timing, tiny_sets
from rp1.cli import main


def run_cli(args, capsys):
    try:
        code = main(args)
    except SystemExit as ex:
        code = ex.code
    return code, capsys.readouterr().err.strip().splitlines()


def snapshot(path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def existing_run(tmp_path_factory):
    """A finished tiny run to test against (seed 0)."""
    out = tmp_path_factory.mktemp("runs") / "run"
    assert main(["train", "--preset", "halfcheetah-greedy", "--out", str(out), "--budget", "600", "--quiet", *sum((["--set", s] for s in tiny_sets()), [])]) == 0
    return out


BAD = {
    "unknown preset": (["--preset", "cheetah-rp1"], "valid presets"),
    "unknown key": (["--set", "model.width=3"], "valid keys"),
    "malformed set": (["--set", "budget"], "key=value"),
    "wrong type": (["--set", "model.members=five"], "expected int"),
    "lambda out of range": (["--set", "lam.value=1.5"], "lam.value must be in [0, 1]"),
    "negative alpha": (["--set", "collect.alpha=-0.1"], "collect.alpha must be >= 0"),
    "one member with bonus": (["--set", "model.members=1"], "model.members must be >= 2"),
    "budget below one phase": (["--budget", "100"], "at least one phase"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_one_line_exit_2_files_untouched(case, existing_run, capsys):
    extra, message = BAD[case]
    before = snapshot(existing_run)
    args = ["train", "--preset", "halfcheetah-rp1", "--out", str(existing_run), "--quiet"]
    if "--preset" in extra:
        args = ["train", *extra, "--out", str(existing_run)]
    else:
        args += extra
    code, err = run_cli(args, capsys)
    assert code == 2
    assert len(err) == 1 and err[0].startswith("rp1: error:") and message in err[0]
    assert snapshot(existing_run) == before


def test_out_with_another_config_is_refused(existing_run, capsys):
    before = snapshot(existing_run)
    args = ["train", "--preset", "halfcheetah-greedy", "--seed", "1", "--out", str(existing_run), "--budget", "600", "--quiet", *sum((["--set", s] for s in tiny_sets()), [])]
    code, err = run_cli(args, capsys)
    assert code == 2 and len(err) == 1 and "another config" in err[0] and "seed" in err[0]
    # the same config again without --resume is refused too
    args[args.index("--seed") + 1] = "0"
    code, err = run_cli(args, capsys)
    assert code == 2 and "--resume" in err[0]
    assert snapshot(existing_run) == before


def test_resume_with_nothing_to_resume(tmp_path, capsys):
    code, err = run_cli(["train", "--preset", "halfcheetah-rp1", "--out", str(tmp_path / "none"), "--resume"], capsys)
    assert code == 2 and len(err) == 1 and "no run to resume" in err[0]
    assert not (tmp_path / "none").exists()


def train_cmd(out: Path, *extra: str) -> list[str]:
    sets = sum((["--set", s] for s in tiny_sets()), [])
    return [sys.executable, "-m", "rp1", "train", "--preset", "halfcheetah-rp1", "--out", str(out), "--budget", "1800", "--quiet", *sets, *extra]


@pytest.mark.slow
def test_kill_and_resume_gives_identical_metrics(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    reference = tmp_path / "reference"
    subprocess.run(train_cmd(reference), check=True, env=env, capture_output=True)

    killed = tmp_path / "killed"
    kill_after_rows(train_cmd(killed), killed, rows=3)
    subprocess.run(train_cmd(killed, "--resume"), check=True, env=env, capture_output=True)

    assert metrics_without_timing(killed) == metrics_without_timing(reference)
