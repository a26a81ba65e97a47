"""Where a sweep's runs go: a pool of processes on this machine (``local``) or Ray tasks on a
cluster (``ray``), behind one small :class:`Executor` interface."""

from __future__ import annotations

import importlib.util
import math
import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

from rp1.config.methods import METHODS_VARIABLE
from rp1.core.errors import ConfigError
from rp1.experiments.sweep_plan import RunJob, RunOutcome
from rp1.experiments.sweep_worker import execute_run, start_local_worker, worker_env

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
        """Start ``job``; returns a handle."""

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The handles among ``handles`` that completed, waiting at most ``timeout`` seconds."""

    def result(self, handle: Any) -> RunOutcome:
        """The outcome of a completed handle; raises if the worker itself died."""


@dataclass(frozen=True)
class Backend:
    """Where a sweep's runs go: ``name`` (:data:`BACKENDS`); ``workers`` runs at a time (local
    default: one per CPU core, at most one per run; Ray default: as many as the cluster's resources
    allow); for Ray, the cluster's ``address`` (``None``: a local Ray instance started here) and
    what each run asks for: ``cpus_per_run`` CPUs and ``gpus_per_run`` GPUs (``None``:
    :data:`GPU_SHARE` of a GPU if the cluster has GPUs, else 0)."""

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


class LocalExecutor:
    """Runs in a pool of spawned processes on this machine, one run per process at a time. The
    processes end with the sweep: left with an exception, it sends each SIGTERM, which stops its
    run as it stops ``rp1 train``, and waits for them; a process whose sweep was killed ends itself
    (:func:`~rp1.experiments.sweep_worker.start_local_worker`)."""

    def __init__(self, workers: int | None):
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._env: dict[str, str] = {}

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is None:
            return
        if exc[0] is not None:
            for process in list(
                self._pool._processes.values()
            ):  # the pool's own (no public way before Python 3.14)
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def prepare(self, runs: int) -> int:
        cores = os.cpu_count() or 1
        self.workers = self.workers or min(runs, cores)
        self._env = worker_env(max(1, cores // self.workers))
        return self.workers

    def submit(self, job: RunJob) -> Future:
        try:
            return self._started_pool().submit(execute_run, job, stop_on_signals=True)
        except BrokenProcessPool:  # a worker died hard (killed, crashed): go on with a new pool
            self._pool = None
            return self._started_pool().submit(execute_run, job, stop_on_signals=True)

    def _started_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=start_local_worker,
                initargs=(self._env, os.getpid()),
            )
        return self._pool

    def wait(self, handles: list[Future], timeout: float) -> list[Future]:
        return list(wait_futures(handles, timeout, return_when=FIRST_COMPLETED).done)

    def result(self, handle: Future) -> RunOutcome:
        return handle.result()


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
