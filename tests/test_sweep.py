"""`rp1 sweep`: runs every (preset, seed) once — skipping finished runs, resuming unfinished ones —
on a local process pool or on Ray; a failed run is reported and does not stop the others; a
signal to the sweep stops its workers' runs, which the same sweep resumes."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from helpers import (
    TINY,
    driver_cmd,
    read_rows,
    run_cli,
    set_args,
    snapshot,
    subprocess_env,
    tiny_sets,
    wait_for,
)
from rp1.config import resolve
from rp1.core.errors import ConfigError
from rp1.report.write import write_report
from rp1.rundir.files import RunDir
from rp1.rundir.lock import LOCK, RunLock, read_holder
from rp1.rundir.saves import BackgroundSaves
from rp1.sweep.driver import run_sweep
from rp1.sweep.executors import Backend
from rp1.sweep.plan import FAIL, SweepRequest, plan_sweep
from rp1.sweep.worker import SINGLE_THREAD_XLA_FLAG, STOPPED, worker_env
from rp1.train import run_training

PRESETS = ["halfcheetah-greedy", "halfcheetah-vr"]
SEEDS = [0, 1]
BUDGET = 600  # two outer iterations of the tiny config


def tiny_sweep(out: Path, presets: list[str] = PRESETS, seeds: list[int] = SEEDS, **backend) -> int:
    return run_sweep(
        SweepRequest(presets, seeds, out, budget=BUDGET, overrides={**TINY}), Backend(**backend)
    )


def tiny_config(preset: str, seed: int):
    return resolve(preset, seed=seed, budget=BUDGET, overrides={**TINY})


class Killed(Exception):
    """Stands for a kill right after a checkpoint was written."""


def killed_after_first_checkpoint(run: Path, monkeypatch) -> None:
    """Leave in ``run`` a tiny greedy run (seed 1) that stopped right after its first checkpoint
    (written beside the run: the run dies once it is written)."""
    submit = BackgroundSaves.submit

    def save_then_die(self, state):
        submit(self, state)
        self.wait()
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(BackgroundSaves, "submit", save_then_die)
        with pytest.raises(Killed):
            run_training(tiny_config("halfcheetah-greedy", 1), run, progress=False)


def died_before_first_checkpoint(run: Path) -> None:
    """Leave in ``run`` what a tiny vr run (seed 1) writes before its first iteration ends."""
    directory = RunDir(run)
    directory.prepare(tiny_config("halfcheetah-vr", 1).to_dict(), resume=False)
    directory.write_metrics([])


@pytest.mark.slow
def test_local_sweep_runs_resumes_then_skips(tmp_path, monkeypatch, capsys):
    """Seed 1 of both presets on two workers: the greedy run killed after its first checkpoint
    continues from it, the vr run that died before one starts again (as a new run starts: a
    sweep's new runs are the other sweep tests'); a second sweep skips both."""
    killed = tmp_path / "halfcheetah-greedy" / "seed1"
    killed_after_first_checkpoint(killed, monkeypatch)
    first_row = read_rows(killed)
    assert len(first_row) == 1 and RunDir(killed).has_checkpoint()
    died_before_first_checkpoint(tmp_path / "halfcheetah-vr" / "seed1")

    assert tiny_sweep(tmp_path, seeds=[1], workers=2) == 0
    runs = [tmp_path / preset / "seed1" for preset in PRESETS]
    for run in runs:
        assert RunDir(run).is_finished(), (run / "log.txt").read_text()
        assert [int(r["iteration"]) for r in read_rows(run)] == [0, 1]
    # the killed run continued from its checkpoint: its first row (wall-clock times too) is kept;
    # the columns the next row brought (PPO's diagnostics) are empty there
    kept = read_rows(killed)[0]
    assert {k: kept[k] for k in first_row[0]} == first_row[0] and {
        kept[k] for k in set(kept) - set(first_row[0])
    } <= {""}
    assert "=== rp1 sweep: resume halfcheetah-greedy seed 1" in (killed / "log.txt").read_text()
    assert "(resumed)" in capsys.readouterr().out

    before = snapshot(tmp_path)
    assert tiny_sweep(tmp_path, seeds=[1]) == 0
    assert snapshot(tmp_path) == before
    assert capsys.readouterr().out.count("skipped") == len(runs)

    # the sweep's output is what `rp1 report` reads: every run counted at its budget
    assert all((run / "learning_curve.png").exists() for run in runs)
    write_report(tmp_path, tmp_path / "report")
    index = (tmp_path / "report" / "index.md").read_text()
    # the tiny config's 300-sample phases are HalfCheetah's matched length: its greedy runs are
    # greedy-matched's (no table compares greedy-matched with V+R: the report's inventory counts them)
    for method in ("greedy-matched", "vr"):
        reached = f"{BUDGET:,} – {BUDGET:,}"
        assert f"| halfcheetah | paper | {method} | 1 | 1 | {BUDGET:,} | {reached} |" in index
    assert (tmp_path / "report" / "fig1_halfcheetah.png").exists()


@pytest.mark.slow
def test_failed_run_is_reported_and_the_others_finish(tmp_path, capsys):
    broken = RunDir(tmp_path / "halfcheetah-greedy" / "seed1")
    broken.prepare(tiny_config("halfcheetah-greedy", 1).to_dict(), resume=False)
    broken.checkpoint_path.parent.mkdir()
    broken.checkpoint_path.write_bytes(b"a corrupted checkpoint")

    # one worker: it survives the failure
    assert tiny_sweep(tmp_path, presets=["halfcheetah-greedy"], workers=1) == 1
    assert RunDir(tmp_path / "halfcheetah-greedy" / "seed0").is_finished()
    assert not broken.is_finished()
    # found when the sweep plans the resume: one line naming the file, no log and no traceback
    assert not (broken.path / "log.txt").exists()
    out = " ".join(capsys.readouterr().out.split())
    assert "failed" in out and "1 of 2 runs finished" in out
    assert f"checkpoint {broken.checkpoint_path} is corrupt" in out and "; log" not in out


def damaged_run(out: Path) -> Path:
    """A greedy run (seed 1) in ``out`` whose ``finished`` marker holds binary bytes."""
    run = RunDir(out / "halfcheetah-greedy" / "seed1")
    run.prepare(tiny_config("halfcheetah-greedy", 1).to_dict(), resume=False)
    (run.path / "finished").write_bytes(b"\x80\xff\xfe\x00")
    return run.path


def test_a_damaged_run_is_planned_to_fail_with_its_reason_and_the_others_to_run(tmp_path):
    damaged = damaged_run(tmp_path)
    before = snapshot(damaged)
    jobs = plan_sweep(
        SweepRequest(["halfcheetah-greedy"], SEEDS, tmp_path, budget=BUDGET, overrides={**TINY})
    )
    assert [job.action for job in jobs] == ["start", FAIL]
    assert str(damaged / "finished") in jobs[1].problem and "finished marker" in jobs[1].problem
    assert snapshot(damaged) == before


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("cells", [(p, s) for p in PRESETS for s in [0, 1, 2]]),
        ("seeds", [(p, s) for s in [0, 1, 2] for p in PRESETS]),
    ],
)
def test_a_sweep_starts_its_runs_cell_by_cell_or_seed_by_seed(order, expected, tmp_path):
    request = SweepRequest(
        PRESETS, [0, 1, 2], tmp_path, budget=BUDGET, overrides={**TINY}, order=order
    )
    assert [(job.cfg.preset, job.cfg.seed) for job in plan_sweep(request)] == expected


@pytest.mark.slow
def test_a_sweep_runs_around_a_damaged_run(tmp_path, capsys):
    damaged = damaged_run(tmp_path)
    before = snapshot(damaged)
    assert tiny_sweep(tmp_path, presets=["halfcheetah-greedy"], workers=1) == 1
    assert RunDir(tmp_path / "halfcheetah-greedy" / "seed0").is_finished()
    assert snapshot(damaged) == before
    out = " ".join(capsys.readouterr().out.split())
    assert f"halfcheetah-greedy seed 1: {damaged / 'finished'} is damaged" in out
    assert "1 of 2 runs finished, 1 failed" in out


@pytest.mark.slow
# Ray starts its processes with fork + exec, which is safe; JAX warns once it has run in this process.
@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")
def test_ray_sweep_on_a_local_instance(tmp_path):
    """Two runs as two Ray tasks at once on a local instance, each finished (one seed: the
    local sweep's tests cover the rest of a sweep's plan, which is the same for both backends)."""
    pytest.importorskip("ray")
    assert tiny_sweep(tmp_path, seeds=[0], name="ray", workers=2) == 0
    for preset in PRESETS:
        run = tmp_path / preset / "seed0"
        assert RunDir(run).is_finished(), (run / "log.txt").read_text()


BAD = {
    "unknown backend": (dict(name="dask"), "valid backends: local, ray"),
    "no workers": (dict(workers=0), r"--workers must be in \[1, 1024\]"),
    "address without ray": (dict(address="auto"), "ray backend"),
    "unknown preset": (dict(presets=["halfcheetah-greedy", "cheetah-vr"]), "valid presets"),
    "bad override": (dict(overrides={**TINY, "model.members": "five"}), "expected int"),
    "unknown order": (dict(order="random"), "--order must be one of cells, seeds"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_fails_before_anything_runs(case, tmp_path):
    kwargs, message = BAD[case]
    arguments = dict(presets=PRESETS, overrides={**TINY}) | kwargs
    backend = {
        key: arguments.pop(key) for key in ("name", "workers", "address") if key in arguments
    }
    with pytest.raises(ConfigError, match=message):
        run_sweep(
            SweepRequest(seeds=SEEDS, out=tmp_path / "out", budget=BUDGET, **arguments),
            Backend(**backend),
        )
    assert not (tmp_path / "out").exists()


def test_run_directory_of_another_config_is_refused_untouched(tmp_path):
    other = RunDir(tmp_path / "halfcheetah-vr" / "seed1")
    other.prepare(tiny_config("halfcheetah-vr", 1).to_dict() | {"budget": 900}, resume=False)
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match=r"another config.*budget"):
        tiny_sweep(tmp_path)
    assert snapshot(tmp_path) == before


def test_worker_env_shares_gpus_limits_threads_and_keeps_user_settings():
    env = worker_env(1, {"OMP_NUM_THREADS": "4", "XLA_FLAGS": "--xla_dump_to=/tmp/x"})
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "OMP_NUM_THREADS" not in env and env["MKL_NUM_THREADS"] == "1"
    assert env["XLA_FLAGS"] == f"--xla_dump_to=/tmp/x {SINGLE_THREAD_XLA_FLAG}"
    assert "XLA_FLAGS" not in worker_env(4, {}) and worker_env(4, {})["OPENBLAS_NUM_THREADS"] == "4"


# --- a signal to the sweep ----------------------------------------------------------------------


def test_a_signal_to_the_sweep_is_one_line_and_its_exit_code(tmp_path, monkeypatch, capsys):
    """Here while it plans: SIGTERM raises in the sweep's process, which ends as the CLI says."""
    import rp1.sweep.driver

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("not interrupted")

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(rp1.sweep.driver, "run_sweep", signalled)
    code, err = run_cli(
        ["sweep", "--presets", PRESETS[0], "--seeds", "0", "--out", tmp_path], capsys
    )
    assert (code, err) == (143, [stopped_sweep_line(signal.SIGTERM)])
    assert signal.getsignal(signal.SIGTERM) == before


def held_sweep(out: Path, stdout=subprocess.DEVNULL) -> tuple[subprocess.Popen, list[int]]:
    """``rp1 sweep`` of :data:`PRESETS`, seed 0, on two local workers, in another process that
    leads a process group of its own (its stdout to ``stdout``); each worker holds right after its
    run's first checkpoint (:mod:`cli_driver` ``--in-workers``) until killed or let go
    (:func:`let_go`). Once both hold: the sweep and the workers' pids, as their run locks name
    them."""
    ready = out.parent / "ready"
    args = [
        "sweep",
        "--presets",
        ",".join(PRESETS),
        "--seeds",
        "0",
        "--budget",
        str(BUDGET),
        "--workers",
        "2",
        "--out",
        str(out),
    ]
    sweep = subprocess.Popen(
        [
            *driver_cmd(ready, "--pause-after-row", "1", "--at", "checkpoint", "--in-workers"),
            *args,
            *set_args(tiny_sets()),
        ],
        env=subprocess_env(),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_for(lambda: len(list(out.parent.glob("ready.*"))) == len(PRESETS), sweep)
    return sweep, [read_holder(out / preset / "seed0" / LOCK).pid for preset in PRESETS]


def let_go(out: Path, worker: int) -> None:
    """Let the held worker ``worker`` of a :func:`held_sweep` in ``out`` go on with its run."""
    (out.parent / f"ready.{worker}.go").touch()


def running(pid: int) -> bool:
    """Whether process ``pid`` lives (Linux; a zombie has ended, it waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop_held_sweep(out: Path, sig: signal.Signals, send) -> tuple[int, list[str]]:
    """Send ``sig`` to a :func:`held_sweep` with ``send`` (``os.kill``: to its process alone,
    ``os.killpg``: to its group), wait for the end of its stderr, which every process that
    shares it (its workers, multiprocessing's resource tracker) holds open while it lives, and
    check that the workers' runs stopped and left their locks free. Returns the sweep's exit code
    and its stderr's lines but the driver's."""
    sweep, workers = held_sweep(out)
    try:
        send(sweep.pid, sig)
        err = sweep.communicate(timeout=120)[1]
    except BaseException:
        os.killpg(sweep.pid, signal.SIGKILL)  # the group of this test's sweep only
        raise
    assert not any(running(pid) for pid in workers), workers
    for preset in PRESETS:
        run = out / preset / "seed0"
        assert f"rp1: interrupted (SIGTERM); {STOPPED}" in (run / "log.txt").read_text()
        with RunLock(run):  # free
            pass
    return sweep.returncode, [
        line for line in err.splitlines() if not line.startswith("cli_driver: ")
    ]


def stopped_sweep_line(sig: signal.Signals) -> str:
    return f"rp1: interrupted ({sig.name}); run the same command again to resume the sweep's runs"


@pytest.mark.slow
def test_sigterm_to_the_sweep_alone_stops_its_workers_and_the_sweep_again_resumes_their_runs(
    tmp_path,
):
    """``kill PID`` (``docker stop``, many schedulers): the signal reaches the sweep's process only."""
    out = tmp_path / "out"
    assert stop_held_sweep(out, signal.SIGTERM, os.kill) == (
        143,
        [stopped_sweep_line(signal.SIGTERM)],
    )
    assert tiny_sweep(out, seeds=[0], workers=2) == 0  # no run is "running elsewhere"
    for preset in PRESETS:
        run = out / preset / "seed0"
        assert "=== rp1 sweep: resume" in (run / "log.txt").read_text()
        assert RunDir(run).is_finished() and [int(r["iteration"]) for r in read_rows(run)] == [0, 1]


STOPS = {  # the signal, how it is sent, the sweep's exit code
    "SIGINT to the sweep alone": (signal.SIGINT, os.kill, 130),
    "SIGTERM to its process group": (signal.SIGTERM, os.killpg, 143),
    "SIGKILL to the sweep alone": (signal.SIGKILL, os.kill, -signal.SIGKILL),
}


@pytest.mark.slow
@pytest.mark.parametrize("stop", list(STOPS))
def test_a_stopped_sweep_leaves_no_worker_and_its_runs_to_resume(stop, tmp_path):
    """With one line on stderr and no leaked-semaphore warning from multiprocessing's resource
    tracker, but after a SIGKILL: then the workers see their parent gone and stop their runs."""
    sig, send, code = STOPS[stop]
    out = tmp_path / "out"
    stopped_code, err = stop_held_sweep(out, sig, send)
    assert stopped_code == code
    assert sig == signal.SIGKILL or err == [stopped_sweep_line(sig)], err
    jobs = plan_sweep(SweepRequest(PRESETS, [0], out, budget=BUDGET, overrides={**TINY}))
    assert [job.action for job in jobs] == ["resume", "resume"]


@pytest.mark.slow
def test_a_killed_worker_fails_its_own_run_only_and_the_sweep_again_resumes_it(tmp_path):
    """SIGKILL, as the out-of-memory killer sends it, to the process of one run: that run fails
    (the signal and its log in the summary, exit code 1), the run beside it finishes, and the same
    sweep resumes the killed run from its checkpoint."""
    out = tmp_path / "out"
    sweep, (victim, healthy) = held_sweep(out, stdout=subprocess.PIPE)
    killed, other = (out / preset / "seed0" for preset in PRESETS)
    try:
        os.kill(victim, signal.SIGKILL)
        let_go(out, healthy)
        summary = sweep.communicate(timeout=300)[0]
    except BaseException:
        os.killpg(sweep.pid, signal.SIGKILL)  # the group of this test's sweep only
        raise
    assert sweep.returncode == 1
    assert RunDir(other).is_finished() and not RunDir(killed).is_finished()
    words = " ".join(summary.split())
    assert f"{PRESETS[0]} seed 0: its process was killed by SIGKILL" in words, summary
    assert str(killed / "log.txt") in summary  # on one line: a path is never broken
    assert "1 of 2 runs finished, 1 failed" in words
    died = (killed / "log.txt").read_text()
    assert f"=== rp1 sweep: died {PRESETS[0]} seed 0 at " in died
    assert "its process was killed by SIGKILL" in died
    finished = (other / "log.txt").read_text()
    assert f"=== rp1 sweep: finished {PRESETS[1]} seed 0 at " in finished
    assert "best evaluation return" in finished and "wall time" in finished

    assert tiny_sweep(out, seeds=[0], workers=2) == 0
    assert f"=== rp1 sweep: resume {PRESETS[0]} seed 0" in (killed / "log.txt").read_text()
    assert RunDir(killed).is_finished() and [int(r["iteration"]) for r in read_rows(killed)] == [
        0,
        1,
    ]
