"""The options that commands share, declared once in groups: ``rp1 train`` and ``rp1 config``
take the run settings, ``rp1 train`` and ``rp1 sweep`` the logging switches."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click
from click import Option

from rp1.cli.layout import OldName

PATH = click.Path(path_type=Path)

SCALES = ("paper", "small")
"""``--scale``'s values: rp1.config.SCALES (not imported, so that the help stays fast; a test
holds them equal), as are the other choices below to theirs."""
POLICIES = ("best", "last")
"""``rp1 evaluate --policy``: rp1.rundir.files.RUN_POLICIES."""
BACKENDS = ("local", "ray")
"""``rp1 sweep --backend``: rp1.sweep.executors.BACKENDS."""
ORDERS = ("cells", "seeds")
"""``rp1 sweep --order``: rp1.sweep.plan.ORDERS."""


def choice(flag: str, values: Sequence[str], help: str, default: str | None = None) -> Option:
    """The option ``flag`` that takes one of ``values`` (its metavar lists them)."""
    metavar = f"[{'|'.join(values)}]"
    shown = default is not None
    return Option(
        [flag],
        type=click.Choice(values),
        metavar=metavar,
        default=default,
        show_default=shown,
        help=help,
    )


def flag(name: str, help: str) -> Option:
    """The switch ``name`` (``--video``): on where given."""
    return Option([name], is_flag=True, help=help)


WHICH_RUN = (
    Option(["--preset", "-p"], metavar="PRESET", help="A preset name (see `rp1 presets`)."),
    Option(
        ["--env"],
        metavar="TASK",
        help="Instead of --preset, any task: a paper task, a Gymnasium id or package.module:attribute (see `rp1 envs`).",
    ),
    Option(
        ["--method"],
        metavar="METHOD",
        help="With --env: a method, rp1 by default (`rp1 presets` shows every method as TASK-METHOD; RP1_METHODS adds one's own, see docs/extending.md).",
    ),
    Option(["--seed"], type=int, metavar="SEED", help="Random seed (default: the preset's, 0)."),
)
"""Which run: a preset, or a task and a method; and its seed."""

HORIZON = Option(
    ["--horizon"],
    type=int,
    metavar="STEPS",
    help="Steps per episode (default: the task's; a Gymnasium id's time limit).",
)
SCALE = choice(
    "--scale",
    SCALES,
    "The sizes of networks and batches (default: the preset's; paper for a task without one); applied before --set.",
)
BUDGET = Option(["--budget"], type=int, metavar="SAMPLES", help="Real-sample budget.")
SET = Option(
    ["--set", "sets"],
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value (repeatable); `rp1 config` lists every key, its value, range and meaning.",
)
SWEEP_SETTINGS = (HORIZON, SCALE, BUDGET, SET)
"""What a sweep configures its runs with (``rp1 sweep``)."""
ENV_WORKERS = Option(
    ["--env-workers"],
    type=int,
    metavar="N",
    help="Model-free: processes that step the environments (modelfree.workers; formerly --workers).",
)
RUN_SETTINGS = (ENV_WORKERS, OldName("--workers", ENV_WORKERS), *SWEEP_SETTINGS)
"""What a run is configured with beyond its preset or task and method: every option that
changes its config.json (``rp1 train``, ``rp1 config``); a sweep's ``--workers`` is runs at a
time, and ``--set modelfree.workers=N`` sets its runs' environment workers."""

RUN_OPTIONS = (
    flag("--video", "Render an evaluation episode of every new best policy to RUN/videos/."),
    flag("--tensorboard", "Write a TensorBoard log to RUN/tensorboard/."),
    Option(
        ["--checkpoint-every"],
        type=float,
        default=0.0,
        show_default=True,
        metavar="SECONDS",
        help="Save the checkpoint after the first iteration that ends SECONDS after the last save (and after the last iteration) instead of after every one: a kill then loses up to that much work. For paper-scale runs on a GPU, where writing the checkpoint is a large share of an iteration.",
    ),
)
"""How a run logs besides its metrics and policy files, and how often it checkpoints
(rp1.outputs.writer.RunOptions)."""

ONE_RUN = (
    Option(
        ["--out"],
        type=PATH,
        metavar="DIR",
        help="Run directory (default: runs/PRESET/seedK, runs/TASK-METHOD/seedK with --env).",
    ),
    flag("--resume", "Continue the run in --out from its checkpoint."),
    flag("--overwrite", "Delete the run in --out and start afresh."),
    flag("--quiet", "No progress bar."),
)
"""``rp1 train``: where the run goes, and how."""

MANY_RUNS = (
    Option(["--presets"], metavar="PRESETS", help="Comma-separated preset names."),
    Option(
        ["--envs"],
        metavar="TASKS",
        help="Comma-separated tasks (paper tasks, Gymnasium ids, package.module:attribute), crossed with --methods.",
    ),
    Option(
        ["--methods"],
        metavar="METHODS",
        help="With --envs: comma-separated methods (default rp1; `rp1 presets` shows them).",
    ),
    Option(
        ["--seeds"],
        default="0-9",
        show_default=True,
        metavar="SEEDS",
        help="Seeds, e.g. 0-9 or 0,3,5.",
    ),
    choice(
        "--order",
        ORDERS,
        "cells (every seed of a preset before the next) or seeds (seed k of every preset before seed k + 1, so a sweep stopped early leaves every cell the same seeds).",
        default=ORDERS[0],
    ),
    Option(
        ["--out"],
        type=PATH,
        required=True,
        metavar="DIR",
        help="Sweep directory: DIR/PRESET/seedK/ (DIR/TASK-METHOD/seedK/ for --envs).",
    ),
    choice("--backend", BACKENDS, "local (a process per run) or ray.", default=BACKENDS[0]),
    Option(["--workers"], type=int, metavar="N", help="Processes at a time (one run each)."),
    Option(
        ["--address"],
        metavar="ADDRESS",
        help="Ray cluster address (ray backend; default: a local Ray instance).",
    ),
)
"""``rp1 sweep``: which runs, where, and on what."""
