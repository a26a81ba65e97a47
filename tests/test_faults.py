"""Smaller faults: extension points that raise, exit or are missing are one line naming
them (exit code 2); a failed write to stdout is one line (exit code 1); an error quotes at most
~200 characters of a value; an unusable compilation cache is one warning line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import ROOT, one_error, run_cli, subprocess_env
from rp1.config.methods import METHODS_VARIABLE

MODULES = {  # a module of one's own, and what its import does
    "raises": ("raise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
    "exits": ("import sys\nsys.exit(5)\n", "it called sys.exit(5)"),
    "is missing": (None, "ModuleNotFoundError"),
}
POINTS = {  # an extension point: the rp1 arguments (and environment) that name module:ATTRIBUTE
    "RP1_METHODS": lambda ref: (["presets"], {METHODS_VARIABLE: ref}),
    "--set bonus=": lambda ref: (
        ["train", "--preset", "halfcheetah-rp1", "--budget", "600", "--set", f"bonus={ref}"],
        {},
    ),
    "--env": lambda ref: (["train", "--env", ref, "--out", "{tmp}/run"], {}),
}


@pytest.mark.parametrize("module", list(MODULES))
@pytest.mark.parametrize("point", list(POINTS))
def test_an_extension_that_raises_exits_or_is_missing_is_one_line_naming_it(
    point, module, tmp_path, monkeypatch, capsys
):
    source, cause = MODULES[module]
    name = f"own_{point.strip('-=').replace(' ', '_').lower()}_{module.replace(' ', '_')}"
    if source is not None:
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    args, env = POINTS[point](f"{name}:THING")
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    code, err = run_cli([a.replace("{tmp}", str(tmp_path)) for a in args], capsys)
    one_error(code, err, 2, f"{name}:THING", cause)
    assert not (tmp_path / "run").exists()


def test_a_100_kb_value_is_quoted_in_at_most_200_characters(capsys):
    for value in ("x" * 99_999, "x " * 50_000):  # parse_sets strips the trailing space
        code, err = run_cli(
            ["train", "--preset", "halfcheetah-quick", "--set", f"model.members={value}"], capsys
        )
        one_error(code, err, 2, "model.members", ",999 characters)")
        assert len(err[0]) < 400, len(err[0])
    code, err = run_cli(["train", "--preset", "y" * 100_000], capsys)
    one_error(code, err, 2, "unknown preset", "characters) valid presets")
    assert len(err[0]) < 4000, len(err[0])  # the valid presets follow, each named


def rp1_shell(command: str) -> subprocess.CompletedProcess:
    """``python -m rp1 …`` with the shell's redirections of ``command`` (``rp1`` in it)."""
    return subprocess.run(
        ["bash", "-c", command.replace("rp1 ", f"{sys.executable} -m rp1 ", 1)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("redirection", "cause"),
    [(">/dev/full", "No space left on device"), (">&-", "it is closed")],
)
def test_a_failed_write_to_stdout_is_one_line_and_exit_code_1(redirection, cause):
    done = rp1_shell(f"rp1 presets {redirection}")
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [f"rp1: error: cannot write to stdout: {cause}"]


def test_an_unwritable_compilation_cache_is_one_warning_line_and_jax_is_not_pointed_there():
    """``/proc`` exists and takes no file, even from root: JAX would warn at every compilation
    it tried to cache there."""
    script = (
        "import jax\n"
        "from rp1.core.compilation import enable_compilation_cache\n"
        "print(enable_compilation_cache(), jax.config.jax_compilation_cache_dir)\n"
        "jax.jit(lambda x: x + 1)(1.0).block_until_ready()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=subprocess_env(RP1_JAX_CACHE="/proc"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.split() == ["None", "None"], done
    (line,) = done.stderr.splitlines()
    assert line.startswith("rp1: warning: compilation cache off: cannot write in /proc: "), line
