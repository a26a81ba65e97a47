"""Command-line options declared once, in groups that commands share (``rp1 train`` and ``rp1
sweep`` both take the run settings and the logging switches), and :func:`command`, which gives a
command all the options of its groups while its function takes one argument: an object with an
attribute per option.

Example::

    @command(app, RUN_SETTINGS, RUN_OPTIONS)
    def train(o: Options) -> None:
        '''Train one run.'''
        print(o.budget, o.video)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import typer

Options = SimpleNamespace
"""What a command function receives: one attribute per option of its groups."""


class Option(NamedTuple):
    """One option: the attribute it becomes, its type and its ``typer.Option`` (or ``Argument``)."""

    name: str
    type: Any
    info: Any


def reflowed(doc: str | None) -> str | None:
    """``doc`` (a docstring) with each paragraph on one line, so that the terminal wraps the help
    where it ends, not where the source's lines did."""
    if doc is None:
        return None
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


def command(
    app: typer.Typer, *groups: Sequence[Option]
) -> Callable[[Callable[[Options], None]], Callable[[Options], None]]:
    """Register the decorated ``func(o: Options)`` as the command ``func.__name__`` of ``app``,
    with every option of ``groups`` (in order) and ``func``'s docstring as its help."""
    options = [option for group in groups for option in group]

    def decorate(func: Callable[[Options], None]) -> Callable[[Options], None]:
        def run(**values: Any) -> None:
            func(Options(**values))

        run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # what typer reads the options from
            [
                inspect.Parameter(
                    o.name, inspect.Parameter.KEYWORD_ONLY, default=o.info, annotation=o.type
                )
                for o in options
            ]
        )
        run.__name__ = func.__name__
        app.command(help=reflowed(func.__doc__))(run)
        return func

    return decorate


RUN_SETTINGS = (
    Option(
        "horizon",
        int | None,
        typer.Option(
            None,
            "--horizon",
            help="Steps per episode (default: the task's; a Gymnasium id's time limit).",
        ),
    ),
    Option(
        "scale",
        str | None,
        typer.Option(
            None,
            "--scale",
            help="small or paper (default: the preset's, paper with --env); applied before --set.",
        ),
    ),
    Option("budget", int | None, typer.Option(None, "--budget", help="Real-sample budget.")),
    Option(
        "set_",
        list[str] | None,
        typer.Option(
            None,
            "--set",
            help="Override a config value: key=value; `rp1 config` lists every key, its value, range and meaning.",
        ),
    ),
)
"""What every run is configured with, beyond its preset or task and method."""

RUN_OPTIONS = (
    Option(
        "video",
        bool,
        typer.Option(
            False,
            "--video",
            help="Render an evaluation episode of every new best policy to RUN/videos/.",
        ),
    ),
    Option(
        "tensorboard",
        bool,
        typer.Option(False, "--tensorboard", help="Write a TensorBoard log to RUN/tensorboard/."),
    ),
    Option(
        "checkpoint_every",
        float,
        typer.Option(
            0.0,
            "--checkpoint-every",
            metavar="SECONDS",
            help="Save the checkpoint after the first iteration that ends SECONDS after the last save (and after the last iteration) instead of after every one: a kill then loses up to that much work. For paper-scale runs on a GPU, where writing the checkpoint is a large share of an iteration.",
        ),
    ),
)
"""How a run logs besides its metrics and policy files, and how often it checkpoints
(rp1.outputs.writer.RunOptions)."""

ONE_RUN = (
    Option(
        "preset",
        str | None,
        typer.Option(None, "--preset", "-p", help="A preset name (see `rp1 presets`)."),
    ),
    Option(
        "env",
        str | None,
        typer.Option(
            None,
            "--env",
            help="Instead of --preset, any task: a Gymnasium id or package.module:attribute (see `rp1 envs`).",
        ),
    ),
    Option(
        "method",
        str | None,
        typer.Option(
            None,
            "--method",
            help="With --env: a method, rp1 by default (`rp1 presets` shows every method as TASK-METHOD; RP1_METHODS adds one's own, see docs/extending.md).",
        ),
    ),
    Option(
        "seed",
        int | None,
        typer.Option(None, "--seed", help="Random seed (default: the preset's, 0)."),
    ),
    Option(
        "out",
        Path | None,
        typer.Option(
            None,
            "--out",
            help="Run directory (default: runs/PRESET/seedK, runs/TASK-METHOD/seedK with --env).",
        ),
    ),
    Option(
        "resume",
        bool,
        typer.Option(False, "--resume", help="Continue the run in --out from its checkpoint."),
    ),
    Option(
        "overwrite",
        bool,
        typer.Option(False, "--overwrite", help="Delete the run in --out and start afresh."),
    ),
    Option(
        "workers",
        int | None,
        typer.Option(None, "--workers", help="Env worker processes (model-free)."),
    ),
    Option("quiet", bool, typer.Option(False, "--quiet", help="No progress bar.")),
)
"""``rp1 train``: which run, where, and how."""

MANY_RUNS = (
    Option(
        "presets", str | None, typer.Option(None, "--presets", help="Comma-separated preset names.")
    ),
    Option(
        "envs",
        str | None,
        typer.Option(
            None,
            "--envs",
            help="Comma-separated tasks (Gymnasium ids, package.module:attribute), crossed with --methods.",
        ),
    ),
    Option(
        "methods",
        str | None,
        typer.Option(
            None,
            "--methods",
            help="With --envs: comma-separated methods (default rp1; `rp1 presets` shows them).",
        ),
    ),
    Option("seeds", str, typer.Option("0-9", "--seeds", help="Seeds, e.g. 0-9 or 0,3,5.")),
    Option(
        "order",
        str,
        typer.Option(
            "cells",
            "--order",
            help="cells (every seed of a preset before the next) or seeds (seed k of every "
            "preset before seed k + 1, so a sweep stopped early leaves every cell the same seeds).",
        ),
    ),
    Option(
        "out",
        Path,
        typer.Option(
            ...,
            "--out",
            help="Sweep directory: OUT/<preset>/seed<k>/ (OUT/<task>-<method>/seed<k>/ for --envs).",
        ),
    ),
    Option(
        "backend", str, typer.Option("local", "--backend", help="local (a process per run) or ray.")
    ),
    Option("workers", int | None, typer.Option(None, "--workers", help="Runs at a time.")),
    Option(
        "address",
        str | None,
        typer.Option(
            None,
            "--address",
            help="Ray cluster address (ray backend; default: a local Ray instance).",
        ),
    ),
)
"""``rp1 sweep``: which runs, where, and on what."""
