"""The ``rp1`` command line.

Every error a user can act on ends as one line ``rp1: error: …`` on stderr (``RP1_DEBUG=1`` shows
its traceback instead) and its exit code: 2 for bad input (:class:`rp1.core.errors.ConfigError`, or
a usage error click finds), 1 for a file operation the machine failed
(:class:`rp1.core.errors.StorageError`, any ``OSError``, a write to stdout: :mod:`rp1.core.stdout`).
A Ctrl-C while a command starts up (before a run stops on signals itself,
:func:`rp1.core.signals.exit_on_signals`) is one line and exit code 130, as is a signal that
:func:`rp1.core.signals.raise_on_signals` raises (:class:`~rp1.core.errors.Interrupted`; 143 for
SIGTERM).

A command parses its options, calls the library and prints; it imports what it calls inside its
body, not at start-up, so that ``rp1 --help``, ``rp1 --version`` and a usage error stay fast: the
config, tasks and training stack load Gymnasium, MuJoCo, Flax and Optax, the report matplotlib,
pandas and SciPy, and run directories Flax (its msgpack).
"""

from __future__ import annotations

import os
import sys

import click

from rp1._version import __version__
from rp1.cli import reading, running
from rp1.cli.layout import Group
from rp1.core.errors import Interrupted, Rp1Error, one_line
from rp1.core.stdout import open_stdout, stdout_failure


def _start(ctx: click.Context) -> None:
    """Before any command: import the methods of one's own that ``RP1_METHODS`` names
    (:data:`rp1.config.methods.METHODS_VARIABLE`), so that a name that does not import is one line
    and exit code 2 whatever the command; ``rp1`` alone prints the help."""
    if ctx.invoked_subcommand is None:  # before importing the config: the help stays fast
        click.echo(ctx.get_help())
        return
    from rp1.config.methods import model_based_methods

    model_based_methods()


app = Group(
    "rp1",
    help="Ready Policy One: model-based RL with active data acquisition.",
    commands=[
        reading.envs,
        reading.presets,
        running.config_command,
        running.train,
        running.sweep,
        running.evaluate,
        reading.report,
        reading.status,
        reading.export,
        reading.testsets,
    ],
    invoke_without_command=True,
    subcommand_metavar="COMMAND [ARGS]...",
    callback=click.pass_context(_start),
)
click.version_option(
    __version__, "--version", message="rp1 %(version)s", help="Print rp1's version and exit."
)(app)

INTERRUPTED = 130  # 128 + SIGINT


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script: the command ``argv`` (default: the process's
    arguments) run, its errors ended as the module says; returns the exit code."""
    open_stdout()
    debug = os.environ.get("RP1_DEBUG") == "1"
    try:
        code = app.main(args=argv, prog_name="rp1", standalone_mode=False)
        failed = stdout_failure()  # what the command wrote, flushed
        if failed is not None:
            raise failed
    except click.ClickException as usage:  # bad usage, found by click before a command runs
        if debug:
            raise
        ctx = getattr(usage, "ctx", None)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        click.echo(f"rp1: error: {one_line(usage.format_message())}{where}", err=True)
        return usage.exit_code
    except click.Abort as abort:  # Ctrl-C before a run installs its handler, or end of input
        if not isinstance(abort.__context__, KeyboardInterrupt):
            return 1
        click.echo("rp1: interrupted (SIGINT)", err=True)
        return INTERRUPTED
    except Interrupted as stop:  # a signal to a command that cleans up first (raise_on_signals)
        click.echo(f"rp1: {stop}", err=True)
        return stop.exit_code
    except (Rp1Error, OSError) as err:
        if debug:
            raise
        click.echo(f"rp1: error: {one_line(err)}", err=True)
        return err.exit_code if isinstance(err, Rp1Error) else 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
