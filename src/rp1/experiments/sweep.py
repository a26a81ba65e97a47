"""Sweeps (``rp1 sweep``): one run per (preset, seed) in ``OUT/<preset>/seed<k>/``, and per (task,
method, seed) in ``OUT/<task>-<method>/seed<k>/`` (the config's ``preset``, see
:func:`rp1.config.env_config`).

Every run is planned before any starts: its config is resolved and checked, and its directory
decides what happens to it — a finished run is skipped, a run with a checkpoint is resumed, any
other run starts afresh (a run that died before its first checkpoint is cleared first). The runs
then go to a *backend*:

- ``local`` (default): a pool of spawned processes on this machine (JAX is not fork-safe);
- ``ray``: the same run function as Ray tasks, on the cluster at ``address`` or on a local Ray
  instance, each task asking for ``cpus_per_run`` CPUs and ``gpus_per_run`` GPUs, so several runs
  can share one GPU. Run directories must be on a file system that every Ray node sees.

Each run appends its output (including a traceback if it fails) to ``<run_dir>/log.txt``. A failed
run does not stop the others; it is listed with its error and log in the summary at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import math
import multiprocessing
import os
import shutil
import sys
import time
import traceback
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from functools import partial
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from rp1.config import Config, env_config, resolve
from rp1.errors import ConfigError
from rp1.run_outputs import RunOptions
from rp1.runs import CONFIG, METRICS, RunDir, config_diff
from rp1.experiments.figures import write_learning_curve
from rp1.train import run_training

BACKENDS = ("local", "ray")
RUN_LOG = "log.txt"
POLL_S = 0.5
"""How often (seconds) the progress display is refreshed while runs are under way."""
GPU_SHARE = 0.25
"""GPUs a Ray run asks for by default when the cluster has GPUs: four runs share one GPU."""
SINGLE_THREAD_XLA_FLAG = "--xla_cpu_multi_thread_eigen=false"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class RunOutcome:
    """How one run of a sweep ended: ``status`` is ``finished``, ``skipped`` or ``failed``."""

    preset: str
    seed: int
    action: str
    status: str
    log: Path
    error: str = ""
    wall_s: float = 0.0


@dataclass(frozen=True)
class RunJob:
    """One (preset, seed) of a sweep: its resolved config, its directory and what to do there.

    ``action`` is ``skip`` (finished), ``resume`` (from its checkpoint) or ``start`` (afresh).
    """

    cfg: Config
    run_dir: Path
    action: str
    options: RunOptions = RunOptions()  # videos, TensorBoard (rp1.run_outputs)

    @property
    def log(self) -> Path:
        return self.run_dir / RUN_LOG

    def outcome(self, status: str, error: str = "", wall_s: float = 0.0) -> RunOutcome:
        return RunOutcome(self.cfg.preset, self.cfg.seed, self.action, status, self.log, error, wall_s)


def run_sweep(
    names: list[str],
    seeds: list[int],
    out: Path,
    *,
    envs: Sequence[str] = (),
    methods: Sequence[str] = ("rp1",),
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    budget: int | None = None,
    overrides: dict[str, str] | None = None,
    scale: str | None = None,
    cpus_per_run: float = 1.0,
    gpus_per_run: float | None = None,
    options: RunOptions | None = None,
) -> int:
    """Run every (preset, seed) of ``names`` × ``seeds`` in ``out/<preset>/seed<k>/``, and every
    (task, method, seed) of ``envs`` × ``methods`` × ``seeds`` in ``out/<task>-<method>/seed<k>/``.

    Finished runs are skipped, runs with a checkpoint resumed, the rest started. ``workers`` is
    the number of runs at a time (``scale``: every run at that scale, see
    :func:`rp1.config.with_scale`; local default: one per CPU core, at most one per run; Ray
    default: as many as the cluster's resources allow). ``cpus_per_run`` and ``gpus_per_run``
    are the Ray task requests (``gpus_per_run=None``: :data:`GPU_SHARE` of a GPU if the cluster
    has GPUs, else 0). ``options``: what every run logs besides (:class:`~rp1.run_outputs.RunOptions`).
    Everything is checked before anything runs: a bad preset, override, backend or ``workers``, a
    run directory holding another config, Ray not installed, or ``options`` the machine or a task
    cannot serve raise :class:`ConfigError` (:class:`~rp1.errors.RenderError`: no OpenGL). Returns
    the exit code: 0 if every run finished, 1 otherwise.
    """
    executor = make_executor(backend, workers, address, cpus_per_run, gpus_per_run)
    jobs = plan_sweep(names, seeds, Path(out), budget=budget, overrides=overrides or {}, scale=scale, envs=envs, methods=methods)
    if options is not None:
        for cfg in {(job.cfg.task, job.cfg.horizon): job.cfg for job in jobs}.values():
            options.check(cfg)
        jobs = [dataclasses.replace(job, options=options) for job in jobs]
    todo = [job for job in jobs if job.action != "skip"]
    outcomes = {(o.preset, o.seed): o for o in run_jobs(executor, todo, skipped=len(jobs) - len(todo))}
    summary = [outcomes.get((job.cfg.preset, job.cfg.seed)) or job.outcome("skipped") for job in jobs]
    print_summary(summary)
    return 0 if all(o.status != "failed" for o in summary) else 1


# ----------------------------------------------------------------------------- planning


ConfigSource = Callable[..., Config]
"""``source(seed=…, budget=…, overrides=…, scale=…) -> Config``: :func:`rp1.config.resolve` of a
preset or :func:`rp1.config.env_config` of a (task, method)."""


def config_sources(presets: Sequence[str], envs: Sequence[str] = (), methods: Sequence[str] = ("rp1",)) -> list[ConfigSource]:
    """One source per preset, then one per (task, method) of ``envs`` × ``methods``."""
    by_task = [partial(env_config, env, method) for env in envs for method in methods]
    return [partial(resolve, name) for name in presets] + by_task


def plan_sweep(
    names: list[str],
    seeds: list[int],
    out: Path,
    *,
    budget: int | None,
    overrides: dict[str, str],
    scale: str | None = None,
    envs: Sequence[str] = (),
    methods: Sequence[str] = ("rp1",),
) -> list[RunJob]:
    """Resolve and check every run of the sweep (presets, then tasks × methods; seed innermost)
    before any starts."""
    sources = config_sources(names, envs, methods)
    if not sources or not seeds:
        raise ConfigError("a sweep needs at least one preset or task (--presets, --envs) and one seed")
    jobs: dict[tuple[str, int], RunJob] = {}
    for source in sources:
        for seed in seeds:
            cfg = source(seed=seed, budget=budget, overrides=overrides, scale=scale)
            run_dir = out / cfg.preset / f"seed{cfg.seed}"
            jobs[cfg.preset, cfg.seed] = RunJob(cfg, run_dir, run_action(cfg, RunDir(run_dir)))
    return list(jobs.values())


def run_action(cfg: Config, run: RunDir) -> str:
    """``skip``, ``resume`` or ``start`` for ``cfg`` in ``run``; ConfigError if it holds another
    config or a ``finished`` marker written under another config."""
    stored = run.read_config()
    if stored is not None and stored != cfg.to_dict():
        raise ConfigError(
            f"{run.path} holds a run of another config ({config_diff(stored, cfg.to_dict())}); "
            "choose another --out or the same settings"
        )
    if run.is_finished(cfg.to_dict()):
        return "skip"
    return "resume" if run.has_checkpoint() else "start"


# ----------------------------------------------------------------------------- one run


def execute_run(job: RunJob) -> RunOutcome:
    """Do ``job`` in this process, its output appended to its log; a failure is returned, not raised."""
    started = time.perf_counter()
    job.run_dir.mkdir(parents=True, exist_ok=True)
    with output_to(job.log):
        print(f"=== rp1 sweep: {job.action} {job.cfg.preset} seed {job.cfg.seed} at {datetime.now():%Y-%m-%d %H:%M:%S}")
        try:
            if job.action == "start":
                clear_partial_run(RunDir(job.run_dir))
            run_training(job.cfg, job.run_dir, resume=job.action == "resume", progress=False, options=job.options)
            write_learning_curve(job.run_dir, job.cfg.preset)
        except Exception as error:
            traceback.print_exc()
            return job.outcome("failed", _one_line(error), time.perf_counter() - started)
    return job.outcome("finished", wall_s=time.perf_counter() - started)


def clear_partial_run(run: RunDir) -> None:
    """Delete what a run that died before its first checkpoint left behind (the log stays)."""
    for name in (CONFIG, METRICS):
        (run.path / name).unlink(missing_ok=True)
    shutil.rmtree(run.checkpoint_path.parent, ignore_errors=True)


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


def _one_line(error: BaseException) -> str:
    """``Type: first line of the message``."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def worker_env(threads: int, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Variables a run's process gets: no GPU memory preallocation, so runs can share a GPU, and
    at most ``threads`` CPU threads for BLAS (and XLA when 1). Variables set in ``environ`` win."""
    wanted = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", **{name: str(threads) for name in THREAD_VARIABLES}}
    env = {name: value for name, value in wanted.items() if name not in environ}
    xla_flags = environ.get("XLA_FLAGS", "")
    if threads == 1 and "xla_cpu_multi_thread_eigen" not in xla_flags:
        env["XLA_FLAGS"] = f"{xla_flags} {SINGLE_THREAD_XLA_FLAG}".strip()
    return env


def _set_environ(env: dict[str, str]) -> None:
    """Process-pool initializer: JAX reads these when it first starts a backend, after this."""
    os.environ.update(env)


# ----------------------------------------------------------------------------- backends


class Executor(Protocol):
    """Where runs go: a context manager with :meth:`submit`, :meth:`wait` and :meth:`result`."""

    def __enter__(self) -> "Executor": ...

    def __exit__(self, *exc: object) -> None: ...

    def prepare(self, runs: int) -> int:
        """Get ready for ``runs`` runs; returns how many to have in flight at once."""

    def submit(self, job: RunJob) -> Any:
        """Start ``job``; returns a handle."""

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The handles among ``handles`` that completed, waiting at most ``timeout`` seconds."""

    def result(self, handle: Any) -> RunOutcome:
        """The outcome of a completed handle; raises if the worker itself died."""


def make_executor(backend: str, workers: int | None, address: str | None, cpus_per_run: float, gpus_per_run: float | None) -> Executor:
    """The executor of ``backend``, with its arguments checked (ConfigError if bad)."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    if backend == "local":
        if address is not None:
            raise ConfigError("--address is for the ray backend")
        return LocalExecutor(workers)
    if importlib.util.find_spec("ray") is None:
        raise ConfigError('the ray backend needs Ray: pip install "ready-policy-one[ray]"')
    if cpus_per_run <= 0 or (gpus_per_run is not None and gpus_per_run < 0):
        raise ConfigError(f"cpus_per_run must be > 0 and gpus_per_run >= 0, got {cpus_per_run}, {gpus_per_run}")
    return RayExecutor(workers, address, cpus_per_run, gpus_per_run)


class LocalExecutor:
    """Runs in a pool of spawned processes on this machine, one run per process at a time."""

    def __init__(self, workers: int | None):
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._env: dict[str, str] = {}

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def prepare(self, runs: int) -> int:
        cores = os.cpu_count() or 1
        self.workers = self.workers or min(runs, cores)
        self._env = worker_env(max(1, cores // self.workers))
        return self.workers

    def submit(self, job: RunJob) -> Future:
        try:
            return self._started_pool().submit(execute_run, job)
        except BrokenProcessPool:  # a worker died hard (killed, crashed): go on with a new pool
            self._pool = None
            return self._started_pool().submit(execute_run, job)

    def _started_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_set_environ, initargs=(self._env,)
            )
        return self._pool

    def wait(self, handles: list[Future], timeout: float) -> list[Future]:
        return list(wait_futures(handles, timeout, return_when=FIRST_COMPLETED).done)

    def result(self, handle: Future) -> RunOutcome:
        return handle.result()


class RayExecutor:
    """Runs as Ray tasks on the cluster at ``address``, or on a local Ray instance started (and
    shut down) here with ``workers`` CPUs (default: all cores)."""

    def __init__(self, workers: int | None, address: str | None, cpus_per_run: float, gpus_per_run: float | None):
        self.workers = workers
        self.address = address
        self.cpus_per_run = cpus_per_run
        self.gpus_per_run = gpus_per_run
        self._owns_ray = False
        self._task: Any = None

    def __enter__(self) -> "RayExecutor":
        import ray

        if not ray.is_initialized():
            local = {} if self.address else {"num_cpus": self.workers or os.cpu_count(), "include_dashboard": False}
            ray.init(address=self.address, log_to_driver=False, **local)
            self._owns_ray = True
        gpus = self.gpus_per_run
        if gpus is None:
            gpus = GPU_SHARE if ray.cluster_resources().get("GPU", 0) > 0 else 0.0
        env = worker_env(max(1, math.ceil(self.cpus_per_run)))
        self._task = ray.remote(execute_run).options(
            num_cpus=self.cpus_per_run, num_gpus=gpus, max_retries=0, runtime_env={"env_vars": env}
        )
        return self

    def __exit__(self, *exc: object) -> None:
        import ray

        if self._owns_ray:
            ray.shutdown()

    def prepare(self, runs: int) -> int:
        return min(runs, self.workers or runs)

    def submit(self, job: RunJob) -> Any:
        return self._task.remote(job)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        import ray

        return ray.wait(handles, num_returns=1, timeout=timeout)[0]

    def result(self, handle: Any) -> RunOutcome:
        import ray

        return ray.get(handle)


# ----------------------------------------------------------------------------- driving and display


def run_jobs(executor: Executor, jobs: list[RunJob], skipped: int) -> list[RunOutcome]:
    """Do ``jobs`` on ``executor`` with a live display of the counts; returns their outcomes."""
    outcomes: list[RunOutcome] = []
    if not jobs:
        return outcomes
    queued = deque(jobs)
    in_flight: dict[Any, RunJob] = {}
    with executor, sweep_progress() as progress:
        task = progress.add_task("sweep", total=len(jobs), **counts(outcomes, 0, len(queued), skipped))
        limit = executor.prepare(len(jobs))
        while queued or in_flight:
            while queued and len(in_flight) < limit:
                job = queued.popleft()
                in_flight[executor.submit(job)] = job
            progress.update(task, **counts(outcomes, len(in_flight), len(queued), skipped))
            for handle in executor.wait(list(in_flight), POLL_S):
                outcomes.append(collect(executor, handle, in_flight.pop(handle)))
        progress.update(task, **counts(outcomes, 0, 0, skipped))
    return outcomes


def counts(outcomes: list[RunOutcome], running: int, queued: int, skipped: int) -> dict[str, int]:
    """The fields of the progress line."""
    failed = sum(o.status == "failed" for o in outcomes)
    return dict(completed=len(outcomes), done=len(outcomes) - failed, failed=failed, running=running, queued=queued, skipped=skipped)


def collect(executor: Executor, handle: Any, job: RunJob) -> RunOutcome:
    """The outcome of ``job``; a worker that died without reporting counts as a failed run."""
    try:
        return executor.result(handle)
    except Exception as error:
        return job.outcome("failed", f"worker died: {_one_line(error)}")


def sweep_progress() -> Progress:
    """A live line: bar over the runs to do, and the done / running / failed / skipped counts."""
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(
            "done {task.fields[done]} · running {task.fields[running]} · queued {task.fields[queued]} · "
            "[red]failed {task.fields[failed]}[/] · skipped {task.fields[skipped]}"
        ),
        TimeElapsedColumn(),
    )


def print_summary(outcomes: list[RunOutcome]) -> None:
    """A table of every run (preset, seed, status, time, error, log) and a closing count."""
    table = Table(title="sweep")
    for column in ("preset", "seed", "status", "time", "error", "log"):
        table.add_column(column, overflow="fold")
    styles = {"finished": "green", "skipped": "dim", "failed": "bold red"}
    for o in outcomes:
        resumed = " (resumed)" if o.action == "resume" and o.status == "finished" else ""
        status = f"[{styles[o.status]}]{o.status}{resumed}[/]"
        table.add_row(o.preset, str(o.seed), status, f"{o.wall_s:.0f} s" if o.wall_s else "", o.error, str(o.log))
    console = Console()
    console.print(table)
    failed = sum(o.status == "failed" for o in outcomes)
    console.print(f"{len(outcomes) - failed} of {len(outcomes)} runs finished" + (f", [bold red]{failed} failed[/]" if failed else ""))
