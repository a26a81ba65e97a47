"""Every command's ``--help`` (and ``rp1 --help``), at 100 columns: what a rendering change (a new
click writing arguments its own way, a type name on every flag) would break fails here.

Two checks:

- invariants, on every click rp1 allows (the lowest-versions tier too): no type name
  where a metavar goes (``<bool>``, ``<str>``, ``<path>``, ``<list[str]>``), no ``{ROOT}``
  placeholder, every option that takes a value shows its metavar (a choice the values it takes),
  a flag none, and an argument by its metavar;
- the text itself, against ``tests/help/COMMAND.txt``, exactly, where click is a version
  ``tests/help/VERSIONS`` names (others may wrap or word a line differently).

After a deliberate change of the help, write the files again and review the diff::

    RP1_UPDATE_HELP=1 PYTHONPATH=src python -m pytest -q -n 0 tests/test_help.py

VERSIONS then names the versions installed; run it again with other versions (the lowest the
project allows, say) to add them where they render the same text.
"""

from __future__ import annotations

import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from helpers import run_cli_output
from rp1.cli import app
from rp1.cli.options import BACKENDS, ORDERS, POLICIES, SCALES

HELP = Path(__file__).parent / "help"
VERSIONS = HELP / "VERSIONS"
COLUMNS = "100"
UPDATE = os.environ.get("RP1_UPDATE_HELP") == "1"

TYPE_NAME = re.compile(r"<(bool|str|int|float|path|file|list\[|[a-z]+ range)")
"""Type names, as typer once wrote them where a metavar goes."""
PLACEHOLDER = re.compile(r"\{[A-Za-z_]+\}")
METAVAR = re.compile(r"[A-Z][A-Za-z0-9_=]*|\[[a-z0-9-]+(\|[a-z0-9-]+)+\]")
"""A metavar: a name in capitals (DIR, KEY=VALUE, WIDTHxHEIGHT) or a choice ([small|paper])."""

CHOICES = {"--scale": SCALES, "--policy": POLICIES, "--order": ORDERS, "--backend": BACKENDS}
"""The options that take one of a few values, and those values."""
COMMANDS = app.commands


def installed() -> str:
    """The click this process renders help with, as VERSIONS records it."""
    return f"click {version('click')}"


def help_text(args: list[str], capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", COLUMNS)
    code, out, err = run_cli_output([*args, "--help"], capsys)
    assert code == 0 and err == [], (code, err)
    return out


def option_rows(text: str) -> dict[str, str]:
    """``{first option name: its name column}`` of the help's Options section: ``--out DIR``."""
    section = text.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    rows = [line.strip().split("  ")[0] for line in section.splitlines() if line.startswith("  -")]
    return {row.split(", ")[-1].split(" ")[0]: row for row in rows}


def check_invariants(name: str, text: str) -> None:
    """The invariants of the module's docstring, on the help ``text`` of command ``name``."""
    assert not TYPE_NAME.search(text), TYPE_NAME.search(text)
    assert not PLACEHOLDER.search(text), PLACEHOLDER.search(text)
    rows = option_rows(text)
    assert rows.pop("--help") == "--help"
    params = COMMANDS[name].params if name != "rp1" else app.params
    usage = text.splitlines()[0]
    for param in params:
        if getattr(param, "hidden", False):
            assert not any(o in rows for o in param.opts), param.opts  # a deprecated name
            continue
        if param.param_type_name == "argument":
            assert METAVAR.fullmatch(param.human_readable_name), param.human_readable_name
            shown = param.human_readable_name + ("..." if param.nargs == -1 else "")  # one or more
            assert usage.endswith(shown if param.required else f"[{shown}]"), usage
            assert f"\n  {shown}  " in text.split("\nArguments:", 1)[1], text
            continue
        names = ", ".join(sorted(param.opts, key=len))  # -p, --preset
        row = rows.pop(max(param.opts, key=len))
        if param.is_flag:
            assert row == names, (row, names)
            continue
        metavar = row.removeprefix(names + " ")
        assert row.startswith(names + " ") and METAVAR.fullmatch(metavar), row
        if names in CHOICES:
            assert metavar == f"[{'|'.join(CHOICES[names])}]", row
    assert rows == {}, rows  # every row is one of the command's options


NAMES = ["rp1", *COMMANDS]


@pytest.mark.parametrize("name", NAMES)
def test_help_shows_metavars_choices_and_flags(name, capsys, monkeypatch):
    check_invariants(name, help_text([] if name == "rp1" else [name], capsys, monkeypatch))


@pytest.mark.parametrize("name", NAMES)
def test_help_is_the_committed_text(name, capsys, monkeypatch):
    text = help_text([] if name == "rp1" else [name], capsys, monkeypatch)
    snapshot = HELP / f"{name}.txt"
    if UPDATE:
        record(snapshot, text)
        return
    if installed() not in recorded():
        pytest.skip(f"help recorded with {' or '.join(recorded())}, not {installed()}")
    assert text == snapshot.read_text(encoding="utf-8"), (
        f"{name} --help differs from {snapshot}; if meant, RP1_UPDATE_HELP=1 writes it again"
    )


def test_root_help_shows_each_commands_summary_whole(capsys, monkeypatch):
    """``rp1 --help`` lists each command with the first paragraph of its help, wrapped, not cut
    to one line (click's own short help ends in ``...`` where it does not fit)."""
    listed = " ".join(help_text([], capsys, monkeypatch).split("\nCommands:\n", 1)[1].split())
    for name, command in COMMANDS.items():
        summary = " ".join(command.help.split("\n\n")[0].split())
        assert f"{name} {summary}" in listed, name
    assert "..." not in listed


def recorded() -> list[str]:
    """The click versions that VERSIONS says render every snapshot as it is."""
    return VERSIONS.read_text(encoding="utf-8").splitlines() if VERSIONS.is_file() else []


def record(snapshot: Path, text: str) -> None:
    """Keep ``text`` in ``snapshot``: the installed versions join those VERSIONS names if the
    text is the one there, and replace them if it is not."""
    same = snapshot.is_file() and snapshot.read_text(encoding="utf-8") == text
    versions = [v for v in recorded() if same and v != installed()] + [installed()]
    HELP.mkdir(exist_ok=True)
    snapshot.write_text(text, encoding="utf-8")
    VERSIONS.write_text("".join(f"{v}\n" for v in sorted(versions)), encoding="utf-8")


def test_every_command_has_its_snapshot():
    assert sorted(p.stem for p in HELP.glob("*.txt")) == sorted(NAMES)
