"""The ``rp1`` command line.

Every error a user can act on ends as one line ``rp1: error: …`` on stderr, with exit code 2 for
bad input (:class:`rp1.core.errors.ConfigError`) and 1 for a file operation the machine failed
(:class:`rp1.core.errors.StorageError`, or any ``OSError``). ``RP1_DEBUG=1`` shows the traceback.

A command parses its options, calls the library and prints; it imports what it calls inside its
body, not at start-up, so that ``rp1 --help``, ``rp1 --version`` and a usage error stay fast: the
config, tasks and training stack load Gymnasium, MuJoCo, Flax and Optax, the report matplotlib,
pandas and SciPy, and run directories Flax (its msgpack).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rp1._version import __version__
from rp1.cli.helptext import PlainCommand
from rp1.cli.options import (
    CONFIG,
    EVALUATE,
    MANY_RUNS,
    ONE_RUN,
    RUN_OPTIONS,
    RUN_SETTINGS,
    SWEEP_SETTINGS,
    WHICH_RUN,
    Options,
    command,
    reflowed,
)
from rp1.cli.stdout import open_stdout, stdout_failure
from rp1.cli.tables import table, terminal_width
from rp1.core.errors import Interrupted, Rp1Error, clipped
from rp1.core.signals import exit_on_signals, raise_on_signals
from rp1.core.storage import check_writable_dir
from rp1.rundir.lock import RunLock

if TYPE_CHECKING:
    from rp1.config import Config
    from rp1.outputs.writer import RunOptions

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help (rp1.cli.helptext)
    help="Ready Policy One: model-based RL with active data acquisition.",
)


def _print_version(value: bool) -> None:
    """``rp1 --version``: the version, then exit."""
    if value:
        typer.echo(f"rp1 {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print rp1's version and exit.",
    ),
) -> None:
    """Ready Policy One: model-based RL with active data acquisition."""
    _register_named_methods()


def _register_named_methods() -> None:
    """Import the methods of one's own that ``RP1_METHODS`` names
    (:data:`rp1.config.methods.METHODS_VARIABLE`) before any command runs: a name that does not
    import is one line and exit code 2 whatever the command."""
    from rp1.config.methods import model_based_methods

    model_based_methods()


ANY_TASK = """\
Any other task runs with --env instead of --preset (and --method, default rp1):
  a Gymnasium id with a 1-D Box observation and bounded 1-D Box actions
    rp1 train --env Pendulum-v1 --method rp1 --scale small [--horizon H]   (H: its time limit)
  or a task of your own, an rp1.envs.TaskSpec at package.module:attribute
    rp1 train --env mypackage.tasks:POINT --method greedy --scale small
Reward and termination a task does not give are learned by the world model.
`rp1 envs ID` shows one task of any kind; see docs/extending.md."""


@app.command()
def envs(
    name: str = typer.Argument(
        None,
        metavar="TASK",
        help="Show only this task (a paper task, a Gymnasium id or package.module:attribute).",
    ),
) -> None:
    """List the tasks: sizes, horizon, and whether reward and termination are given or learned.

    Without TASK, the paper's four tasks and how to run any other task; with TASK, that task.
    """
    from rp1 import envs as registry
    from rp1.config.sources import tasks_importable_from_cwd

    if name:
        tasks_importable_from_cwd()
    tasks = []
    for task_name in [name] if name else registry.names():
        env, task = registry.make(task_name)
        env.close()
        tasks.append(task)
    width = max(12, *(len(task.name) for task in tasks))
    typer.echo(f"{'task':<{width}} {'obs':>4} {'act':>4} {'horizon':>8} {'dt':>6}  reward   done")
    for task in tasks:
        given = ["given" if fn is not None else "learned" for fn in (task.reward_fn, task.done_fn)]
        typer.echo(
            f"{task.name:<{width}} {task.obs_dim:>4} {task.act_dim:>4} {task.horizon:>8} {task.dt:>6.3f}  {given[0]:<8} {given[1]}"
        )
    if not name:
        typer.echo(f"\n{ANY_TASK}")


@app.command()
def presets() -> None:
    """List the presets (the paper's experiments and the quick ones), one line each.

    Methods of one's own that RP1_METHODS names (docs/extending.md) have their presets here too.
    """
    from rp1.config import preset_descriptions

    typer.echo(table(list(preset_descriptions().items()), terminal_width()))


@command(app, WHICH_RUN, RUN_SETTINGS, CONFIG, name="config")
def config_command(o: Options) -> None:
    """List every config key: its value, the values it may take and what it means.

    With --preset (or --env and --method) and the options of rp1 train that shape a config, the
    values are those rp1 train would run with; without a preset or task, the schema's defaults
    (paper scale unless --scale) with those options applied. Every key but preset, task, method and
    scale can be changed with --set key=value on rp1 train and rp1 sweep.
    """
    from rp1.config.reference import entries, markdown_table

    cfg = run_config(o, defaults=True)
    if o.markdown:
        typer.echo(markdown_table(cfg))
    else:
        typer.echo(table([CONFIG_COLUMNS, *entries(cfg)], terminal_width()))


CONFIG_COLUMNS = ("key", "value", "range", "meaning")
"""The header of ``rp1 config``'s table, a column per field of
:class:`~rp1.config.reference.Entry`."""


def run_config(o: Options, defaults: bool = False) -> Config:
    """The config of ``rp1 train``'s options ``o`` (:func:`config_of`); with ``defaults``, where
    ``o`` names no preset or task, the schema's defaults with them applied (not validated: no
    task)."""
    from rp1.config import apply_overrides, with_scale
    from rp1.config.reference import default_config
    from rp1.config.sources import config_of, given_overrides, method_goes_with_task

    if defaults and o.preset is None and o.env is None:
        if o.method is not None:
            raise method_goes_with_task()
        cfg = with_scale(default_config(), o.scale) if o.scale else default_config()
        given = {"env_workers": o.env_workers, "horizon": o.horizon}
        # --seed and --budget win over --set seed=…, budget=…, as in rp1.config.resolve
        return apply_overrides(cfg, given_overrides(o.set_, **given, seed=o.seed, budget=o.budget))
    overrides = given_overrides(o.set_, env_workers=o.env_workers, horizon=o.horizon)
    return config_of(
        o.preset, o.env, o.method, seed=o.seed, budget=o.budget, overrides=overrides, scale=o.scale
    )


@command(app, WHICH_RUN, ONE_RUN, RUN_SETTINGS, RUN_OPTIONS)
def train(o: Options) -> None:
    """Train one run: RP1 or a baseline, model-based or model-free.

    The preset names the task and method, or --env and --method do. Ctrl-C (SIGINT) or SIGTERM
    stops the run at once (exit code 130 or 143); --resume continues it. A run directory has one
    owner: while another process trains there, this one exits 2 naming it.
    """
    from rp1.report.run_curve import write_learning_curve
    from rp1.report.run_summary import run_summary
    from rp1.rundir.files import CURVE, DEFAULT_ROOT, RunDir, run_dir_under
    from rp1.train import run_training

    cfg = run_config(o)
    out = o.out or run_dir_under(DEFAULT_ROOT, cfg.preset, cfg.seed)
    again = "--resume instead of --overwrite" if o.overwrite else "--resume"
    check_writable_dir(out)
    with (
        exit_on_signals(f"continue the run in {out} with the same command and {again}"),
        RunLock(out) as lock,
    ):
        finished = not o.overwrite and RunDir(out).holds_finished(cfg.to_dict())
        if o.resume or not finished:  # a finished run resumed is checked, and nothing written
            run_training(
                cfg,
                out,
                resume=o.resume,
                overwrite=o.overwrite,
                progress=not o.quiet,
                options=run_options(o),
                lock=lock,
            )
        if finished:
            if not o.quiet:
                curve = out / CURVE if (out / CURVE).is_file() else None
                typer.echo(
                    f"{out} holds this run, finished: nothing to do (--overwrite starts it afresh)"
                )
                typer.echo(run_summary(out, curve))
            return
        # by the owner: no other process draws it meanwhile
        curve = write_learning_curve(out, cfg.preset)
    if not o.quiet:
        typer.echo(run_summary(out, curve))


def run_options(o: Options) -> RunOptions:
    """The :class:`~rp1.outputs.writer.RunOptions` of ``--video``, ``--tensorboard`` and
    ``--checkpoint-every``."""
    from rp1.outputs.writer import RunOptions

    return RunOptions(
        video=o.video, tensorboard=o.tensorboard, checkpoint_every_s=o.checkpoint_every
    )


@command(app, MANY_RUNS, SWEEP_SETTINGS, RUN_OPTIONS)
def sweep(o: Options) -> None:
    """Run every (preset, seed) and (task, method, seed) of a sweep, to the end.

    Finished runs are skipped, unfinished ones resumed, the rest started; a run that another
    process owns is left to it ("running elsewhere", exit code 3). Ctrl-C (SIGINT) or SIGTERM
    stops the sweep and its runs at once (exit code 130 or 143); the same command resumes them.
    """
    from rp1.config.sources import (
        given_overrides,
        method_goes_with_task,
        parse_names,
        parse_seeds,
        tasks_importable_from_cwd,
    )
    from rp1.sweep.driver import run_sweep
    from rp1.sweep.executors import Backend
    from rp1.sweep.plan import SweepRequest

    check_writable_dir(o.out)
    tasks = parse_names(o.envs)
    if o.methods is not None and not tasks:
        raise method_goes_with_task(many=True)
    if tasks:
        tasks_importable_from_cwd()
    request = SweepRequest(
        parse_names(o.presets),
        parse_seeds(o.seeds),
        o.out,
        envs=tasks,
        methods=parse_names(o.methods) or SweepRequest.methods,
        budget=o.budget,
        overrides=given_overrides(o.set_, horizon=o.horizon),
        scale=o.scale,
        order=o.order,
    )
    backend = Backend(o.backend, workers=o.workers, address=o.address)
    # it stops them first
    with raise_on_signals("run the same command again to resume the sweep's runs"):
        code = run_sweep(request, backend, run_options(o))
    raise typer.Exit(code)


@command(app, EVALUATE)
def evaluate(o: Options) -> None:
    """Run a run's trained policy again in the real environment: mean, std, per-episode returns.

    The policy acts deterministically. Without --seed the command replays the evaluation that made
    the policy best (or last), so it prints that evaluation's return exactly, as in metrics.csv.
    """

    from rp1.evaluation import describe, evaluate_run
    from rp1.outputs.video import parse_size

    with exit_on_signals("nothing was written"):
        result = evaluate_run(
            o.run,
            o.policy,
            episodes=o.episodes,
            seed=o.seed,
            video=o.video_file,
            size=parse_size(o.size),
        )
    typer.echo(json.dumps(result.to_json()) if o.json_ else describe(result))


@app.command()
def report(
    root: Path = typer.Argument(..., metavar="ROOT", help="A tree of run directories."),
    out: Path | None = typer.Option(
        None, "--out", metavar="DIR", help="Output directory (default: ROOT/report)."
    ),
) -> None:
    """Tables (Markdown + CSV) and figures (PNG) of the paper from run directories."""
    from rp1.config.sources import runs_root
    from rp1.report.write import report_summary, write_report

    root = runs_root(root)
    out = out or root / "report"
    check_writable_dir(out)
    typer.echo(report_summary(write_report(root, out), out))


@app.command()
def status(
    root: Path = typer.Argument(..., metavar="ROOT", help="A tree of run directories."),
    json_: bool = typer.Option(False, "--json", help="Print one JSON list, an object per run."),
) -> None:
    """Where each run under ROOT stands: samples, state, best return, work so far.

    Read from the runs' files, without taking their locks: real samples collected of the budget,
    finished, running or stopped, the best evaluation return of a trained policy and the work the
    run has taken (h:mm)."""
    from rp1.config.sources import runs_root
    from rp1.sweep.status import print_status, sweep_status

    statuses = sweep_status(runs_root(root))
    if json_:
        typer.echo(json.dumps([s.to_json() for s in statuses]))
    else:
        print_status(statuses)


@app.command()
def export(
    root: Path = typer.Argument(..., metavar="ROOT", help="A tree of run directories."),
    out: Path = typer.Option(
        ..., "--out", metavar="DIR", help="Where the copies go, each at its run's path under ROOT."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace copies already there that differ from their run."
    ),
) -> None:
    """Copy finished runs' result files and policies into a tree of their own, at the runs' paths.

    The files are config.json, metrics.csv, evaluations.csv, environment.json and the kept
    policies, policy/best.msgpack and policy/last.msgpack: what to keep, commit, report on or
    evaluate (rp1 evaluate) without the checkpoints. A copy that differs from its run's file is
    replaced only with --overwrite."""
    from rp1.config.sources import runs_root
    from rp1.rundir.export import export_runs

    runs_root(root)
    check_writable_dir(out)
    done = export_runs(root, out, overwrite)
    for note in done.left_out:
        typer.echo(note)
    typer.echo(
        f"exported {len(done.written)} runs to {out}; {len(done.unchanged)} already there as they "
        f"are, {len(done.left_out)} left out"
    )


@app.command()
def testsets(
    out: Path = typer.Option(
        ...,
        "--out",
        metavar="DIR",
        help="Directory for TASK.npz (src/rp1/dynamics/testsets replaces the shipped ones).",
    ),
    tasks: str | None = typer.Option(
        None, "--tasks", metavar="TASKS", help="Comma-separated paper tasks (default: all four)."
    ),
) -> None:
    """Rebuild the world models' test sets from the shipped kept policies.

    Says whether each file is byte for byte the shipped one (docs/algorithm.md
    §12). Every model-based run on a paper task scores each fit on its task's test set
    (test_model_error, test_model_error_common in metrics.csv); no run trains on it.
    """

    from rp1.config.sources import parse_names
    from rp1.testsets.rebuilt import chosen_tasks, rebuild

    chosen = chosen_tasks(parse_names(tasks))
    check_writable_dir(out)
    for task in chosen:
        typer.echo(rebuild(task, out))


for _info in app.registered_commands:  # every command's help as paragraphs the terminal wraps
    _info.help = _info.help or reflowed(_info.callback.__doc__)
    # `rp1 --help`'s line: the first paragraph whole, wrapped (click's own cuts it to one line)
    _info.short_help = (_info.help or "").split("\n\n")[0]
    _info.cls = PlainCommand

INTERRUPTED = 130  # 128 + SIGINT
CLICK_ERROR: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
"""Click's base of the usage errors it raises (taken through typer, which may bundle its own click)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    An :class:`~rp1.core.errors.Rp1Error` or ``OSError`` becomes one line ``rp1: error: …`` on stderr
    and its exit code (``OSError``: 1); with ``RP1_DEBUG=1`` it propagates with its traceback. A
    usage error that Click finds (an unknown option, a value of the wrong type) is one line and
    exit code 2 too. A Ctrl-C while the command starts up (before a run stops on signals itself,
    :func:`rp1.core.signals.exit_on_signals`) is one line and exit code 130, and so is a signal that
    :func:`rp1.core.signals.raise_on_signals` raises (:class:`~rp1.core.errors.Interrupted`; 143 for SIGTERM).
    A write to stdout that fails (a full disk, a reader gone, stdout closed) is one line and exit
    code 1 (:mod:`rp1.cli.stdout`).
    """
    open_stdout()
    try:
        code = app(args=argv, prog_name="rp1", standalone_mode=False)
        failed = stdout_failure()  # what the command wrote, flushed
        if failed is not None:
            raise failed
    except CLICK_ERROR as usage:  # bad usage, found by click before a command runs
        # `rp1 COMMAND` alone (a click that raises it): the help
        if type(usage).__name__ == "NoArgsIsHelpError":
            usage.show()
            return 0
        if os.environ.get("RP1_DEBUG") == "1":
            raise
        where = (
            f" (see `{usage.ctx.command_path} --help`)"
            if getattr(usage, "ctx", None) is not None
            else ""
        )
        typer.echo(f"rp1: error: {_one_line(usage.format_message())}{where}", err=True)
        return usage.exit_code
    except typer.Abort:  # end of input at a prompt
        return 1
    except Interrupted as stop:  # a signal to a command that cleans up first (raise_on_signals)
        typer.echo(f"rp1: {stop}", err=True)
        return stop.exit_code
    except (Rp1Error, OSError) as err:
        if os.environ.get("RP1_DEBUG") == "1":
            raise
        typer.echo(f"rp1: error: {_one_line(err)}", err=True)
        return err.exit_code if isinstance(err, Rp1Error) else 1
    if code == INTERRUPTED:  # typer's exit on a Ctrl-C before a run installs its handler
        typer.echo("rp1: interrupted (SIGINT)", err=True)
    return code if isinstance(code, int) else 0


def _one_line(err: Exception | str) -> str:
    """The message of ``err`` on one line; an ``OSError`` with its file and cause. A word longer
    than :data:`~rp1.core.errors.QUOTE_LIMIT` characters (a huge value quoted back) is cut there."""
    if isinstance(err, OSError) and not isinstance(err, Rp1Error) and err.strerror:
        text = f"{err.filename}: {err.strerror}" if err.filename else err.strerror
    else:
        text = str(err)
    return " ".join(clipped(word) for word in text.split())


if __name__ == "__main__":
    sys.exit(main())
