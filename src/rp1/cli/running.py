"""The commands that configure, train and evaluate runs: ``rp1 config``, ``rp1 train``, ``rp1
sweep``, ``rp1 evaluate``. Each parses its options, calls the library and prints; it imports what
it calls inside its body, so that ``--help`` and a usage error stay fast."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from rp1.cli.layout import HelpArgument, OldName, Options, command
from rp1.cli.options import (
    MANY_RUNS,
    ONE_RUN,
    PATH,
    POLICIES,
    RUN_OPTIONS,
    RUN_SETTINGS,
    SWEEP_SETTINGS,
    WHICH_RUN,
    choice,
    option,
)
from rp1.core.signals import exit_on_signals, raise_on_signals
from rp1.core.storage import check_writable_dir
from rp1.core.terminal import table, terminal_width
from rp1.rundir.lock import RunLock

if TYPE_CHECKING:
    from rp1.outputs.writer import RunOptions


@command(
    *WHICH_RUN,
    *RUN_SETTINGS,
    option("--markdown", "Print a Markdown table (the documentation's configuration page)."),
    name="config",
)
def config_command(o: Options) -> None:
    """List every config key: its value, the values it may take and what it means.

    With --preset (or --env and --method) and the options of rp1 train that shape a config, the
    values are those rp1 train would run with; without a preset or task, the schema's defaults
    (paper scale unless --scale) with those options applied. Every key but preset, task, method and
    scale can be changed with --set key=value on rp1 train and rp1 sweep.
    """
    from rp1.config.reference import Entry, entries, markdown_table
    from rp1.config.sources import shown_config

    cfg = shown_config(o.preset, o.env, o.method, **run_settings(o))
    if o.markdown:
        click.echo(markdown_table(cfg))
    else:
        click.echo(table([Entry._fields, *entries(cfg)], terminal_width()))


def run_settings(o: Options) -> dict:
    """The keyword arguments of :func:`rp1.config.sources.config_of` that ``o``'s seed and run
    settings give."""
    from rp1.config.sources import given_overrides

    overrides = given_overrides(o.set, env_workers=o.env_workers, horizon=o.horizon)
    return {"seed": o.seed, "budget": o.budget, "overrides": overrides, "scale": o.scale}


@command(*WHICH_RUN, *ONE_RUN, *RUN_SETTINGS, *RUN_OPTIONS)
def train(o: Options) -> None:
    """Train one run: RP1 or a baseline, model-based or model-free.

    The preset names the task and method, or --env and --method do. Ctrl-C (SIGINT) or SIGTERM
    stops the run at once (exit code 130 or 143); --resume continues it. A run directory has one
    owner: while another process trains there, this one exits 2 naming it.
    """
    from rp1.config.sources import config_of
    from rp1.rundir.files import CURVE, DEFAULT_ROOT, RunDir, run_dir_under
    from rp1.train import run_training

    cfg = config_of(o.preset, o.env, o.method, **run_settings(o))
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
        # the report's modules (pandas, matplotlib) load once the run has trained, not before
        from rp1.report.run_curve import write_learning_curve
        from rp1.report.run_summary import run_summary

        # drawn by the owner: no other process draws it meanwhile
        curve = None if finished else write_learning_curve(out, cfg.preset)
    if o.quiet:
        return
    if finished:
        click.echo(f"{out} holds this run, finished: nothing to do (--overwrite starts it afresh)")
        curve = out / CURVE if (out / CURVE).is_file() else None
    click.echo(run_summary(out, curve))


def run_options(o: Options) -> RunOptions:
    """The :class:`~rp1.outputs.writer.RunOptions` of ``--video``, ``--tensorboard`` and
    ``--checkpoint-every``."""
    from rp1.outputs.writer import RunOptions

    return RunOptions(
        video=o.video, tensorboard=o.tensorboard, checkpoint_every_s=o.checkpoint_every
    )


@command(*MANY_RUNS, *SWEEP_SETTINGS, *RUN_OPTIONS)
def sweep(o: Options) -> None:
    """Run every (preset, seed) and (task, method, seed) of a sweep, to the end.

    Finished runs are skipped, unfinished ones resumed, the rest started; a run that another
    process owns is left to it ("running elsewhere", exit code 3). Ctrl-C (SIGINT) or SIGTERM
    stops the sweep and its runs at once (exit code 130 or 143); the same command resumes them.
    """
    from rp1.config.sources import given_overrides, parse_seeds, sweep_cells
    from rp1.sweep.driver import run_sweep
    from rp1.sweep.executors import Backend
    from rp1.sweep.plan import SweepRequest

    check_writable_dir(o.out)
    presets, tasks, methods = sweep_cells(o.presets, o.envs, o.methods)
    request = SweepRequest(
        presets,
        parse_seeds(o.seeds),
        o.out,
        envs=tasks,
        methods=methods,
        budget=o.budget,
        overrides=given_overrides(o.set, horizon=o.horizon),
        scale=o.scale,
        order=o.order,
    )
    backend = Backend(o.backend, workers=o.workers, address=o.address)
    # it stops them first
    with raise_on_signals("run the same command again to resume the sweep's runs"):
        code = run_sweep(request, backend, run_options(o))
    raise click.exceptions.Exit(code)


VIDEO_FILE = option(
    "--video-file FILE",
    "Also render the episodes to this .mp4 or .gif file (formerly --video).",
    type=PATH,
)


@command(
    HelpArgument("run", "A run directory.", type=PATH),
    choice(
        "--policy",
        POLICIES,
        "best (the policy of the run's best evaluation) or last.",
        default=POLICIES[0],
    ),
    option("--episodes N", "Episodes (default: as many as the run's evaluations had).", type=int),
    option(
        "--seed SEED",
        "Reset episode k with seed SEED + k (default: replay the policy's recorded evaluation).",
        type=int,
    ),
    VIDEO_FILE,
    OldName("--video", VIDEO_FILE),
    option("--size WIDTHxHEIGHT", "The video's size in pixels.", default="320x240"),
    option("--json", "Print one JSON object instead of text."),
)
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
    click.echo(json.dumps(result.to_json()) if o.json else describe(result))
