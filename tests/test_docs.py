"""The documentation is true: README fits on a page and starts with its two commands, every
Python example of README.md and docs/*.md runs, README's quickstart commands run, the
configuration page is the schema's, the CLI reference names every option, and nothing cites a
specification outside the repository.

Examples run as a reader would run them, top to bottom in a fresh directory per page, but at tiny
sizes: the ``small`` scale is shrunk (:data:`TINY_SMALL`) and ``<task>-quick``'s budget with it,
so a page's runs take seconds. A block whose first line is ``# path/to/file.py`` is written to that
file (a module the page's later blocks import). A block meant only to be read is marked
``<!-- not run: why -->`` on the line before it.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

from helpers import ROOT, run_cli_output

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
NOT_RUN = re.compile(r"<!-- not run: .+ -->")

TINY_SMALL = {
    "model.hidden": (16, 16),
    "model.members": 3,
    "model.batch_size": 64,
    "model.max_epochs": 10,
    "policy.hidden": (16, 16),
    "policy.batch_steps": 300,
    "policy.max_updates": 13,
    "collect.phase_cap": 1000,
    "collect.alpha": 0.0,
}
"""What ``--scale small`` sets while the examples run: the tests' tiny networks and batches, and
phases of 1,000 samples without early stopping, so a 3,000-sample run has three iterations."""
TINY_QUICK_BUDGET = 2000
"""``<task>-quick``'s budget while the examples run."""

QUICKSTART_SECTIONS = ("Quickstart", "Use a trained run")
"""README's sections whose shell commands the tests run (each takes seconds at tiny sizes)."""
FIRST_COMMAND = "rp1 train --preset halfcheetah-first --out runs/halfcheetah-first"
"""README's first command after its install (benchmarks/RESULTS.md, "README's first command, again
(issue 76)"); ``<task>-first`` runs to the quick presets' budget."""
QUICK_RUN = "runs/halfcheetah-first"
"""The run README's first command makes, which later examples use."""
SHIPPED_RUN = "trained/halfcheetah-first-seed0"
"""The trained run a clone holds (tests/test_trained_run.py), which later examples use too."""


class Block(NamedTuple):
    """A fenced code block: its language, its text, the line it starts on, the ``## `` section
    it is in, and whether it is marked not to run."""

    language: str
    code: str
    line: int
    section: str
    shown_only: bool


def blocks(path: Path) -> list[Block]:
    """Every fenced code block of the Markdown file ``path``."""
    found = []
    section, fence, previous = "", None, ""
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if fence is None:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.startswith("```"):
                fence = (line[3:].strip(), number, bool(NOT_RUN.fullmatch(previous.strip())), [])
            if line.strip():
                previous = line
        elif line.startswith("```"):
            language, start, shown_only, body = fence
            found.append(Block(language, "\n".join(body) + "\n", start, section, shown_only))
            fence, previous = None, line
        else:
            fence[3].append(line)
    return found


def first_commands() -> list[str]:
    """README's two commands, the first code block's two lines."""
    first = blocks(README)[0]
    assert first.language == "bash", first
    return first.code.strip().splitlines()


@pytest.fixture
def tiny(monkeypatch):
    """The small scale and the quick presets' budget at :data:`TINY_SMALL` sizes."""
    from rp1.config import presets

    monkeypatch.setitem(presets.SCALES, "small", TINY_SMALL)
    monkeypatch.setattr(presets, "QUICK_BUDGET", TINY_QUICK_BUDGET)


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory) -> tuple[Path, str]:
    """README's first command's run (:data:`FIRST_COMMAND`) at tiny sizes and
    :data:`TINY_QUICK_BUDGET`, made once: its directory and what it printed."""
    from rp1.cli import main
    from rp1.config import presets

    command = first_commands()[0].rsplit("&& .venv/bin/", 1)[1]
    assert command == FIRST_COMMAND, command
    cwd = tmp_path_factory.mktemp("quickstart")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(presets.SCALES, "small", TINY_SMALL)
        patch.setattr(presets, "QUICK_BUDGET", TINY_QUICK_BUDGET)
        patch.chdir(cwd)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(command.split()[1:]) == 0
    return cwd / QUICK_RUN, out.getvalue()


def test_readme_fits_on_a_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; it must fit in 150"


def test_readme_starts_with_the_two_commands():
    """The first block, before any section: install and the quick run, then CI's test step."""
    first = blocks(README)[0]
    assert first.section == "" and first.line <= 5
    quick, tests = first_commands()
    assert quick.startswith("python3 -m venv .venv && .venv/bin/pip install -q -e . && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    step = [line for line in ci if line.startswith(("python3 -m venv", ".venv/bin/pip install"))]
    pytest_line = next(line for line in ci if line.startswith(".venv/bin/python -m pytest"))
    assert tests == " && ".join([*step[:2], pytest_line]), (tests, step, pytest_line)


def test_readmes_output_block_is_what_the_shipped_run_of_the_first_command_printed():
    """README's quickstart shows the first lines of ``rp1 train``'s summary for the run a clone
    ships (the first command's seed 0): what its files and its preset's reference give today."""
    from rp1.report.run_summary import run_summary

    shown = [b for b in blocks(README) if b.section == "Quickstart" and b.language == "text"]
    assert len(shown) == 1, shown
    lines = shown[0].code.strip().splitlines()
    assert lines == run_summary(ROOT / SHIPPED_RUN, curve=None).splitlines()[: len(lines)]


@pytest.mark.slow
def test_readme_quickstart_commands_run(quick_run, tiny, tmp_path, monkeypatch, capsys):
    """README's first command made its run (the session's ``quick_run``), and every ``rp1``
    command of its quickstart sections runs on it or on the shipped run, exit code 0: the video
    only where this machine can render and has the video extra."""
    run_dir, printed = quick_run
    assert "best evaluation return" in printed and (run_dir / "learning_curve.png").is_file()
    shutil.copytree(run_dir, tmp_path / QUICK_RUN)
    shutil.copytree(ROOT / SHIPPED_RUN, tmp_path / SHIPPED_RUN)
    monkeypatch.chdir(tmp_path)
    commands = [
        line.split("#", 1)[0].strip()
        for block in blocks(README)
        if block.language == "bash" and block.section in QUICKSTART_SECTIONS
        if not block.shown_only
        for line in block.code.splitlines()
        if line.startswith("rp1 ")
    ]
    assert len(commands) >= 4, commands
    for command in commands:
        if "--video" in command and not can_render():
            continue
        code, out, err = run_cli_output(command.split()[1:], capsys)
        assert code == 0, (command, out, err)
        assert out.strip(), command


def test_readme_shell_blocks_run_or_are_marked():
    """Every shell block of README runs in the tests (the first commands, the quickstart
    sections') or says why not."""
    shell = [block for block in blocks(README) if block.language == "bash"]
    assert [
        block.line
        for block in shell[1:]
        if block.section not in QUICKSTART_SECTIONS and not block.shown_only
    ] == []


def can_render() -> bool:
    """Whether this machine renders videos: the video extra and OpenGL for MuJoCo."""
    from rp1.core.errors import RenderError
    from rp1.outputs.video import PACKAGES, check_rendering

    try:
        for module, _ in PACKAGES.values():
            __import__(module)
        check_rendering("halfcheetah", 100, (64, 48))
    except (ImportError, RenderError):
        return False
    return True


def python_pages() -> list[Path]:
    return [page for page in PAGES if any(b.language == "python" for b in blocks(page))]


@pytest.mark.slow
@pytest.mark.parametrize("page", python_pages(), ids=lambda page: page.name)
def test_python_examples_run(page, quick_run, tiny, tmp_path, monkeypatch, capsys):
    """Every Python block of ``page`` runs, top to bottom in one namespace, in a fresh directory
    that holds the quickstart's run and the shipped one; ``# file.py`` blocks are written as
    modules there. The tasks a page registers (``rp1.register_task``) go with it."""
    from rp1.envs import lookup

    monkeypatch.setattr(lookup, "_REGISTERED", {})
    shutil.copytree(quick_run[0], tmp_path / QUICK_RUN)
    shutil.copytree(ROOT / SHIPPED_RUN, tmp_path / SHIPPED_RUN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {"__name__": f"docs_example_{page.stem}"}
    ran = 0
    for block in blocks(page):
        if block.language != "python" or block.shown_only:
            continue
        first = block.code.splitlines()[0]
        if re.fullmatch(r"# [\w/]+\.py", first):
            module = tmp_path / first[2:]
            module.parent.mkdir(parents=True, exist_ok=True)
            for package in module.relative_to(tmp_path).parents:
                if package != Path(".") and not (tmp_path / package / "__init__.py").exists():
                    (tmp_path / package / "__init__.py").write_text("")
            module.write_text(block.code, encoding="utf-8")
            continue
        try:
            exec(compile(block.code, f"{page.name}:{block.line}", "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"{page.name}, the block at line {block.line}: {err!r}") from err
        ran += 1
    assert ran, f"{page.name} has Python blocks but none ran"
    capsys.readouterr()


def test_every_page_is_in_the_site():
    """Every page of docs/ is in mkdocs.yml's navigation (the reports' own pages excepted)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert [page.name for page in DOCS.glob("*.md") if f": {page.name}" not in nav] == []


def test_configuration_page_is_the_schema():
    """docs/configuration.md's generated blocks are what the schema gives now."""
    from rp1.config.reference import regenerated

    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert page == regenerated(page), (
        "docs/configuration.md is out of date: run python -m rp1.config.reference docs/configuration.md"
    )


def test_every_key_has_a_meaning():
    from rp1.config.reference import entries

    assert [entry.key for entry in entries() if not entry.meaning] == []


def test_cli_reference_names_every_command_and_option():
    """docs/cli.md has a section per command and names every option of each."""
    from rp1.cli import app

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = []
    for name, sub in app.commands.items():
        section = page.split(f"## rp1 {name}\n", 1)
        if len(section) == 1:
            missing.append(f"rp1 {name}")
            continue
        text = section[1].split("\n## ", 1)[0]
        missing += [
            f"rp1 {name} {option}"
            for param in sub.params
            for option in param.opts
            if option.startswith("--") and option != "--help" and option not in text
        ]
    assert missing == []
    assert "--version" in page


def test_nothing_cites_a_specification_outside_the_repository():
    """The algorithm page is the specification: no file cites a SPEC.md, its sections, or the
    paper and specification files outside the repository."""
    tracked = [
        *PAGES,
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "tests").glob("*.py"),
        *(ROOT / "benchmarks").glob("*"),
        ROOT / "pyproject.toml",
        ROOT / "EXTENDING.md",
    ]
    pattern = re.compile(r"SPEC\.md|SPEC §|shared/(docs|paper)|\bSPEC\b(?!\w)")
    cited = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in tracked
        if path.is_file() and path != Path(__file__)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line) and "planted27:SPEC" not in line
    ]
    assert cited == []


def test_algorithm_page_has_the_cited_sections():
    """Every "algorithm.md §n" cited in the code and the tests is a section of the page."""
    page = (DOCS / "algorithm.md").read_text(encoding="utf-8")
    sections = {int(n) for n in re.findall(r"^## (\d+)\. ", page, re.MULTILINE)}
    cited = set()
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "tests").glob("*.py")]:
        for group in re.findall(
            r"algorithm\.md\s+((?:§\d+(?:–§\d+)?(?:,\s*)?)+)", path.read_text()
        ):
            cited |= {int(n) for n in re.findall(r"\d+", group)}
    assert cited and cited <= sections, sorted(cited - sections)
