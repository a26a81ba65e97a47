"""The ``rp1`` command line.

Every user error (:class:`rp1.errors.ConfigError`) ends as one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys

import typer

from rp1.errors import ConfigError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Ready Policy One: model-based RL with active data acquisition.",
)


@app.callback()
def _root() -> None:
    """Ready Policy One: model-based RL with active data acquisition."""


@app.command()
def envs(name: str = typer.Argument(None, help="Show only this task.")) -> None:
    """List the tasks with their observation / action sizes and horizons."""
    from rp1 import envs as registry

    selected = [registry.check_name(name)] if name else registry.names()
    typer.echo(f"{'task':<12} {'obs':>4} {'act':>4} {'horizon':>8} {'dt':>6}")
    for task_name in selected:
        env, task = registry.make(task_name)
        env.close()
        typer.echo(
            f"{task.name:<12} {task.obs_dim:>4} {task.act_dim:>4} {task.horizon:>8} {task.dt:>6.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script. Usage errors exit with code 2 and one line on stderr."""
    try:
        app(args=argv, prog_name="rp1")
    except ConfigError as err:
        typer.echo(f"rp1: error: {err}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
