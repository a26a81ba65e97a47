"""The commands that list what rp1 offers and read what runs wrote: ``rp1 envs``, ``rp1
presets``, ``rp1 report``, ``rp1 status``, ``rp1 export``, ``rp1 testsets``. Each parses its
options, calls the library and prints; it imports what it calls inside its body, so that
``--help`` and a usage error stay fast."""

from __future__ import annotations

import json

import click

from rp1.cli.layout import HelpArgument, Options, command
from rp1.cli.options import PATH, option, out_dir
from rp1.core.storage import check_writable_dir
from rp1.core.terminal import table, terminal_width

ROOT = HelpArgument("root", "A tree of run directories.", type=PATH)


@command(
    HelpArgument(
        "task",
        "Show only this task (a paper task, a Gymnasium id or package.module:attribute).",
        required=False,
    )
)
def envs(o: Options) -> None:
    """List the tasks: sizes, horizon, and whether reward and termination are given or learned.

    Without TASK, the paper's four tasks and how to run any other task; with TASK, that task.
    """
    from rp1 import envs as registry
    from rp1.config.sources import tasks_importable_from_cwd

    if o.task:
        tasks_importable_from_cwd()
    click.echo(registry.describe([o.task] if o.task else None))


@command()
def presets(o: Options) -> None:
    """List the presets (the paper's experiments and the quick ones), one line each.

    Methods of one's own that RP1_METHODS names (docs/extending.md) have their presets here too.
    """
    from rp1.config import preset_descriptions

    click.echo(table(list(preset_descriptions().items()), terminal_width()))


@command(
    HelpArgument(
        "root",
        "Trees of run directories, one or more: with several, one report of all their runs, each named by its tree's folder and its path there.",
        type=PATH,
        nargs=-1,
        required=True,
    ),
    out_dir("Output directory (default: ROOT/report; needed with several ROOTs)."),
)
def report(o: Options) -> None:
    """Tables (Markdown + CSV) and figures (PNG) of the paper from run directories."""
    from rp1.config.sources import report_out, runs_root
    from rp1.report.write import report_summary, write_report

    roots = [runs_root(root) for root in o.root]
    out = report_out(roots, o.out)
    check_writable_dir(out)
    click.echo(report_summary(write_report(roots, out), out))


@command(ROOT, option("--json", "Print one JSON list, an object per run."))
def status(o: Options) -> None:
    """Where each run under ROOT stands: samples, state, best return, work so far.

    Read from the runs' files, without taking their locks: real samples collected of the budget,
    finished, running or stopped, the best evaluation return of a trained policy and the work the
    run has taken (h:mm)."""
    from rp1.config.sources import runs_root
    from rp1.sweep.status import print_status, sweep_status

    statuses = sweep_status(runs_root(o.root))
    if o.json:
        click.echo(json.dumps([s.to_json() for s in statuses]))
    else:
        print_status(statuses)


@command(
    ROOT,
    out_dir("Where the copies go, each at its run's path under ROOT.", required=True),
    option("--overwrite", "Replace copies already there that differ from their run."),
)
def export(o: Options) -> None:
    """Copy finished runs' result files and policies into a tree of their own, at the runs' paths.

    The files are config.json, metrics.csv, evaluations.csv, environment.json and the kept
    policies, policy/best.msgpack and policy/last.msgpack: what to keep, commit, report on or
    evaluate (rp1 evaluate) without the checkpoints. A copy that differs from its run's file is
    replaced only with --overwrite."""
    from rp1.config.sources import runs_root
    from rp1.rundir.export import export_runs

    runs_root(o.root)
    check_writable_dir(o.out)
    click.echo(export_runs(o.root, o.out, o.overwrite).describe(o.out))


@command(
    out_dir(
        "Directory for TASK.npz (src/rp1/dynamics/testsets replaces the shipped ones).",
        required=True,
    ),
    option("--tasks TASKS", "Comma-separated paper tasks (default: all four)."),
)
def testsets(o: Options) -> None:
    """Rebuild the world models' test sets from the shipped kept policies.

    Says whether each file is byte for byte the shipped one (docs/algorithm.md
    §12). Every model-based run on a paper task scores each fit on its task's test set
    (test_model_error, test_model_error_common in metrics.csv); no run trains on it.
    """
    from rp1.config.sources import parse_names
    from rp1.testsets.rebuilt import chosen_tasks, rebuild

    chosen = chosen_tasks(parse_names(o.tasks))
    check_writable_dir(o.out)
    for task in chosen:
        click.echo(rebuild(task, o.out))
