"""Planning a sweep: one :class:`RunJob` per (preset, seed) and (task, method, seed), each with its
resolved, checked config, its run directory and what to do there (skip a finished run, resume one
with a checkpoint, start the rest), all decided before any run starts."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rp1.config import Config, env_config, resolve
from rp1.config.methods import DEFAULT_METHOD
from rp1.core.errors import ConfigError, DamagedFile, ResultsWithoutCheckpoint
from rp1.outputs.writer import RunOptions
from rp1.report.curves import best_trained
from rp1.report.runs_table import read_metrics
from rp1.rundir.files import RunDir, run_dir_under
from rp1.rundir.lockstep import check_program
from rp1.train import continued_config

RUN_LOG = "log.txt"
FAIL = "fail"
"""The action of a run whose directory holds a damaged file (:class:`~rp1.core.errors.DamagedFile`)
or results that no checkpoint continues (:class:`~rp1.core.errors.ResultsWithoutCheckpoint`): it
fails with that reason, nothing of it is touched, the others run."""
ELSEWHERE = "running elsewhere"
"""The status of a run that another process owned when its turn came (:mod:`rp1.rundir.lock`)."""


@dataclass(frozen=True)
class RunOutcome:
    """How one run of a sweep ended: ``status`` is ``finished``, ``skipped``, ``failed`` or
    :data:`ELSEWHERE`; ``best``: its best evaluation return (:func:`best_return`) where it
    finished."""

    preset: str
    seed: int
    action: str
    status: str
    log: Path
    error: str = ""
    wall_s: float = 0.0
    best: float | None = None


@dataclass(frozen=True)
class RunJob:
    """One (preset, seed) of a sweep: its resolved config, its directory and what to do there.

    ``action`` is ``skip`` (finished), ``resume`` (from its checkpoint), ``start`` (afresh) or
    :data:`FAIL` (``problem`` says why).
    """

    cfg: Config
    run_dir: Path
    action: str
    options: RunOptions = RunOptions()  # videos, TensorBoard (rp1.outputs.writer)
    problem: str = ""

    @property
    def log(self) -> Path:
        return self.run_dir / RUN_LOG

    def outcome(
        self, status: str, error: str = "", wall_s: float = 0.0, best: float | None = None
    ) -> RunOutcome:
        return RunOutcome(
            self.cfg.preset, self.cfg.seed, self.action, status, self.log, error, wall_s, best
        )


ConfigSource = Callable[..., Config]
"""``source(seed=…, budget=…, overrides=…, scale=…) -> Config``: :func:`rp1.config.resolve` of a
preset or :func:`rp1.config.env_config` of a (task, method)."""


def config_sources(
    presets: Sequence[str], envs: Sequence[str] = (), methods: Sequence[str] = (DEFAULT_METHOD,)
) -> list[ConfigSource]:
    """One source per preset, then one per (task, method) of ``envs`` × ``methods``."""
    by_task: list[ConfigSource] = [
        partial(env_config, env, method) for env in envs for method in methods
    ]
    return [partial(resolve, name) for name in presets] + by_task


@dataclass(frozen=True)
class SweepRequest:
    """What a sweep runs: every (preset, seed) of ``presets`` × ``seeds`` in
    ``out/<preset>/seed<k>/``, and every (task, method, seed) of ``envs`` × ``methods`` × ``seeds``
    in ``out/<task>-<method>/seed<k>/``; every run with ``budget``, ``scale`` (``None``: its own;
    :func:`rp1.config.with_scale`) and the ``--set`` items ``overrides``; in the ``order`` of
    :data:`ORDERS`."""

    presets: Sequence[str]
    seeds: Sequence[int]
    out: Path
    envs: Sequence[str] = ()
    methods: Sequence[str] = (DEFAULT_METHOD,)
    budget: int | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    scale: str | None = None
    order: str = "cells"


ORDERS = ("cells", "seeds")
"""The orders a sweep may start its runs in (``--order``): every seed of a preset (or task and
method) before the next, or seed k of every one before seed k + 1, so that a sweep stopped early
leaves every cell the same seeds."""


def plan_sweep(request: SweepRequest) -> list[RunJob]:
    """Resolve and check every run of ``request`` before any starts, in its order (:data:`ORDERS`;
    presets, then tasks × methods)."""
    if request.order not in ORDERS:
        raise ConfigError(f"--order must be one of {', '.join(ORDERS)}, got {request.order!r}")
    sources = config_sources(request.presets, request.envs, request.methods)
    if not sources or not request.seeds:
        raise ConfigError(
            "a sweep needs at least one preset or task (--presets, --envs) and one seed"
        )
    jobs: dict[tuple[str, int], RunJob] = {}
    for source in sources:
        for seed in request.seeds:
            cfg = source(
                seed=seed,
                budget=request.budget,
                overrides=dict(request.overrides),
                scale=request.scale,
            )
            run_dir = run_dir_under(request.out, cfg.preset, cfg.seed)
            job, note = planned(cfg, run_dir)
            if note:
                print(f"{job.run_dir}: {note.removeprefix('rp1: note: ')}")
            jobs[cfg.preset, cfg.seed] = job
    if request.order == "seeds":
        return sorted(jobs.values(), key=lambda job: job.cfg.seed)  # stable: cells in order
    return list(jobs.values())


def planned(cfg: Config, run_dir: Path) -> tuple[RunJob, str]:
    """The job of ``cfg`` in ``run_dir`` (its config
    as it continues a run held there, :func:`rp1.train.continued_config`, and :meth:`RunDir.action`)
    and that function's note; a :data:`FAIL` job if the directory holds a damaged file or
    results that no checkpoint continues.
    ConfigError if it would resume a run made with several seeds in one program
    (:func:`rp1.rundir.lockstep.check_program`)."""
    run = RunDir(run_dir)
    try:
        cfg, note = continued_config(cfg, run)
        job = RunJob(cfg, run_dir, run.action(cfg.to_dict()))
        if job.action == "resume":
            check_program(run)
        return job, note
    except (DamagedFile, ResultsWithoutCheckpoint) as refused:
        return RunJob(cfg, run_dir, FAIL, problem=str(refused)), ""


def best_return(run_dir: Path) -> float | None:
    """The best evaluation return of a trained policy in ``run_dir``'s ``metrics.csv``, as ``rp1
    report`` reads and counts it (:func:`~rp1.report.curves.best_trained`); ``None`` if there
    is none or the file cannot be read."""
    try:
        metrics, _ = read_metrics(Path(run_dir), Path(run_dir).name)
    except (ConfigError, OSError):
        return None
    best = best_trained(metrics)
    return None if math.isnan(best) else best


def with_options(jobs: list[RunJob], options: RunOptions) -> list[RunJob]:
    """``jobs`` with ``options``, checked first for every task of the sweep (ConfigError,
    :class:`~rp1.core.errors.RenderError`; see :meth:`~rp1.outputs.writer.RunOptions.check`)."""
    for cfg in {(job.cfg.task, job.cfg.horizon): job.cfg for job in jobs}.values():
        options.check(cfg)
    return [dataclasses.replace(job, options=options) for job in jobs]
