"""One run of a sweep, in a worker process. :func:`execute_run` does a :class:`RunJob`,
:func:`worker_env` is the environment a worker gets, :func:`run_in_process` is the body of the
local backend's process of one run (readied by :func:`start_local_worker`, it ends with its run
and with the sweep) and :func:`died` the outcome of a run whose process ended without one.

Besides the run's own output, its log (``RUN/log.txt``) says what the sweep did with it, one line
each, ``=== rp1 sweep: …``: started or resumed (when), and how it ended: finished (when, its best
evaluation return, the wall time), failed (the error, after its traceback) or its process died
(the signal or exit code)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path

from rp1.core.errors import Rp1Error, described
from rp1.core.signals import exit_on_signals
from rp1.report.run_curve import write_learning_curve
from rp1.rundir.files import RunDir
from rp1.rundir.lock import RunInUse, RunLock
from rp1.sweep.plan import ELSEWHERE, RunJob, RunOutcome, best_return
from rp1.train import run_training

SINGLE_THREAD_XLA_FLAG = "--xla_cpu_multi_thread_eigen=false"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
PARENT_POLL_S = 1.0
"""How often (seconds) a local worker checks that the sweep's process, its parent, still lives."""
STOPPED = "the sweep was stopped: run the same sweep again to resume this run"
"""What a run's log says after ``rp1: interrupted (SIGTERM);`` when a signal stopped it."""


def execute_run(job: RunJob, stop_on_signals: bool = False) -> RunOutcome:
    """Do ``job`` in this process, owning its directory (:mod:`rp1.rundir.lock`); its outcome. A
    failure is returned, not raised, and a run another process owns is left to it
    (:data:`~rp1.sweep.plan.ELSEWHERE`). What to do with the run is decided again once
    its lock is held: the directory may have changed since planning. The process's output is
    appended to the run's log, with the sweep's lines about it (and the traceback of its
    failure). ``stop_on_signals`` (a local worker's run): SIGINT or SIGTERM stops the run at once
    as it stops ``rp1 train`` (:func:`rp1.core.signals.exit_on_signals`), its line appended to the
    log; the lock goes with the process."""
    started = time.perf_counter()
    lock = RunLock(job.run_dir)
    try:
        lock.acquire()
    except RunInUse as busy:
        return job.outcome(ELSEWHERE, described(busy))
    except Exception as error:  # the file system cannot lock, the directory cannot be made
        return job.outcome("failed", described(error))
    try:
        with (
            output_to(job.log),
            exit_on_signals(STOPPED) if stop_on_signals else contextlib.nullcontext(),
        ):
            return _train_owned(job, lock, started)
    finally:
        lock.release()


def _train_owned(job: RunJob, lock: RunLock, started: float) -> RunOutcome:
    """Train the run of ``job``, whose ``lock`` is held: its outcome."""
    try:
        job = replace(job, action=RunDir(job.run_dir).action(job.cfg.to_dict()))
    except Exception as error:
        _log(job, f"{log_head(job, 'failed')} at {now()}: {described(error)}")
        return job.outcome("failed", described(error), time.perf_counter() - started)
    if job.action == "skip":  # finished by another process since planning
        return job.outcome("skipped")
    _log(job, f"{log_head(job, job.action)} at {now()}")
    # what a run that died before its first trained row left (the log stays)
    if job.action == "start":
        RunDir(job.run_dir).clear()
    result: Path | Exception
    try:
        result = run_training(
            job.cfg,
            job.run_dir,
            resume=job.action == "resume",
            progress=False,
            options=job.options,
            lock=lock,
        )
    except Exception as error:
        result = error
    return _ended(job, result, started)


def _ended(job: RunJob, result: Path | Exception, started: float) -> RunOutcome:
    """The outcome of ``job`` whose training gave ``result`` (its run directory, or its error:
    one line in its log, after its traceback unless it is an :class:`~rp1.core.errors.Rp1Error`),
    its learning curve drawn if it finished."""
    if not isinstance(result, Exception):
        try:
            write_learning_curve(job.run_dir, job.cfg.preset)
        except Exception as error:
            result = error
    if isinstance(result, Exception):
        trace = "" if isinstance(result, Rp1Error) else "".join(traceback.format_exception(result))
        _log(job, f"{trace}{log_head(job, 'failed')} at {now()}: {described(result)}")
        return job.outcome("failed", described(result), time.perf_counter() - started)
    wall_s = time.perf_counter() - started
    best = best_return(job.run_dir)
    _log(
        job,
        f"{log_head(job, 'finished')} at {now()}: best evaluation return "
        f"{'none' if best is None else repr(best)}, wall time {wall_s:.0f} s",
    )
    return job.outcome("finished", wall_s=wall_s, best=best)


def _log(job: RunJob, text: str) -> None:
    """Append ``text`` as a line to ``job``'s log (after what this process has written there)."""
    sys.stdout.flush()
    sys.stderr.flush()
    with open(job.log, "a", encoding="utf-8") as log:
        log.write(text.rstrip("\n") + "\n")


def log_head(job: RunJob, what: str) -> str:
    """The start of a line the sweep writes in a run's log: ``=== rp1 sweep: WHAT PRESET seed K``."""
    return f"=== rp1 sweep: {what} {job.cfg.preset} seed {job.cfg.seed}"


def now() -> str:
    return f"{datetime.now():%Y-%m-%d %H:%M:%S}"


def run_in_process(
    start: Callable[[dict[str, str], int], None],
    env: dict[str, str],
    sweep_pid: int,
    job: RunJob,
    outcome: Connection,
) -> None:
    """The body of the local backend's process of the run of ``job``: ``start(env, sweep_pid)``
    readies it (:func:`start_local_worker`), then its run (:func:`execute_run`, stopped by SIGINT
    or SIGTERM), whose outcome is sent on ``outcome``."""
    start(env, sweep_pid)
    outcome.send(execute_run(job, stop_on_signals=True))
    outcome.close()


def died(job: RunJob, exitcode: int | None) -> RunOutcome:
    """The failed outcome of ``job`` whose process ended with ``exitcode`` (``-N``: killed by
    signal N, as :attr:`multiprocessing.Process.exitcode` says) without sending one; the same line
    is appended to the run's log (if it can be)."""
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        how = f"its process was killed by {name}" + (
            " (as the out-of-memory killer does)" if -exitcode == signal.SIGKILL else ""
        )
    else:
        how = f"its process ended with exit code {exitcode} before it reported"
    error = f"{how}; run the same sweep again to resume it"
    with contextlib.suppress(OSError), open(job.log, "a") as log:
        log.write(f"{log_head(job, 'died')} at {now()}: {how}\n")
    return job.outcome("failed", error)


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """Append this process's stdout and stderr — Python's and native libraries' — to ``log``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with open(log, "a", buffering=1) as file:
        for fd in saved:
            os.dup2(file.fileno(), fd)
        try:
            with contextlib.redirect_stdout(file), contextlib.redirect_stderr(file):
                yield
        finally:
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)


def worker_env(threads: int, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Variables a run's process gets: no GPU memory preallocation, so runs can share a GPU, and
    at most ``threads`` CPU threads for BLAS (and, when 1, none for XLA's Eigen kernels). XLA's own
    thread pool keeps its size (``PJRT_NPROC``, else the CPUs the process may run on), which is
    what its results depend on: a sweep's run computes what ``rp1 train`` computes on the same
    machine (docs/runs.md, "When two runs are bit-identical"). Variables set in ``environ`` win."""
    wanted = {
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        **{name: str(threads) for name in THREAD_VARIABLES},
    }
    env = {name: value for name, value in wanted.items() if name not in environ}
    xla_flags = environ.get("XLA_FLAGS", "")
    if threads == 1 and "xla_cpu_multi_thread_eigen" not in xla_flags:
        env["XLA_FLAGS"] = f"{xla_flags} {SINGLE_THREAD_XLA_FLAG}".strip()
    return env


def start_local_worker(env: dict[str, str], sweep_pid: int) -> None:
    """Readies the local backend's process of a run: ``env`` joins the environment (JAX reads it
    when it first starts a backend, after this); SIGINT is ignored until the run starts (a Ctrl-C
    reaches the whole process group, and the sweep's process stops its workers itself); and a
    thread sends this process SIGTERM once its parent is no longer ``sweep_pid`` (the sweep was
    killed with SIGKILL), which stops its run as a signal does."""
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(
        target=_terminate_when_orphaned, args=(sweep_pid,), name="rp1-parent", daemon=True
    ).start()


def _terminate_when_orphaned(sweep_pid: int) -> None:
    while os.getppid() == sweep_pid:
        time.sleep(PARENT_POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)
