"""Sweeps (``rp1 sweep``): one run per (preset, seed) in ``OUT/<preset>/seed<k>/``, and per (task,
method, seed) in ``OUT/<task>-<method>/seed<k>/`` (the config's ``preset``, see
:func:`rp1.config.env_config`).

Every run is planned before any starts: its config is resolved and checked, and what its
directory holds decides what happens to it (:meth:`rp1.rundir.files.RunDir.held`) — a finished
run, or a finished run's copy without its checkpoint, is skipped, a run with a checkpoint is
resumed, a directory holding nothing a restart would not write again starts afresh (cleared
first), and a run whose directory holds a damaged file (:class:`~rp1.core.errors.DamagedFile`) or
results that no checkpoint continues (:class:`~rp1.core.errors.ResultsWithoutCheckpoint`) fails
with that reason, untouched, while the others run. The runs
then go to a *backend*:

- ``local`` (default): a spawned process per run on this machine (JAX is not fork-safe), at most
  ``workers`` at a time; a process that dies (a signal, the out-of-memory killer) fails its own run
  only, named with the signal in the summary, and the same sweep resumes it;
- ``ray``: the same run function as Ray tasks, on the cluster at ``address`` or on a local Ray
  instance, each task asking for ``cpus_per_run`` CPUs and ``gpus_per_run`` GPUs, so several runs
  can share one GPU. Run directories must be on a file system that every Ray node sees.

Each run appends its output (including a traceback if it fails) to ``<run_dir>/log.txt``, with a
line of the sweep's for its start and its end (:mod:`~rp1.sweep.worker`). A failed
run does not stop the others; the summary at the end lists every run with its best evaluation
return, and each run that did not finish with its error and log. An exception in the sweep's
process (``rp1 sweep`` turns SIGINT and SIGTERM into one,
:func:`rp1.core.signals.raise_on_signals`) stops the local runs before it goes on
(:class:`~rp1.sweep.executors.LocalExecutor`); the same sweep resumes them.

One owner per run (:mod:`rp1.rundir.lock`): planning reads run directories without locking; a worker
takes the run's lock before it touches the directory, decides again there what to do (another
process may have finished or started it since) and holds the lock until the run and its learning
curve are written. A run whose lock another process holds (another sweep, an ``rp1 train``, a
retried Ray task whose first attempt still lives) is reported as ``running elsewhere``: neither
finished nor failed; the sweep's exit code is then :data:`RUNNING_ELSEWHERE` if nothing failed.

The pieces: :mod:`~rp1.sweep.plan` (what to do with every run),
:mod:`~rp1.sweep.worker` (one run in a worker), :mod:`~rp1.sweep.executors`
(local processes, one per run; Ray); this module drives them with a live display and prints the summary.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from rp1.core.errors import described
from rp1.outputs.writer import RunOptions
from rp1.sweep.executors import Backend, Executor, make_executor
from rp1.sweep.plan import (
    ELSEWHERE,
    FAIL,
    RunJob,
    RunOutcome,
    SweepRequest,
    best_return,
    plan_sweep,
    with_options,
)

POLL_S = 0.5
"""How often (seconds) the progress display is refreshed while runs are under way."""
RUNNING_ELSEWHERE = 3
"""The sweep's exit code when no run failed but other processes owned some (rerun the sweep once
they have ended: it skips what they finished)."""


def run_sweep(
    request: SweepRequest, backend: Backend = Backend(), options: RunOptions | None = None
) -> int:
    """Do every run of ``request`` (:class:`~rp1.sweep.plan.SweepRequest`) on
    ``backend`` (:class:`~rp1.sweep.executors.Backend`): finished runs are skipped, runs with
    a checkpoint resumed, the rest started. ``options``: what every run logs besides
    (:class:`~rp1.outputs.writer.RunOptions`). Everything is checked before anything runs: a bad
    preset, override, backend or ``workers``, a run directory holding another config, Ray not
    installed, or ``options`` a task cannot serve raise :class:`ConfigError`
    (:class:`~rp1.core.errors.RenderError`: the machine cannot render). Returns the exit code: 0 if
    every run finished, 1 if any failed, else :data:`RUNNING_ELSEWHERE` if other processes owned
    some.
    """
    executor = make_executor(backend)
    jobs = plan_sweep(request)
    if options is not None:
        jobs = with_options(jobs, options)
    todo = [job for job in jobs if job.action not in ("skip", FAIL)]
    skipped = sum(job.action == "skip" for job in jobs)
    outcomes = {(o.preset, o.seed): o for o in run_jobs(executor, todo, skipped=skipped)}
    summary = [
        outcomes.get((job.cfg.preset, job.cfg.seed))
        or (job.outcome("failed", job.problem) if job.action == FAIL else job.outcome("skipped"))
        for job in jobs
    ]
    print_summary(summary)
    statuses = {o.status for o in summary}
    return 1 if "failed" in statuses else RUNNING_ELSEWHERE if ELSEWHERE in statuses else 0


# ----------------------------------------------------------------------------- driving and display


def run_jobs(executor: Executor, jobs: list[RunJob], skipped: int) -> list[RunOutcome]:
    """Do the runs of ``jobs`` on ``executor``, a process each, with a live display of the counts
    of runs; returns their outcomes."""
    outcomes: list[RunOutcome] = []
    if not jobs:
        return outcomes
    queued = deque(jobs)
    in_flight: dict[Any, RunJob] = {}
    with executor, sweep_progress() as progress:
        task = progress.add_task(
            "sweep", total=len(jobs), **counts(outcomes, 0, len(jobs), skipped)
        )
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


def counts(outcomes: list[RunOutcome], running: int, queued: int, skipped: int) -> dict[str, Any]:
    """The fields of the progress line (``skipped``: runs planned as finished; a run another process
    finished since counts as done)."""
    failed = sum(o.status == "failed" for o in outcomes)
    elsewhere = sum(o.status == ELSEWHERE for o in outcomes)
    done = len(outcomes) - failed - elsewhere
    return dict(
        completed=len(outcomes),
        done=done,
        failed=failed,
        elsewhere=elsewhere,
        running=running,
        queued=queued,
        skipped=skipped,
    )


def collect(executor: Executor, handle: Any, job: RunJob) -> RunOutcome:
    """The outcome of ``job``; a worker that died without reporting (an executor that raises for
    it: Ray) fails it."""
    try:
        return executor.result(handle)
    except Exception as error:
        return job.outcome("failed", f"worker died: {described(error)}")


def sweep_progress() -> Progress:
    """A live line: bar over the runs to do, and the done / running / failed / skipped counts."""
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(
            "done {task.fields[done]} · running {task.fields[running]} · queued {task.fields[queued]} · "
            "[red]failed {task.fields[failed]}[/] · elsewhere {task.fields[elsewhere]} · skipped {task.fields[skipped]}"
        ),
        TimeElapsedColumn(),
    )


def print_summary(outcomes: list[RunOutcome]) -> None:
    """A table of every run (preset, seed, status, best evaluation return, wall time), then one
    line per run that did not finish, with its error and its log where it has one (a path is never
    broken across lines), and a closing count."""
    table = Table(title="sweep")
    for column in ("preset", "seed", "status", "best return", "time"):
        table.add_column(column, overflow="fold" if column == "preset" else "ellipsis")
    styles = {"finished": "green", "skipped": "dim", "failed": "bold red", ELSEWHERE: "yellow"}
    for o in outcomes:
        resumed = " (resumed)" if o.action == "resume" and o.status == "finished" else ""
        best = o.best if o.best is not None or o.status != "skipped" else best_return(o.log.parent)
        table.add_row(
            o.preset,
            str(o.seed),
            f"[{styles[o.status]}]{o.status}{resumed}[/]",
            "" if best is None else f"{best:.1f}",
            f"{o.wall_s:.0f} s" if o.wall_s else "",
        )
    console = Console()
    console.print(table)
    for o in outcomes:
        if o.error:
            which = Text(f"{o.preset} seed {o.seed}: ", style=styles[o.status])
            log = f"; log {o.log}" if o.log.exists() else ""  # none for a run refused unstarted
            console.print(which + Text(f"{o.error}{log}"), soft_wrap=True)
    failed = sum(o.status == "failed" for o in outcomes)
    elsewhere = sum(o.status == ELSEWHERE for o in outcomes)
    line = f"{len(outcomes) - failed - elsewhere} of {len(outcomes)} runs finished" + (
        f", [bold red]{failed} failed[/]" if failed else ""
    )
    if elsewhere:
        line += f", [yellow]{elsewhere} running elsewhere[/] (owned by another process; rerun the sweep once it has ended)"
    console.print(line)
