"""Plain ``--help``, the same on every typer version rp1 allows: click's layout (a usage line, the
command's text, then ``Arguments:`` and ``Options:`` with one row per parameter), each option with
its metavar (``--out DIR``, ``--set KEY=VALUE``, ``--scale [small|paper]``), a flag bare
(``--resume``), an argument by its metavar (``ROOT``, ``[TASK]`` when optional).

Typer's rich help writes a type name where a metavar goes (``<bool>`` on every flag, ``--help``
included, ``<list[str]>``, ``<path>``, typer 0.29), and typer 0.29's plain help still writes
arguments as ``{ROOT}`` and ``ROOT <path>``: :class:`PlainCommand` writes the usage line and the
arguments itself and takes each option's row from click, which gives a flag no metavar and an
option the metavar it is declared with. ``tests/test_help.py`` holds every command's help.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand


class PlainCommand(TyperCommand):
    """A command whose help names each argument by its metavar, in the usage line and in its
    ``Arguments:`` section."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS]``, then each argument: ``ROOT``, or ``[TASK]`` if it may be left out."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = argument_name(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """``Arguments:`` (each by its metavar, with its help) and ``Options:`` (click's rows)."""
        params = [param for param in self.get_params(ctx) if not getattr(param, "hidden", False)]
        arguments = [
            (argument_name(param), getattr(param, "help", None) or "")
            for param in params
            if param.param_type_name == "argument"
        ]
        options = [
            row
            for param in params
            if param.param_type_name == "option" and (row := param.get_help_record(ctx))
        ]
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def argument_name(param: Any) -> str:
    """An argument's name in help and errors: its metavar, else its name in capitals."""
    return str(param.metavar or param.name.upper())
