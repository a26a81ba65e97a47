"""Drive a run to its budget: run directory, checkpoint per iteration, resume, progress bar.

Any :class:`~rp1.agents.protocol.Agent` can be driven: the model-based
:class:`~rp1.agents.model_based.ModelBasedAgent` and the model-free PPO agent alike. Drawing the run's learning
curve is left to the layers above (``rp1 train``, ``rp1 sweep``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn

from rp1.agents.model_based import AgentState, ModelBasedAgent, step_seeds
from rp1.agents.modelfree import ModelFreeAgent
from rp1.agents.protocol import Agent, RunState, S
from rp1.config import MODEL_FREE, SCALES, Config, resolve, validate
from rp1.config.migrations import continued_note
from rp1.config.overrides import of_type
from rp1.core.compilation import enable_compilation_cache
from rp1.core.errors import ConfigError, DamagedFile, shown
from rp1.core.storage import check_writable_dir
from rp1.outputs.writer import RunOptions, RunOutputs
from rp1.rundir.files import RunDir
from rp1.rundir.lock import RunLock, owning
from rp1.rundir.provenance import program_mismatch
from rp1.rundir.provenance import record as record_environment
from rp1.rundir.saves import BackgroundSaves


def make_agent(cfg: Config) -> Agent:
    """The agent that runs ``cfg.method``."""
    if cfg.method == MODEL_FREE:
        return ModelFreeAgent(cfg)
    return ModelBasedAgent(cfg)


def _fmt(value: object, spec: str) -> str:
    return (
        "–"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
    )


def run_training(
    cfg: Config | str,
    out: str | Path,
    resume: bool = False,
    progress: bool = True,
    overwrite: bool = False,
    options: RunOptions | None = None,
    lock: RunLock | None = None,
) -> Path:
    """Train a config in a run directory until `cfg.budget` real samples, as `rp1 train` does.

    Checks the config and the directory first: on bad input nothing is written. Owns `out` from
    before it reads anything there until it returns: through `lock` if the caller holds it, else
    through a lock of its own. After every iteration the metrics row is flushed and the
    checkpoint replaced atomically (or less often: `options.checkpoint_every_s`), so a kill at
    any moment leaves a run that `resume` continues identically.

    Args:
        cfg: The run's config (from [`resolve`][rp1.config.resolve] or
            [`env_config`][rp1.config.env_config]), or a preset's name, which is resolved as
            `resolve(cfg)` resolves it (its seed, budget and sizes).
        out: The run directory; created if missing.
        resume: Continue the run in `out` from its checkpoint, exactly where it stopped (a run
            killed before its first checkpoint starts afresh; a finished run is checked and left
            as it is).
        progress: Print a line per iteration on stderr.
        overwrite: Replace the run in `out`.
        options: What the run logs besides `metrics.csv` and the policy files (videos,
            TensorBoard) and how often it checkpoints; `None`: `RunOptions()`, neither, a
            checkpoint after every iteration.
        lock: The `rp1.rundir.lock.RunLock` on `out`, if the caller holds it.

    Returns:
        `out`, as a `Path`.

    Raises:
        TypeError: If `cfg` is neither a `Config` nor a preset's name.
        ConfigError: For a bad config, a directory that holds another run (without `resume`
            or `overwrite`), a checkpoint that does not restore, or a run made with several
            seeds in one program (resume it with `run_seeds`).
        RunInUse: If another process owns `out`.
        StorageError: If the machine fails a file operation.
        DivergedError: If training diverges; the last checkpoint is kept.
        RenderError: If `options` ask for videos and the machine cannot render.
    """
    if isinstance(cfg, str):
        cfg = resolve(cfg)
    (outcome,) = run_seeds(
        [cfg], [out], resume, progress, overwrite, options, [lock], seeds_per_process=1
    )
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def run_seeds(
    cfgs: Sequence[Config],
    outs: Sequence[str | Path],
    resume: bool | Sequence[bool] = False,
    progress: bool = True,
    overwrite: bool = False,
    options: RunOptions | None = None,
    locks: Sequence[RunLock | None] | None = None,
    seeds_per_process: int | None = None,
) -> list[Path | Exception]:
    """Train several seeds of one config in one program, each in its own run directory, as
    `rp1 sweep --seeds-per-process N` does: every outer iteration advances every seed, each
    seed's fit and policy training one compiled call for all of them (less memory than a process a
    seed; slower than one, since every iteration waits for its slowest seed).

    Each run directory is written as [`run_training`][rp1.train.run_training] writes it, and
    records `seeds_per_process` in its `environment.json`. The seeds are computed in batches of
    `seeds_per_process` entries throughout (padded with copies while fewer take part), which use
    other kernels than a run alone or a batch of another size: their last bits differ. So a run
    resumes only in a program of the size it was made in, and is refused with a `ConfigError`
    before anything is written otherwise.

    Args:
        cfgs: The seeds' configs: one config but the seed (a model-based method).
        outs: Their run directories, one each.
        resume: As [`run_training`][rp1.train.run_training] takes it, for every seed or one
            per seed.
        progress: Print each seed's progress on stderr.
        overwrite: Replace the runs in `outs`.
        options: As [`run_training`][rp1.train.run_training] takes them, for every seed.
        locks: Each run directory's held `RunLock`, or `None` (then one of its own).
        seeds_per_process: The program's batch size (default: `len(cfgs)`; at least that), which
            each run records; 1 runs one seed alone.

    Returns:
        Each seed's outcome, in order: its run directory, or the error it stopped on (a
            diverged seed's `DivergedError`, a checkpoint that does not restore, ...), which
            stopped that seed only. Errors that concern every seed (a bad config, an interrupt)
            are raised.
    """
    n = len(cfgs) if seeds_per_process is None else seeds_per_process
    batch_check(cfgs, outs, n)
    resumes = [resume] * len(cfgs) if isinstance(resume, bool) else list(resume)
    if len(resumes) != len(cfgs):
        raise ConfigError(f"{len(cfgs)} seeds need as many resume flags, got {len(resumes)}")
    options = options or RunOptions()
    for cfg in cfgs:
        validate(cfg)
        options.check(cfg)
    for out in outs:
        check_writable_dir(out)
    outcomes: list[Path | Exception] = [Path(out) for out in outs]
    with contextlib.ExitStack() as held:
        for out, lock in zip(outs, locks or [None] * len(outs), strict=True):
            held.enter_context(owning(out, lock))
        enable_compilation_cache()
        runs: list[Driven] = []
        for i, (cfg, out, again) in enumerate(zip(cfgs, outs, resumes, strict=True)):
            try:
                driven = _prepared(i, cfg, RunDir(out), again, overwrite, n)
                if driven is not None:
                    runs.append(driven)
            except Exception as error:
                if n == 1:
                    raise
                outcomes[i] = error
        try:
            errors = drive_runs(runs, progress, options, n)
        finally:
            for run in runs:
                run.agent.close()
        for run, failure in zip(runs, errors, strict=True):
            if failure is None:
                run.run.mark_finished()
            else:
                outcomes[run.index] = failure
    return outcomes


def batch_check(cfgs: Sequence[Config], outs: Sequence[str | Path], seeds_per_process: int) -> None:
    """``ConfigError`` unless ``cfgs`` can run as one program: as many configs as run directories,
    one config but the seed, distinct seeds and directories, a model-based method for a batch, a
    whole number of seeds per process; ``TypeError`` if a config is not a :class:`Config`."""
    for cfg in cfgs:
        if not isinstance(cfg, Config):
            raise TypeError(
                f"a run's config is an rp1.Config (rp1.resolve or rp1.env_config makes one; "
                f"rp1.run_training also takes a preset's name), not a {type(cfg).__name__}"
            )
    if not cfgs or len(cfgs) != len(outs):
        raise ConfigError(f"{len(cfgs)} configs need as many run directories, got {len(outs)}")
    if not of_type(seeds_per_process, int) or seeds_per_process < 1:
        raise ConfigError(
            f"seeds per process must be a whole number, at least 1, got {shown(seeds_per_process)}"
        )
    if len(cfgs) > seeds_per_process:
        raise ConfigError(f"{len(cfgs)} seeds do not fit a program of {seeds_per_process}")
    first = config_but_seed(cfgs[0])
    for cfg in cfgs[1:]:
        if config_but_seed(cfg) != first:
            raise ConfigError(
                f"seeds in one program share their config but the seed: {cfg.preset} seed {cfg.seed} "
                f"differs from {cfgs[0].preset} seed {cfgs[0].seed}"
            )
    if len({cfg.seed for cfg in cfgs}) < len(cfgs):
        raise ConfigError(f"seeds in one program must differ, got {sorted(c.seed for c in cfgs)}")
    if len({os.path.realpath(out) for out in outs}) < len(outs):
        raise ConfigError("seeds in one program need a run directory each")
    if seeds_per_process > 1 and cfgs[0].method == MODEL_FREE:
        raise ConfigError(
            "several seeds in one program need a model-based method; "
            f"{cfgs[0].method} runs one seed a process"
        )


def config_but_seed(cfg: Config) -> str:
    """A key equal for the configs that differ only in the seed (the seeds one program may hold)."""
    return json.dumps({**cfg.to_dict(), "seed": None}, sort_keys=True)


def _prepared(
    index: int, cfg: Config, run: RunDir, resume: bool, overwrite: bool, batch: int
) -> Driven | None:
    """The run of ``cfg`` in ``run``, readied to be driven: its config continued (an older run's),
    its agent built and its checkpoint restored (``resume``), refused before anything is written
    if it was made in a program of another size than ``batch``. ``None`` for a finished run
    resumed: checked as any resume, and left as it is (:meth:`RunDir.prepare`)."""
    cfg, note = (cfg, "") if overwrite else continued_config(cfg, run)
    agent = make_agent(cfg)
    try:
        restored = run.prepare(
            cfg.to_dict(),
            resume=resume,
            overwrite=overwrite,
            restore=lambda saved: restore_state(agent, saved, run, batch),
            seeds_per_process=batch,
        )
    except BaseException:
        agent.close()
        raise
    if run.is_finished():  # prepare keeps the marker of a finished run only: nothing to continue
        agent.close()
        return None
    for line in (note, paper_scale_note(cfg)):
        if line:
            print(line, file=sys.stderr, flush=True)
    return Driven(index, agent, cfg, run, restored, batch)


def paper_sized(cfg: Config) -> bool:
    """Whether ``cfg`` is a model-based run with every size the scales set at the paper's value
    (:data:`~rp1.config.SCALES`): the run a GPU is meant for."""
    if cfg.method == MODEL_FREE:
        return False
    sized = {key for sizes in SCALES.values() for key in sizes}
    for key in sized:
        section, name = key.split(".")
        value = getattr(getattr(cfg, section), name)
        if value != getattr(type(getattr(cfg, section))(), name):
            return False
    return True


def paper_scale_note(cfg: Config) -> str:
    """One line for a paper-sized run (:func:`paper_sized`) where JAX has no GPU, naming the
    option that makes it small; ``""`` otherwise."""
    if not paper_sized(cfg):
        return ""
    import jax

    if jax.default_backend() != "cpu":
        return ""
    return (
        f"rp1: note: {cfg.preset} runs at paper scale and JAX found no GPU: on a CPU this takes "
        'hours to days; --scale small (scale="small" in rp1.resolve) runs it at laptop size'
    )


def continued_config(cfg: Config, run: RunDir) -> tuple[Config, str]:
    """``cfg`` as it continues the run in ``run``: for a run of an older schema, the keys its config
    lacks take the values that keep its behaviour (:meth:`RunDir.continued`); ``cfg`` itself for a
    run of the current schema or none. With it, the note of an unfinished run of an older schema,
    whose config is upgraded when it continues (:func:`~rp1.config.migrations.continued_note`;
    ``""`` for any other run: a finished one is not continued)."""
    config = run.continued(cfg.to_dict())
    stored = run.read_stored_config()
    note = ""
    if stored is not None and not run.is_finished():
        note = continued_note(cfg.to_dict(), stored)
    if config == cfg.to_dict():
        return cfg, note
    return validate(Config.from_dict(config)), note


def drive(
    agent: Agent,
    cfg: Config,
    run: RunDir,
    restored: RunState | None,
    progress: bool,
    options: RunOptions | None = None,
) -> None:
    """Step ``agent`` from a fresh state, or the ``restored`` one (:func:`restore_state` of its
    checkpoint), to ``cfg.budget``, writing every row, the
    run's outputs (:class:`~rp1.outputs.writer.RunOutputs`: policy files, ``options``) and the
    checkpoint to ``run`` as it goes, in that order, with a progress bar unless ``progress`` is False.
    The checkpoint is saved after every iteration, or, with ``options.checkpoint_every_s``, after
    the first iteration that ends that long after the last save, and after the last iteration;
    each save is written while the next iteration runs (:mod:`rp1.rundir.saves`), and the last
    one before this returns. The run alone of :func:`drive_runs`; its error is raised.
    Records where it runs (:func:`rp1.rundir.provenance.record`); a warning from there goes to stderr."""
    (error,) = drive_runs([Driven(0, agent, cfg, run, restored, 1)], progress, options)
    if error is not None:
        raise error


@dataclass
class Driven:
    """One run that :func:`drive_runs` advances: its place among the seeds (``index``), agent,
    config, directory, the state restored from its checkpoint (``None``: a fresh run) and the
    number of seeds in its program (``batch``, recorded in its ``environment.json``)."""

    index: int
    agent: Agent
    cfg: Config
    run: RunDir
    restored: RunState | None
    batch: int


class _Driving:
    """What :func:`drive_runs` keeps of one run while it drives it: the current state, its outputs,
    clock, background saves, when it last saved, its progress task and the latest evaluation's
    return as shown."""

    def __init__(self, driven: Driven, options: RunOptions, bar: Progress):
        self.driven, self.options, self.bar = driven, options, bar
        run, cfg, agent = driven.run, driven.cfg, driven.agent
        self.state = agent.initial_state() if driven.restored is None else driven.restored
        warning = record_environment(run.path, len(self.state.rows), driven.batch)
        if warning:
            print(warning, file=sys.stderr, flush=True)
        run.write_metrics(self.state.rows)
        if cfg.eval.every:
            run.write_evaluations(self.state.evaluations)
        self.outputs = RunOutputs(run.path, cfg, agent.task, self.state.rows, options)
        self.clock = RunClock(self.state.samples, self.state.rows)
        self.saved_at = time.monotonic()
        self.saves = BackgroundSaves(run)
        last = self.state.rows[-1] if self.state.rows else {}
        self.ret = _fmt(last.get("eval_return"), ".1f")
        rate, eta = self.clock.shown(self.state.samples, cfg.budget)
        name = cfg.preset if driven.batch == 1 else f"{cfg.preset} seed {cfg.seed}"
        self.task = bar.add_task(
            name,
            total=cfg.budget,
            completed=self.state.samples,
            lam="–",
            ret=self.ret,
            rate=rate,
            eta=eta,
        )

    @property
    def going(self) -> bool:
        """Whether the run is short of its budget."""
        return self.state.samples < self.driven.cfg.budget

    def stepped(self, state: RunState, row: dict[str, Any]) -> None:
        """Write what the step to ``state`` (its metrics ``row``) added, save if it is time, and
        show it."""
        run, cfg = self.driven.run, self.driven.cfg
        evaluated = len(self.state.evaluations)
        self.state = state
        run.append_metrics(row)
        run.append_evaluations(state.evaluations[evaluated:])
        self.outputs.after_step(self.driven.agent.policy_snapshot(state), row)
        now = time.monotonic()
        if now - self.saved_at >= self.options.checkpoint_every_s or not self.going:
            self.saves.submit(self.driven.agent.checkpoint(state))
            self.saved_at = now
        # the latest evaluation
        if row.get("eval_return") is not None:
            self.ret = _fmt(row["eval_return"], ".1f")
        rate, eta = self.clock.shown(state.samples, cfg.budget)
        self.bar.update(
            self.task,
            completed=min(state.samples, cfg.budget),
            lam=_fmt(row.get("lambda"), ".1f"),
            ret=self.ret,
            rate=rate,
            eta=eta,
        )


def drive_runs(
    runs: Sequence[Driven],
    progress: bool,
    options: RunOptions | None = None,
    batch: int = 1,
) -> list[Exception | None]:
    """Drive every run of ``runs`` to its budget in lockstep (:func:`drive`, run by run): each
    iteration steps every run short of its budget, all at once (``batch ≥ 2``: the model-based
    seeds' fits and policy trainings one compiled call of ``batch`` entries,
    :func:`~rp1.agents.model_based.step_seeds`; ``1``: the one run alone). A run whose step fails
    stops there, its last checkpoint kept, and the others go on. Returns each run's error
    (``None``: it reached its budget); the error of a run alone, and an interrupt, are raised once
    every save under way has ended."""
    options = options or RunOptions()
    errors: list[Exception | None] = [None] * len(runs)
    with (
        contextlib.ExitStack() as closing,
        Progress(
            # fits 80 columns for the quick presets: the bar, real samples, λ, the latest
            # evaluation, the run's throughput and the time left (RunClock)
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=8),
            TextColumn(
                "{task.completed:,.0f}/{task.total:,.0f} λ {task.fields[lam]} eval {task.fields[ret]} {task.fields[rate]} samples/s ETA {task.fields[eta]}"
            ),
            disable=not progress,
        ) as bar,
    ):
        driving: list[_Driving] = []
        for run in runs:
            driving.append(_Driving(run, options, bar))
            closing.callback(driving[-1].outputs.close)
        try:
            while going := [i for i, d in enumerate(driving) if d.going and errors[i] is None]:
                outcomes = _step_all([driving[i] for i in going], batch)
                for i, outcome in zip(going, outcomes, strict=True):
                    if isinstance(outcome, Exception):
                        errors[i] = outcome
                        driving[i].saves.wait(raise_error=False)  # the save under way ends
                    else:
                        driving[i].stepped(*outcome)
        except BaseException:
            for d in driving:  # the saves under way end; the error is reported
                d.saves.wait(raise_error=False)
            raise
        for d, error in zip(driving, errors, strict=True):
            if error is None:
                d.saves.wait()
    return errors


def _step_all(driving: list[_Driving], batch: int) -> list[Any]:
    """One step of each run of ``driving``: a run alone by its agent's ``step`` (its error raised),
    the seeds of a batch together (:func:`~rp1.agents.model_based.step_seeds`, each seed's error
    its outcome)."""
    if batch == 1:
        (d,) = driving
        return [d.driven.agent.step(d.state)]
    agents = [d.driven.agent for d in driving]
    states = [d.state for d in driving]
    # batch_check: only model-based seeds share a program
    assert all(isinstance(a, ModelBasedAgent) for a in agents)
    assert all(isinstance(s, AgentState) for s in states)
    return step_seeds(agents, states, batch)  # type: ignore[arg-type]


class RunClock:
    """The run's throughput, real samples per second of the whole run (the wall time of the rows a
    resumed run restored, ``wall_s``, plus this process's), and the time left to the budget at
    that rate: what the progress bar shows."""

    def __init__(self, samples: int, rows: list[dict]):
        self.start = time.monotonic()
        self.start_samples = samples
        self.before = sum(
            row["wall_s"] for row in rows if isinstance(row.get("wall_s"), (int, float))
        )

    def rate(self, samples: int) -> float | None:
        """Real samples per second of the whole run so far; None before there is any."""
        elapsed = self.before + time.monotonic() - self.start
        done = samples if self.before > 0 else samples - self.start_samples
        return done / elapsed if done > 0 and elapsed > 0 else None

    def shown(self, samples: int, budget: int) -> tuple[str, str]:
        """The rate (samples/s) and the time left to ``budget`` (:func:`clock_time`) as the bar
        shows them."""
        rate = self.rate(samples)
        if rate is None:
            return "–", "–"
        return f"{rate:,.0f}", clock_time(max(budget - samples, 0) / rate)


def clock_time(seconds: float) -> str:
    """``seconds`` as ``M:SS``, or ``H:MM:SS`` from an hour on."""
    whole = round(seconds)
    hours, minutes, secs = whole // 3600, whole % 3600 // 60, whole % 60
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def check_program(run: RunDir, batch: int) -> None:
    """``ConfigError`` if the run in ``run`` was made in a program of another size than ``batch``:
    the size its checkpoint seals (:meth:`RunDir.sealed_program`), or for a checkpoint sealed
    before sizes were, its record's (:func:`rp1.rundir.provenance.program_mismatch`). Another size
    would compute the run's numbers with other kernels."""
    mismatch = program_mismatch(run.path, batch, run.sealed_program())
    if mismatch:
        raise ConfigError(mismatch)


def restore_state(agent: Agent[S], saved: dict, run: RunDir, batch: int = 1) -> S:
    """``agent.restore(saved)``; :class:`~rp1.core.errors.DamagedFile` naming the checkpoint if it
    does not fit the agent (a missing entry, an array of another shape or dtype, inf or NaN in an
    array, metadata of the wrong type), and ``ConfigError`` if the run was made in a program of
    another size than ``batch`` (:func:`check_program`)."""
    check_program(run, batch)
    try:
        return agent.restore(saved)
    except (KeyError, ValueError, TypeError, AttributeError) as err:
        raise DamagedFile(
            f"checkpoint {run.checkpoint_path} is damaged or does not hold a state of this run ({type(err).__name__}: {err})"
        ) from None
