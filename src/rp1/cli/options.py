"""The options that commands share, declared once in groups: ``rp1 train`` and ``rp1 config``
take the run settings, ``rp1 train`` and ``rp1 sweep`` the logging switches."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def option(row: str, help: str, **attrs: Any) -> Option:
    """The option whose help row starts ``row``: its names, then the metavar of the value it
    takes (``"-p --preset PRESET"``), or its names alone for a switch (``"--resume"``). ``attrs``
    are click's (``type=int``, ``default=…``); a default given is shown in the help."""
    names = [word for word in row.split() if word.startswith("-")]
    if len(names) == len(row.split()):
        return Option(names, is_flag=True, help=help, **attrs)
    shown = attrs.get("default") is not None
    return Option(names, metavar=row.split()[-1], help=help, show_default=shown, **attrs)


def out_dir(help: str, required: bool = False) -> Option:
    """``--out DIR``: the directory a command writes to."""
    return option("--out DIR", help, type=PATH, required=required)


def choice(name: str, values: Sequence[str], help: str, default: str | None = None) -> Option:
    """The option ``name`` that takes one of ``values`` (its metavar lists them)."""
    row = f"{name} [{'|'.join(values)}]"
    return option(row, help, type=click.Choice(values), default=default)


WHICH_RUN = (
    option("-p --preset PRESET", "A preset name (see `rp1 presets`)."),
    option(
        "--env TASK",
        "Instead of --preset, any task: a paper task, a Gymnasium id or package.module:attribute (see `rp1 envs`).",
    ),
    option(
        "--method METHOD",
        "With --env: a method, rp1 by default (`rp1 presets` shows every method as TASK-METHOD; RP1_METHODS adds one's own, see docs/extending.md).",
    ),
    option("--seed SEED", "Random seed (default: the preset's, 0).", type=int),
)
"""Which run: a preset, or a task and a method; and its seed."""

SET = option(
    "--set KEY=VALUE",
    "Override a config value (repeatable); `rp1 config` lists every key, its value, range and meaning.",
    multiple=True,
)
SWEEP_SETTINGS = (
    option(
        "--horizon STEPS",
        "Steps per episode (default: the task's; a Gymnasium id's time limit).",
        type=int,
    ),
    choice(
        "--scale",
        SCALES,
        "The sizes of networks and batches (default: the preset's; paper for a task without one); applied before --set.",
    ),
    option("--budget SAMPLES", "Real-sample budget.", type=int),
    SET,
)
"""What a sweep configures its runs with (``rp1 sweep``)."""
ENV_WORKERS = option(
    "--env-workers N",
    "Model-free: processes that step the environments (modelfree.workers; formerly --workers).",
    type=int,
)
RUN_SETTINGS = (ENV_WORKERS, OldName("--workers", ENV_WORKERS), *SWEEP_SETTINGS)
"""What a run is configured with beyond its preset or task and method: every option that
changes its config.json (``rp1 train``, ``rp1 config``); a sweep's ``--workers`` is runs at a
time, and ``--set modelfree.workers=N`` sets its runs' environment workers."""

RUN_OPTIONS = (
    option("--video", "Render an evaluation episode of every new best policy to RUN/videos/."),
    option("--tensorboard", "Write a TensorBoard log to RUN/tensorboard/."),
    option(
        "--checkpoint-every SECONDS",
        "Save the checkpoint after the first iteration that ends SECONDS after the last save (and after the last iteration) instead of after every one: a kill then loses up to that much work. For paper-scale runs on a GPU, where writing the checkpoint is a large share of an iteration.",
        type=float,
        default=0.0,
    ),
)
"""How a run logs besides its metrics and policy files, and how often it checkpoints
(rp1.outputs.writer.RunOptions)."""

ONE_RUN = (
    out_dir("Run directory (default: runs/PRESET/seedK, runs/TASK-METHOD/seedK with --env)."),
    option("--resume", "Continue the run in --out from its checkpoint."),
    option("--overwrite", "Delete the run in --out and start afresh."),
    option("--quiet", "No progress bar."),
)
"""``rp1 train``: where the run goes, and how."""

MANY_RUNS = (
    option("--presets PRESETS", "Comma-separated preset names."),
    option(
        "--envs TASKS",
        "Comma-separated tasks (paper tasks, Gymnasium ids, package.module:attribute), crossed with --methods.",
    ),
    option(
        "--methods METHODS",
        "With --envs: comma-separated methods (default rp1; `rp1 presets` shows them).",
    ),
    option("--seeds SEEDS", "Seeds, e.g. 0-9 or 0,3,5.", default="0-9"),
    choice(
        "--order",
        ORDERS,
        "cells (every seed of a preset before the next) or seeds (seed k of every preset before seed k + 1, so a sweep stopped early leaves every cell the same seeds).",
        default=ORDERS[0],
    ),
    out_dir(
        "Sweep directory: DIR/PRESET/seedK/ (DIR/TASK-METHOD/seedK/ for --envs).", required=True
    ),
    choice("--backend", BACKENDS, "local (a process per run) or ray.", default=BACKENDS[0]),
    option("--workers N", "Processes at a time (one run each).", type=int),
    option(
        "--address ADDRESS", "Ray cluster address (ray backend; default: a local Ray instance)."
    ),
)
"""``rp1 sweep``: which runs, where, and on what."""
