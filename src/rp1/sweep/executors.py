"""Where a sweep's runs go: processes on this machine, one per run (``local``), or Ray tasks on a
cluster (``ray``), behind one small :class:`Executor` interface. Runs that share a machine (a CPU
pool, a GPU) are processes, which share the persistent compilation cache."""

from __future__ import annotations

import importlib.util
import math
import multiprocessing
import os
import pickle
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_connections
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

from rp1.config.methods import METHODS_VARIABLE
from rp1.core.errors import ConfigError
from rp1.sweep.plan import RunJob, RunOutcome
from rp1.sweep.worker import (
    died,
    execute_run,
    run_in_process,
    start_local_worker,
    worker_env,
)

BACKENDS = ("local", "ray")
MAX_WORKERS = 1024
"""Runs a sweep may have in flight at once, at most."""
GPU_SHARE = 0.25
"""GPUs a Ray run asks for by default when the cluster has GPUs: four runs share one GPU."""


class Executor(Protocol):
    """Where runs go: a context manager with :meth:`submit`, :meth:`wait` and :meth:`result`."""

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...

    def prepare(self, runs: int) -> int:
        """Get ready for ``runs`` runs; returns how many to have in flight at once."""

    def submit(self, job: RunJob) -> Any:
        """Start the run of ``job``; returns a handle."""

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The handles among ``handles`` that completed, waiting at most ``timeout`` seconds."""

    def result(self, handle: Any) -> RunOutcome:
        """The outcome of a completed handle's run; raises if the worker itself died."""


@dataclass(frozen=True)
class Backend:
    """Where a sweep's runs go: ``name`` (:data:`BACKENDS`); ``workers`` runs at a time (local
    default: one per CPU core, at most one per run; Ray default: as many as the cluster's
    resources allow); for Ray, the cluster's ``address`` (``None``: a local Ray instance started
    here) and what each run asks for: ``cpus_per_run``
    CPUs and ``gpus_per_run`` GPUs (``None``: :data:`GPU_SHARE` of a GPU if the cluster has GPUs,
    else 0)."""

    name: str = "local"
    workers: int | None = None
    address: str | None = None
    cpus_per_run: float = 1.0
    gpus_per_run: float | None = None


def make_executor(backend: Backend) -> Executor:
    """The executor of ``backend``, with its settings checked (ConfigError if bad)."""
    if backend.name not in BACKENDS:
        raise ConfigError(
            f"unknown backend {backend.name!r}; valid backends: {', '.join(BACKENDS)}"
        )
    if backend.workers is not None and not 1 <= backend.workers <= MAX_WORKERS:
        raise ConfigError(f"--workers must be in [1, {MAX_WORKERS}], got {backend.workers}")
    if backend.name == "local":
        if backend.address is not None:
            raise ConfigError("--address is for the ray backend")
        return LocalExecutor(backend.workers)
    if importlib.util.find_spec("ray") is None:
        raise ConfigError('the ray backend needs Ray: pip install "ready-policy-one[ray]"')
    if backend.cpus_per_run <= 0 or (backend.gpus_per_run is not None and backend.gpus_per_run < 0):
        raise ConfigError(
            f"cpus_per_run must be > 0 and gpus_per_run >= 0, got {backend.cpus_per_run}, {backend.gpus_per_run}"
        )
    return RayExecutor(backend)


@dataclass(eq=False)  # a handle: equal only to itself, hashable
class LocalRun:
    """One run of the local backend: its job, the process it runs in alone and the end of the
    pipe its outcome comes back on."""

    job: RunJob
    process: BaseProcess
    outcome: Connection


class LocalExecutor:
    """Runs on this machine, each in a spawned process of its own (JAX is not fork-safe), at most
    ``workers`` at a time. A run's process ends with its run, so a process that dies (killed by a
    signal, the out-of-memory killer's SIGKILL, a crash) fails its own run only: its exit status
    is the run's outcome (:func:`~rp1.sweep.worker.died`), and the other runs go on.
    The processes end with the sweep: left with an exception, it sends each SIGTERM, which stops its
    run as it stops ``rp1 train``, and waits for them; a process whose sweep was killed ends itself
    (:func:`~rp1.sweep.worker.start_local_worker`)."""

    def __init__(self, workers: int | None):
        self.workers = workers
        self._env: dict[str, str] = {}
        self._runs: list[LocalRun] = []
        self._context = multiprocessing.get_context("spawn")

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            for run in self._runs:
                if run.process.is_alive():
                    run.process.terminate()
        for run in self._runs:
            run.process.join()
            run.outcome.close()
        self._runs = []

    def prepare(self, runs: int) -> int:
        cores = os.cpu_count() or 1
        self.workers = self.workers or min(runs, cores)
        self._env = worker_env(max(1, cores // self.workers))
        return self.workers

    def submit(self, job: RunJob) -> LocalRun:
        receive, send = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=run_in_process,
            # start_local_worker looked up now: a test patches it here
            args=(start_local_worker, self._env, os.getpid(), job, send),
            name=f"rp1 sweep: {job.cfg.preset} seed {job.cfg.seed}",
        )
        process.start()
        send.close()  # the process holds the sending end: the pipe ends with it
        run = LocalRun(job, process, receive)
        self._runs.append(run)
        return run

    def wait(self, handles: list[LocalRun], timeout: float) -> list[LocalRun]:
        ended = set(wait_connections([run.process.sentinel for run in handles], timeout))
        return [run for run in handles if run.process.sentinel in ended]

    def result(self, handle: LocalRun) -> RunOutcome:
        handle.process.join()
        self._runs.remove(handle)
        try:
            outcome = handle.outcome.recv() if handle.outcome.poll() else None
        except (EOFError, OSError, pickle.UnpicklingError):  # it died while sending
            outcome = None
        finally:
            handle.outcome.close()
        return outcome or died(handle.job, handle.process.exitcode)


class RayExecutor:
    """Runs as Ray tasks on the cluster at ``address``, or on a local Ray instance started (and
    shut down) here with ``workers`` CPUs (default: all cores). The tasks get this process's
    :data:`~rp1.config.methods.METHODS_VARIABLE`, whose modules must import on the cluster."""

    def __init__(self, backend: Backend):
        self.workers = backend.workers
        self.address = backend.address
        self.cpus_per_run = backend.cpus_per_run
        self.gpus_per_run = backend.gpus_per_run
        self._owns_ray = False
        self._task: Any = None

    def __enter__(self) -> RayExecutor:
        import ray

        if not ray.is_initialized():
            local: dict[str, Any] = (
                {}
                if self.address
                else {"num_cpus": self.workers or os.cpu_count(), "include_dashboard": False}
            )
            ray.init(address=self.address, log_to_driver=False, **local)
            self._owns_ray = True
        gpus = self.gpus_per_run
        if gpus is None:
            gpus = GPU_SHARE if ray.cluster_resources().get("GPU", 0) > 0 else 0.0
        env = worker_env(max(1, math.ceil(self.cpus_per_run)))
        if METHODS_VARIABLE in os.environ:
            env[METHODS_VARIABLE] = os.environ[METHODS_VARIABLE]
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
