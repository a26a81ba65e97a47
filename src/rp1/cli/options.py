"""Command-line options declared once, in groups that commands share (``rp1 train`` and ``rp1
config`` both take the run settings, ``rp1 train`` and ``rp1 sweep`` the logging switches), and :func:`command`, which gives a
command all the options of its groups while its function takes one argument: an object with an
attribute per option.

Example::

    @command(app, RUN_SETTINGS, RUN_OPTIONS)
    def train(o: Options) -> None:
        '''Train one run.'''
        print(o.budget, o.video)
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import typer

from rp1.core.errors import ConfigError

Options = SimpleNamespace
"""What a command function receives: one attribute per option of its groups."""


class Option(NamedTuple):
    """One option: the attribute it becomes, its type and its ``typer.Option`` (or ``Argument``);
    ``alias_of``: the attribute of the option this one is the deprecated old name of (hidden from
    help; a value given under it goes to that option, with one line on stderr)."""

    name: str
    type: Any
    info: Any
    alias_of: str | None = None


def choices(name: str, values: Sequence[str]) -> Any:
    """An enumeration of ``values`` (strings) named ``name``: as an option's type, click lists
    the values in the help and refuses any other (the command receives the string)."""
    return enum.Enum(name, [(value, value) for value in values], type=str)


def listed(values: Sequence[str]) -> str:
    """The metavar of a choice among ``values``: ``[paper|small]``."""
    return f"[{'|'.join(values)}]"


SCALES = ("paper", "small")
"""``--scale``'s values: rp1.config.SCALES (not imported, so that the help stays fast; a test
holds them equal), as are the other choices below to theirs."""
POLICIES = ("best", "last")
"""``rp1 evaluate --policy``: rp1.rundir.files.RUN_POLICIES."""
BACKENDS = ("local", "ray")
"""``rp1 sweep --backend``: rp1.sweep.executors.BACKENDS."""
ORDERS = ("cells", "seeds")
"""``rp1 sweep --order``: rp1.sweep.plan.ORDERS."""


def reflowed(doc: str | None) -> str | None:
    """``doc`` (a docstring) with each paragraph on one line, so that the terminal wraps the help
    where it ends, not where the source's lines did."""
    if doc is None:
        return None
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


def command(
    app: typer.Typer, *groups: Sequence[Option], name: str | None = None
) -> Callable[[Callable[[Options], None]], Callable[[Options], None]]:
    """Register the decorated ``func(o: Options)`` as the command ``name`` (default
    ``func.__name__``) of ``app``, with every option of ``groups`` (in order) and ``func``'s
    docstring as its help."""
    options = [option for group in groups for option in group]

    def decorate(func: Callable[[Options], None]) -> Callable[[Options], None]:
        def run(**values: Any) -> None:
            func(given(options, values))

        run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # what typer reads the options from
            [
                inspect.Parameter(
                    o.name, inspect.Parameter.KEYWORD_ONLY, default=o.info, annotation=o.type
                )
                for o in options
            ]
        )
        run.__name__ = func.__name__
        app.command(name, help=reflowed(func.__doc__))(run)
        return func

    return decorate


def given(options: Sequence[Option], values: dict[str, Any]) -> Options:
    """The :data:`Options` of a command's parsed ``values``: a choice as its string, a value given
    under a deprecated name moved to its option (one line ``rp1: warning: …`` on stderr; a
    ConfigError if both names are given)."""
    values = {k: v.value if isinstance(v, enum.Enum) else v for k, v in values.items()}
    flag = {o.name: o.info.param_decls[0] for o in options if getattr(o.info, "param_decls", None)}
    for old, new in ((o, o.alias_of) for o in options if o.alias_of is not None):
        value = values.pop(old.name)
        if value is None:
            continue
        if values[new] is not None:
            raise ConfigError(f"{flag[new]} and {flag[old.name]}, its old name, are both given")
        typer.echo(
            f"rp1: warning: {flag[old.name]} is deprecated and will be removed; use {flag[new]}",
            err=True,
        )
        values[new] = value
    return Options(**values)


WHICH_RUN = (
    Option(
        "preset",
        str | None,
        typer.Option(
            None, "--preset", "-p", metavar="PRESET", help="A preset name (see `rp1 presets`)."
        ),
    ),
    Option(
        "env",
        str | None,
        typer.Option(
            None,
            "--env",
            metavar="TASK",
            help="Instead of --preset, any task: a paper task, a Gymnasium id or "
            "package.module:attribute (see `rp1 envs`).",
        ),
    ),
    Option(
        "method",
        str | None,
        typer.Option(
            None,
            "--method",
            metavar="METHOD",
            help="With --env: a method, rp1 by default (`rp1 presets` shows every method as "
            "TASK-METHOD; RP1_METHODS adds one's own, see docs/extending.md).",
        ),
    ),
    Option(
        "seed",
        int | None,
        typer.Option(
            None, "--seed", metavar="SEED", help="Random seed (default: the preset's, 0)."
        ),
    ),
)
"""Which run: a preset, or a task and a method; and its seed."""

RUN_SETTINGS = (
    Option(
        "env_workers",
        int | None,
        typer.Option(
            None,
            "--env-workers",
            metavar="N",
            help="Model-free: processes that step the environments (modelfree.workers; formerly "
            "--workers).",
        ),
    ),
    Option(
        "workers",
        int | None,
        typer.Option(None, "--workers", hidden=True),
        alias_of="env_workers",
    ),
    Option(
        "horizon",
        int | None,
        typer.Option(
            None,
            "--horizon",
            metavar="STEPS",
            help="Steps per episode (default: the task's; a Gymnasium id's time limit).",
        ),
    ),
    Option(
        "scale",
        choices("Scale", SCALES) | None,
        typer.Option(
            None,
            "--scale",
            metavar=listed(SCALES),
            help="The sizes of networks and batches (default: the preset's; paper for a task "
            "without one); applied before --set.",
        ),
    ),
    Option(
        "budget",
        int | None,
        typer.Option(None, "--budget", metavar="SAMPLES", help="Real-sample budget."),
    ),
    Option(
        "set_",
        list[str] | None,
        typer.Option(
            None,
            "--set",
            metavar="KEY=VALUE",
            help="Override a config value (repeatable); `rp1 config` lists every key, its value, "
            "range and meaning.",
        ),
    ),
)
"""What a run is configured with beyond its preset or task and method: every option that
changes its config.json (``rp1 train``, ``rp1 config``)."""

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
        "out",
        Path | None,
        typer.Option(
            None,
            "--out",
            metavar="DIR",
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
    Option("quiet", bool, typer.Option(False, "--quiet", help="No progress bar.")),
)
"""``rp1 train``: where the run goes, and how."""

MANY_RUNS = (
    Option(
        "presets",
        str | None,
        typer.Option(None, "--presets", metavar="PRESETS", help="Comma-separated preset names."),
    ),
    Option(
        "envs",
        str | None,
        typer.Option(
            None,
            "--envs",
            metavar="TASKS",
            help="Comma-separated tasks (paper tasks, Gymnasium ids, package.module:attribute), "
            "crossed with --methods.",
        ),
    ),
    Option(
        "methods",
        str | None,
        typer.Option(
            None,
            "--methods",
            metavar="METHODS",
            help="With --envs: comma-separated methods (default rp1; `rp1 presets` shows them).",
        ),
    ),
    Option(
        "seeds",
        str,
        typer.Option("0-9", "--seeds", metavar="SEEDS", help="Seeds, e.g. 0-9 or 0,3,5."),
    ),
    Option(
        "order",
        choices("Order", ORDERS),
        typer.Option(
            ORDERS[0],
            "--order",
            metavar=listed(ORDERS),
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
            metavar="DIR",
            help="Sweep directory: DIR/PRESET/seedK/ (DIR/TASK-METHOD/seedK/ for --envs).",
        ),
    ),
    Option(
        "backend",
        choices("Backend", BACKENDS),
        typer.Option(
            BACKENDS[0],
            "--backend",
            metavar=listed(BACKENDS),
            help="local (a process per run) or ray.",
        ),
    ),
    Option(
        "workers",
        int | None,
        typer.Option(None, "--workers", metavar="N", help="Processes at a time (one run each)."),
    ),
    Option(
        "address",
        str | None,
        typer.Option(
            None,
            "--address",
            metavar="ADDRESS",
            help="Ray cluster address (ray backend; default: a local Ray instance).",
        ),
    ),
)
"""``rp1 sweep``: which runs, where, and on what."""

SWEEP_SETTINGS = tuple(o for o in RUN_SETTINGS if o.name not in ("env_workers", "workers"))
"""What a sweep configures its runs with: :data:`RUN_SETTINGS` but the environment workers (its
own ``--workers`` is runs at a time; ``--set modelfree.workers=N`` sets theirs)."""

EVALUATE = (
    Option("run", Path, typer.Argument(..., metavar="RUN", help="A run directory.")),
    Option(
        "policy",
        choices("Policy", POLICIES),
        typer.Option(
            POLICIES[0],
            "--policy",
            metavar=listed(POLICIES),
            help="best (the policy of the run's best evaluation) or last.",
        ),
    ),
    Option(
        "episodes",
        int | None,
        typer.Option(
            None,
            "--episodes",
            metavar="N",
            help="Episodes (default: as many as the run's evaluations had).",
        ),
    ),
    Option(
        "seed",
        int | None,
        typer.Option(
            None,
            "--seed",
            metavar="SEED",
            help="Reset episode k with seed SEED + k (default: replay the policy's recorded "
            "evaluation).",
        ),
    ),
    Option(
        "video_file",
        Path | None,
        typer.Option(
            None,
            "--video-file",
            metavar="FILE",
            help="Also render the episodes to this .mp4 or .gif file (formerly --video).",
        ),
    ),
    Option(
        "video",
        Path | None,
        typer.Option(None, "--video", hidden=True),
        alias_of="video_file",
    ),
    Option(
        "size",
        str,
        typer.Option(
            "320x240", "--size", metavar="WIDTHxHEIGHT", help="The video's size in pixels."
        ),
    ),
    Option(
        "json_", bool, typer.Option(False, "--json", help="Print one JSON object instead of text.")
    ),
)
"""``rp1 evaluate``: which policy of which run, how many episodes, and a video of them."""

CONFIG = (
    Option(
        "markdown",
        bool,
        typer.Option(
            False,
            "--markdown",
            help="Print a Markdown table (the documentation's configuration page).",
        ),
    ),
)
"""``rp1 config``: how it prints the keys."""
