"""One owner per run directory. A second process (or a second lock in this one) is refused
naming the holder; the kernel releases a killed holder's lock at once; two `rp1 train` or two
sweeps on one directory run each run once.

The races are made deterministic: "the other process" is this test process holding the lock, or
a child that says when it holds it, or an `rp1 train` stopped (SIGSTOP) once it holds it.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rp1.rundir.lock as runlock
from helpers import TINY, kill_at_pause, run_cli, train_args
from rp1.cli import main
from rp1.core.errors import StorageError
from rp1.rundir.files import METRICS, RunDir
from rp1.rundir.lock import LOCK, RunInUse, RunLock, owning, read_holder
from rp1.sweep.driver import ELSEWHERE, RUNNING_ELSEWHERE, run_sweep
from rp1.sweep.executors import Backend
from rp1.sweep.plan import SweepRequest

HOLD = """
import sys, time
from rp1.rundir.lock import RunLock
lock = RunLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(600)
"""


def iterations(run: Path) -> list[int]:
    lines = (run / METRICS).read_text().splitlines()[1:]
    return [int(line.split(",")[0]) for line in lines]


def test_a_second_lock_in_this_process_is_refused_and_release_leaves_nothing(tmp_path):
    run_dir = tmp_path / "a" / "b"
    with RunLock(run_dir) as lock:
        assert lock.held and (run_dir / LOCK).exists()
        with pytest.raises(RunInUse) as refused:
            # another spelling of the directory
            RunLock(tmp_path / "a" / ".." / "a" / "b").acquire()
        message = str(refused.value)
        assert (
            f"in use by pid {os.getpid()} (this process) on host {socket.gethostname()} since "
            in message
        )
        assert "--resume" in message
    assert not (tmp_path / "a").exists()  # the lock file and the directories it made are gone
    with RunLock(run_dir):  # free again
        pass


def test_the_directories_it_did_not_make_stay(tmp_path):
    (tmp_path / "run").mkdir()
    with RunLock(tmp_path / "run"):
        pass
    assert (tmp_path / "run").is_dir() and not (tmp_path / "run" / LOCK).exists()


def test_owning_uses_the_callers_lock_or_takes_one(tmp_path):
    with RunLock(tmp_path / "run") as lock:
        with owning(tmp_path / "run", lock) as same:
            assert same is lock
        assert lock.held
        with pytest.raises(RuntimeError), owning(tmp_path / "other", lock):
            pass
    with owning(tmp_path / "run") as new:
        assert new.held
    assert not new.held


def test_another_process_is_refused_naming_the_holder_until_it_is_killed(tmp_path):
    run_dir = tmp_path / "run"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "held"
        holder = read_holder(run_dir / LOCK)
        assert holder is not None and (holder.pid, holder.host) == (child.pid, socket.gethostname())
        with pytest.raises(
            RunInUse,
            match=f"in use by pid {child.pid} on host {socket.gethostname()} since {holder.since}",
        ):
            RunLock(run_dir).acquire()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert (run_dir / LOCK).exists()  # a killed holder leaves its file, but not its lock
    with RunLock(run_dir):
        pass


def test_a_file_system_without_locks_fails_with_its_cause(tmp_path, monkeypatch):
    def no_locks(fd, cmd):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(runlock.fcntl, "lockf", no_locks)
    with pytest.raises(StorageError, match=r"No locks available.*POSIX advisory locks"):
        RunLock(tmp_path / "run").acquire()
    assert not (tmp_path / "run").exists()


def test_a_lock_file_replaced_meanwhile_is_locked_again(tmp_path, monkeypatch):
    """A holder that released (removed its file) between our open and our lock: we lock the new one."""
    is_at, calls = runlock._is_at, []

    def replaced_once(fd, path):
        calls.append(path)
        return len(calls) > 1 and is_at(fd, path)

    monkeypatch.setattr(runlock, "_is_at", replaced_once)
    with RunLock(tmp_path / "run") as lock:
        assert lock.held and len(calls) == 2


def test_train_refuses_a_directory_this_process_holds(tmp_path, capsys):
    """The CLI's line and exit code; nothing is written."""
    with RunLock(tmp_path / "run"):
        code, err = run_cli(train_args(tmp_path / "run"), capsys)
        assert code == 2 and len(err) == 1, err
        assert err[0].startswith(f"rp1: error: {tmp_path / 'run'} is in use by pid {os.getpid()}")
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [LOCK]


def train_cmd(out: Path) -> list[str]:
    """The tiny run of :func:`helpers.train_args` in another process."""
    return [sys.executable, "-m", "rp1", *train_args(out)]


@pytest.mark.slow
def test_two_trains_race_one_runs_the_other_exits_2_naming_it(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(
        train_cmd(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.time() + 300
        while (holder := read_holder(out / LOCK)) is None or holder.pid != first.pid:
            assert first.poll() is None and time.time() < deadline, (
                "the first run never took its lock"
            )
            time.sleep(0.02)
        first.send_signal(signal.SIGSTOP)  # it holds the lock and cannot end while the second tries
        second = subprocess.run(train_cmd(out), env=env, capture_output=True, text=True)
    finally:
        first.send_signal(signal.SIGCONT)
    assert second.returncode == 2, second.stderr
    errors = [line for line in second.stderr.splitlines() if line.startswith("rp1:")]
    assert errors == [(f"rp1: error: {out} is in use by pid {first.pid} on host {socket.gethostname()} since {holder.since}; "
                       "wait until it ends (or stop it), then pass --resume to continue the run")]  # fmt: skip
    assert first.wait() == 0, first.stderr.read()
    assert RunDir(out).is_finished() and iterations(out) == list(range(len(iterations(out))))
    assert not (out / LOCK).exists()


@pytest.mark.slow
def test_a_holder_killed_with_sigkill_is_resumed_at_once(tmp_path):
    out = tmp_path / "run"
    kill_at_pause(train_args(out), tmp_path / "ready", "--pause-after-row", "2", "--at", "metrics")
    rows = (out / METRICS).read_text().splitlines()
    assert (out / LOCK).exists()  # left by the killed holder, with its pid
    assert main(train_args(out, "--resume")) == 0
    assert (out / METRICS).read_text().splitlines()[: len(rows) - 1] == rows[:-1]
    assert RunDir(out).is_finished() and iterations(out) == list(range(len(iterations(out))))
    assert not (out / LOCK).exists()


SWEEP = ["halfcheetah-greedy", "halfcheetah-vr"]
SWEEP_BUDGET = 600


def sweep_logs(out: Path) -> dict[str, list[str]]:
    """The lines of each run's log that say it started or resumed."""
    return {
        preset: [
            line
            for line in (out / preset / "seed0" / "log.txt").read_text().splitlines()
            if line.startswith(("=== rp1 sweep: start ", "=== rp1 sweep: resume "))
        ]
        for preset in SWEEP
    }


@pytest.mark.slow
def test_a_sweep_leaves_a_run_owned_elsewhere_then_finishes_it(tmp_path, capsys):
    owned = tmp_path / SWEEP[0] / "seed0"
    with RunLock(owned):  # another sweep (or rp1 train) owns the first run
        code = run_sweep(
            SweepRequest(SWEEP, [0], tmp_path, budget=SWEEP_BUDGET, overrides={**TINY}),
            Backend(workers=1),
        )
        assert code == RUNNING_ELSEWHERE
        assert sorted(p.name for p in owned.iterdir()) == [LOCK]  # untouched, no log written
    summary = capsys.readouterr().out
    assert ELSEWHERE in summary and "1 running elsewhere" in summary
    assert RunDir(tmp_path / SWEEP[1] / "seed0").is_finished()
    assert (
        run_sweep(
            SweepRequest(SWEEP, [0], tmp_path, budget=SWEEP_BUDGET, overrides={**TINY}),
            Backend(workers=1),
        )
        == 0
    )
    assert all(len(lines) == 1 for lines in sweep_logs(tmp_path).values()), sweep_logs(tmp_path)
    for preset in SWEEP:
        assert iterations(tmp_path / preset / "seed0") == [0, 1]


@pytest.mark.slow
def test_two_sweeps_over_one_output_run_each_run_once(tmp_path):
    """Started together: whatever the interleaving, every run is run by exactly one of them."""
    sets = [arg for k, v in TINY.items() for arg in ("--set", f"{k}={v}")]
    cmd = [sys.executable, "-m", "rp1", "sweep", "--presets", ",".join(SWEEP), "--seeds", "0", "--budget", str(SWEEP_BUDGET), "--workers", "1", "--out", str(tmp_path), *sets]  # fmt: skip
    sweeps = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    outputs = [sweep.communicate()[0] for sweep in sweeps]
    assert {sweep.returncode for sweep in sweeps} <= {0, RUNNING_ELSEWHERE}, outputs
    assert all(len(lines) == 1 for lines in sweep_logs(tmp_path).values()), sweep_logs(tmp_path)
    for preset in SWEEP:
        assert RunDir(tmp_path / preset / "seed0").is_finished() and iterations(
            tmp_path / preset / "seed0"
        ) == [0, 1]
    assert not list(tmp_path.rglob(LOCK))


def test_a_lock_file_names_its_holder_as_json(tmp_path):
    """What a refused process reads (from another process: this one holds no lock here)."""
    (tmp_path / LOCK).write_text(
        json.dumps({"pid": 7, "host": "node3", "since": "2026-11-23 21:40:02"})
    )
    holder = read_holder(tmp_path / LOCK)
    assert holder.describe() == "pid 7 on host node3 since 2026-11-23 21:40:02"
    (tmp_path / LOCK).write_text("")
    assert read_holder(tmp_path / LOCK) is None


def test_a_damaged_lock_file_no_process_holds_is_taken_and_written_anew(tmp_path):
    """Binary bytes in a lock file nobody holds (a crash while it was written, a disk
    error) are not a holder: the lock is taken and names this process."""
    (tmp_path / LOCK).write_bytes(b"\x80\xff\x00 not a holder")
    with RunLock(tmp_path) as lock:
        holder = lock.holder
    assert holder is not None and holder.pid == os.getpid()


@pytest.mark.parametrize("damage", ["a directory", "a link"])
def test_something_else_at_the_lock_path_is_one_storage_error_naming_it(damage, tmp_path):
    """A directory or a link where the lock file goes: StorageError naming the path
    (one line, exit code 1, for ``rp1 train``; that run's failure in a sweep), nothing followed."""
    target = tmp_path / "target"
    target.write_text("mine")
    if damage == "a directory":
        (tmp_path / LOCK).mkdir()
    else:
        (tmp_path / LOCK).symlink_to(target)
    with pytest.raises(StorageError, match=f"cannot open {tmp_path / LOCK}: "):
        RunLock(tmp_path).acquire()
    assert target.read_text() == "mine"
