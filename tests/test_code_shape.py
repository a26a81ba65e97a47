"""Rules for rp1's own code: no function takes more than 8 parameters (settings that
travel together are one object), and every command's help reads as sentences."""

from __future__ import annotations

import ast
from pathlib import Path

import rp1
from rp1.cli import app

MAX_PARAMETERS = 8


def test_no_function_takes_more_than_eight_parameters():
    crowded = []
    for path in sorted(Path(rp1.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = [
                    a.arg
                    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                    if a.arg not in ("self", "cls")
                ]
                names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
                if len(names) > MAX_PARAMETERS:
                    crowded.append(f"{path.name}:{node.lineno} {node.name} ({len(names)})")
    assert crowded == []


def test_every_commands_help_has_its_paragraphs_on_single_lines():
    """The terminal wraps a paragraph where it ends; a line break from the source would break a
    sentence in the middle (``rp1 --help`` once did)."""
    for command in app.commands.values():
        paragraphs = command.help.split("\n\n")
        assert all("\n" not in paragraph for paragraph in paragraphs), command.help
        # the command list's line
        assert paragraphs[0].endswith(".") and len(paragraphs[0]) <= 100, paragraphs[0]
