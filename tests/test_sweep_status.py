"""rp1 status: where each run under a directory stands, read from its files without its lock."""

from __future__ import annotations

import csv
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import one_error, run_cli_output
from rp1.rundir.files import CONFIG, METRICS
from rp1.rundir.files import FINISHED as FINISHED_MARKER
from rp1.rundir.lock import LOCK
from rp1.sweep.plan import best_return
from rp1.sweep.status import (
    COMPLETE,
    FINISHED,
    RUNNING,
    STOPPED,
    UNREADABLE,
    clock,
    count,
    run_state,
    sweep_status,
)


def test_counts_and_clock_are_short():
    assert [count(n) for n in (950, 1_800, 53_640, 100_000, 5_000_000)] == [
        "950",
        "1.8k",
        "53.6k",
        "100k",
        "5M",
    ]
    assert [clock(s) for s in (0.0, 59.0, 3_600.0, 5_430.0)] == ["0:00", "0:01", "1:00", "1:30"]


def lock_naming(run: Path, pid: int, host: str) -> None:
    """A lock file as a holder writes it (rp1.rundir.lock), naming ``pid`` on ``host``."""
    (run / LOCK).write_text(json.dumps({"pid": pid, "host": host, "since": "2026-11-26 07:00:00"}))


def ended_pid() -> int:
    """The pid of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.slow  # the session's finished run: a tiny training
def test_a_run_is_finished_complete_running_or_stopped_by_its_marker_samples_and_lock(
    finished_run, tmp_path
):
    run = Path(shutil.copytree(finished_run, tmp_path / "run"))
    assert run_state(run, 1_800, 1_800) == (FINISHED, "")
    (run / FINISHED_MARKER).unlink()
    assert run_state(run, 1_800, 1_800) == (COMPLETE, "")
    assert run_state(run, 1_200, 1_800) == (STOPPED, "")
    lock_naming(run, 1, socket.gethostname())  # pid 1 always exists
    assert run_state(run, 1_200, 1_800) == (RUNNING, "")
    lock_naming(run, ended_pid(), socket.gethostname())  # a killed run's lock file stays
    assert run_state(run, 1_200, 1_800) == (STOPPED, "")
    lock_naming(run, 1, "elsewhere.example")
    assert run_state(run, 1_200, 1_800) == (RUNNING, "on elsewhere.example")


@pytest.mark.slow  # the session's finished run: a tiny training
def test_status_reads_samples_best_return_and_work_from_each_run(finished_run, tmp_path, capsys):
    root = tmp_path / "sweep"
    shutil.copytree(finished_run, root / "a" / "seed0")
    copy = Path(shutil.copytree(finished_run, root / "b" / "seed0"))
    (copy / FINISHED_MARKER).unlink()
    damaged = Path(shutil.copytree(finished_run, root / "c" / "seed0"))
    (damaged / CONFIG).write_text("[]")
    statuses = {s.run: s for s in sweep_status(root)}
    config = json.loads((finished_run / CONFIG).read_text())
    with open(finished_run / METRICS, newline="") as f:
        work = sum(float(row["wall_s"]) for row in csv.DictReader(f))
    done = statuses["a/seed0"]
    assert (done.state, done.reached, done.budget) == (FINISHED, config["budget"], config["budget"])
    assert done.best == best_return(finished_run) and done.work_s == pytest.approx(work)
    assert statuses["b/seed0"] == done._replace(run="b/seed0", state=COMPLETE)
    assert (
        statuses["c/seed0"].state == UNREADABLE
        and "does not hold a config" in statuses["c/seed0"].note
    )
    code, stdout, err = run_cli_output(["status", root], capsys)
    assert (code, err) == (0, [])
    assert "c/seed0: " in stdout
    assert stdout.splitlines()[-1] == (
        "3 runs: 1 finished, 1 complete, 0 running, 0 stopped, 1 unreadable"
    )
    code, stdout, err = run_cli_output(["status", root, "--json"], capsys)

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    listed = json.loads(stdout, parse_constant=refuse)
    assert (code, err) == (0, [])
    assert listed[0] == {**done._asdict(), "note": ""} and listed[2]["budget"] is None


def test_status_of_no_directory_or_no_runs_is_bad_input(tmp_path, capsys):
    code, _, err = run_cli_output(["status", tmp_path / "nowhere"], capsys)
    one_error(code, err, 2, "no such directory")
    code, _, err = run_cli_output(["status", tmp_path], capsys)
    one_error(code, err, 2, "no run directories")
