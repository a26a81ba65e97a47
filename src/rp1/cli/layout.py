"""How an rp1 command is declared on click, and how its help is laid out.

:func:`command` makes a function a command: its parameters are click's own, its help is its
docstring, and it is called with one object holding a value per parameter. The help is click's
plain layout on every click rp1 allows (``tests/test_help.py`` holds it): a usage line that names
each argument by its name in capitals (``ROOT``, ``[TASK]`` when optional), the command's text, then
``Arguments:`` (each with its help, which click's own arguments lack) and ``Options:``.

Example::

    @command(click.Option(["--budget"], type=int, metavar="SAMPLES", help="Real samples."))
    def train(o: Options) -> None:
        '''Train one run.'''
        print(o.budget)
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import click

from rp1.core.errors import ConfigError

Options = SimpleNamespace
"""What a command function receives: one attribute per parameter, by its name."""


class HelpArgument(click.Argument):
    """A positional argument with a line of help, shown under ``Arguments:``; help and usage name
    it by its name in capitals (``ROOT``; ``[TASK]`` where it may be left out)."""

    def __init__(self, name: str, help: str, **attrs: Any):
        super().__init__([name], **attrs)
        self.help = help

    @property
    def shown(self) -> str:
        """How the help names it: ``ROOT``, or ``ROOT...`` where it takes one or more values."""
        return self.human_readable_name + ("..." if self.nargs == -1 else "")


class OldName(click.Option):
    """The old name of a renamed option, hidden from help: a value given under it goes to the
    option ``new``, with one line ``rp1: warning: …`` on stderr (a ConfigError if both are given)."""

    def __init__(self, flag: str, new: click.Option):
        super().__init__([flag, f"old_{new.name}"], type=new.type, hidden=True)
        self.new = new

    def move(self, values: dict[str, Any]) -> None:
        """Move this name's value in the parsed ``values`` to the new option's."""
        value, new, old = values.pop(str(self.name)), str(self.new.name), self.opts[0]
        if value is None:
            return
        if values[new] is not None:
            raise ConfigError(f"{self.new.opts[0]} and {old}, its old name, are both given")
        click.echo(
            f"rp1: warning: {old} is deprecated and will be removed; use {self.new.opts[0]}",
            err=True,
        )
        values[new] = value


class Command(click.Command):
    """A command whose help has an ``Arguments:`` section, each argument with its help."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The usage line, the text, then ``Arguments:`` (each by its name, with its help) and
        ``Options:`` (click's rows), on every click (8.5 writes arguments its own way)."""
        self.format_usage(ctx, formatter)
        self.format_help_text(ctx, formatter)
        params = [param for param in self.get_params(ctx) if not getattr(param, "hidden", False)]
        arguments = [(p.shown, p.help or "") for p in params if isinstance(p, HelpArgument)]
        options = [
            r for p in params if isinstance(p, click.Option) and (r := p.get_help_record(ctx))
        ]
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class Group(click.Group):
    """``rp1``: its commands listed in the order they were added; a misspelt one answered with
    the closest name."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as unknown:  # click 8.4 and later suggest names themselves
            closest = difflib.get_close_matches(args[0], list(self.commands), n=1)
            if not closest or hasattr(unknown, "possibilities") or args[0][:1] == "-":
                raise
            message = f"{unknown.message.rstrip('.')}. Did you mean {closest[0]!r}?"
            raise click.UsageError(message, ctx) from None


def command(
    *params: click.Parameter, name: str | None = None
) -> Callable[[Callable[[Options], None]], Command]:
    """The decorated ``func(o: Options)`` as the command ``name`` (default ``func.__name__``), with
    ``params`` in that order and ``func``'s docstring as its help."""

    def decorate(func: Callable[[Options], None]) -> Command:
        def run(**values: Any) -> None:
            for old in (p for p in params if isinstance(p, OldName)):
                old.move(values)
            func(Options(**values))

        help = reflowed(func.__doc__)
        short = help.split("\n\n")[0]  # its line in `rp1 --help`, whole (click's own is cut)
        return Command(
            name or func.__name__, callback=run, params=list(params), help=help, short_help=short
        )

    return decorate


def reflowed(doc: str | None) -> str:
    """``doc`` (a docstring) with each paragraph on one line, so that the terminal wraps the help
    where it ends, not where the source's lines did."""
    paragraphs = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)
