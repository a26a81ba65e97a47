"""Drive a run to its budget: run directory, checkpoint per iteration, resume, progress bar.

Any :class:`~rp1.agents.protocol.Agent` can be driven: the model-based
:class:`~rp1.agents.model_based.ModelBasedAgent` and the model-free PPO agent alike. Drawing the run's learning
curve is left to the layers above (``rp1 train``, ``rp1 sweep``).
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn

from rp1.agents.model_based import ModelBasedAgent
from rp1.agents.modelfree import ModelFreeAgent
from rp1.agents.protocol import Agent, RunState, S
from rp1.config import MODEL_FREE, SCALES, Config, resolve, validate
from rp1.config.migrations import continued_note
from rp1.core.compilation import enable_compilation_cache
from rp1.core.errors import ConfigError, DamagedFile
from rp1.core.storage import check_writable_dir
from rp1.outputs.writer import RunOptions, RunOutputs
from rp1.rundir.files import DONE, RunDir
from rp1.rundir.lock import RunLock, owning
from rp1.rundir.lockstep import check_program
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
    any moment leaves a run that `resume` continues identically. Many runs share a machine as
    processes (`rp1 sweep --workers N`), which share the compilation cache.

    Args:
        cfg: The run's config (from [`resolve`][rp1.config.resolve] or
            [`env_config`][rp1.config.env_config]), or a preset's name, which is resolved as
            `resolve(cfg)` resolves it (its seed, budget and sizes).
        out: The run directory; created if missing.
        resume: Continue the run in `out` from its checkpoint, exactly where it stopped (a run
            killed before it wrote a trained policy's row starts afresh; a finished run, or a
            finished run's copy without its checkpoint such as `rp1 export` makes, is checked and
            left as it is; results short of the budget without a checkpoint are refused).
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
            or `overwrite`), a checkpoint that does not restore, or the resume of a run made
            with several seeds in one program (rp1 0.2.x with `--seeds-per-process N` continues
            it).
        RunInUse: If another process owns `out`.
        StorageError: If the machine fails a file operation.
        DivergedError: If training diverges; the last checkpoint is kept.
        RenderError: If `options` ask for videos and the machine cannot render.
    """
    if isinstance(cfg, str):
        cfg = resolve(cfg)
    if not isinstance(cfg, Config):
        raise TypeError(
            f"a run's config is an rp1.Config (rp1.resolve or rp1.env_config makes one; "
            f"rp1.run_training also takes a preset's name), not a {type(cfg).__name__}"
        )
    options = options or RunOptions()
    validate(cfg)
    options.check(cfg)
    check_writable_dir(out)
    with owning(out, lock):
        enable_compilation_cache()
        run = RunDir(out)
        cfg, note = (cfg, "") if overwrite else continued_config(cfg, run)
        agent = make_agent(cfg)
        try:
            restored = run.prepare(
                cfg.to_dict(),
                resume=resume,
                overwrite=overwrite,
                restore=lambda saved: restore_state(agent, saved, run),
            )
            # prepare wrote nothing for a finished run or a finished run's copy: nothing to continue
            if run.held(cfg.to_dict()) in DONE:
                if resume and not run.has_checkpoint():
                    check_program(run)  # a copy of a retired program's run, by its record
            else:
                for line in (note, paper_scale_note(cfg)):
                    if line:
                        print(line, file=sys.stderr, flush=True)
                drive(agent, cfg, run, restored, progress, options)
                run.mark_finished()
        finally:
            agent.close()
    return Path(out)


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
    ``""`` for any other run: a finished one, or a finished run's copy, is not continued)."""
    config = run.continued(cfg.to_dict())
    stored = run.read_stored_config()
    note = ""
    if stored is not None and not finished_here(run, config):
        note = continued_note(cfg.to_dict(), stored)
    if config == cfg.to_dict():
        return cfg, note
    return validate(Config.from_dict(config)), note


def finished_here(run: RunDir, config: dict) -> bool:
    """Whether ``run`` holds the finished run of ``config`` or a finished run's copy
    (:data:`~rp1.rundir.files.DONE`); False where what it holds is refused (another config,
    results no checkpoint continues), which the run's directory then says where it is decided."""
    try:
        return run.held(config) in DONE
    except ConfigError:
        return False


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
    one before this returns; on an error, the save under way ends before it is raised.
    Records where it runs (:func:`rp1.rundir.provenance.record`); a warning from there goes to stderr."""
    options = options or RunOptions()
    state = agent.initial_state() if restored is None else restored
    warning = record_environment(run.path, len(state.rows))
    if warning:
        print(warning, file=sys.stderr, flush=True)
    run.write_metrics(state.rows)
    if cfg.eval.every:
        run.write_evaluations(state.evaluations)
    clock = RunClock(state.samples, state.rows)
    last = state.rows[-1] if state.rows else {}
    ret = _fmt(last.get("eval_return"), ".1f")
    saves, saved_at = BackgroundSaves(run), time.monotonic()
    with (
        contextlib.closing(RunOutputs(run.path, cfg, agent.task, state.rows, options)) as outputs,
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
        rate, eta = clock.shown(state.samples, cfg.budget)
        task = bar.add_task(
            cfg.preset,
            total=cfg.budget,
            completed=state.samples,
            lam="–",
            ret=ret,
            rate=rate,
            eta=eta,
        )
        try:
            while state.samples < cfg.budget:
                written = len(state.evaluations)  # the grid's rows in evaluations.csv
                state, row = agent.step(state)
                run.append_metrics(row)
                run.append_evaluations(state.evaluations[written:])
                outputs.after_step(agent.policy_snapshot(state), row)
                now = time.monotonic()
                if now - saved_at >= options.checkpoint_every_s or state.samples >= cfg.budget:
                    saves.submit(agent.checkpoint(state))
                    saved_at = now
                if row.get("eval_return") is not None:  # the latest evaluation
                    ret = _fmt(row["eval_return"], ".1f")
                rate, eta = clock.shown(state.samples, cfg.budget)
                bar.update(
                    task,
                    completed=min(state.samples, cfg.budget),
                    lam=_fmt(row.get("lambda"), ".1f"),
                    ret=ret,
                    rate=rate,
                    eta=eta,
                )
        except BaseException:
            saves.wait(raise_error=False)  # the save under way ends; the error is reported
            raise
        saves.wait()


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


def restore_state(agent: Agent[S], saved: dict, run: RunDir) -> S:
    """``agent.restore(saved)``; :class:`~rp1.core.errors.DamagedFile` naming the checkpoint if it
    does not fit the agent (a missing entry, an array of another shape or dtype, inf or NaN in an
    array, metadata of the wrong type), and ``ConfigError`` if the run was made in a program of
    several seeds (:func:`rp1.rundir.lockstep.check_program`)."""
    check_program(run)
    try:
        return agent.restore(saved)
    except (KeyError, ValueError, TypeError, AttributeError) as err:
        raise DamagedFile(
            f"checkpoint {run.checkpoint_path} is damaged or does not hold a state of this run ({type(err).__name__}: {err})"
        ) from None
