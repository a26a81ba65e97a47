"""`rp1 train`: bad input fails fast with one line and exit code 2; a killed run resumes identically."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import tiny_sets
from rp1.cli import main
from rp1.runs import TIMING_COLUMNS


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
    assert code == 2 and len(err) == 1 and "nothing to resume" in err[0] or "no run to resume" in err[0]
    assert not (tmp_path / "none").exists()


def metrics_without_timing(run: Path) -> list[dict]:
    with open(run / "metrics.csv") as f:
        return [{k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in csv.DictReader(f)]


def train_cmd(out: Path, *extra: str) -> list[str]:
    sets = sum((["--set", s] for s in tiny_sets()), [])
    return [sys.executable, "-m", "rp1", "train", "--preset", "halfcheetah-rp1", "--out", str(out), "--budget", "1800", "--quiet", *sets, *extra]


@pytest.mark.slow
def test_kill_and_resume_gives_identical_metrics(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    reference = tmp_path / "reference"
    subprocess.run(train_cmd(reference), check=True, env=env, capture_output=True)

    killed = tmp_path / "killed"
    proc = subprocess.Popen(train_cmd(killed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline:
        metrics = killed / "metrics.csv"
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 1 + 3:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "finished").exists(), "the run ended before it could be killed"
    subprocess.run(train_cmd(killed, "--resume"), check=True, env=env, capture_output=True)

    assert metrics_without_timing(killed) == metrics_without_timing(reference)
    assert len(metrics_without_timing(reference)) == 7
