"""The CLI's options as a user meets them: choices checked before anything runs, the old names of
renamed options still working with one warning, `rp1 config` taking what shapes a config, a
misspelt name answered with the closest, the shell completing commands, options and choices, and
`rp1 presets` in aligned columns that say what each method is."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import one_error, run_cli, run_cli_output, subprocess_env
from rp1.cli.options import BACKENDS, ORDERS, POLICIES, SCALES


def test_the_choices_are_the_librarys():
    """The CLI lists them without importing the library (its help stays fast): the same values."""
    from rp1.config import SCALES as LIBRARY_SCALES
    from rp1.rundir.files import RUN_POLICIES
    from rp1.sweep.executors import BACKENDS as LIBRARY_BACKENDS
    from rp1.sweep.plan import ORDERS as LIBRARY_ORDERS

    assert tuple(LIBRARY_SCALES) == SCALES and POLICIES == RUN_POLICIES
    assert BACKENDS == LIBRARY_BACKENDS and ORDERS == LIBRARY_ORDERS


BAD_CHOICES = {
    "--scale": ["train", "--preset", "hopper-quick", "--scale", "big"],
    "--policy": ["evaluate", "RUN", "--policy", "worst"],
    "--order": ["sweep", "--presets", "hopper-quick", "--out", "OUT", "--order", "random"],
    "--backend": ["sweep", "--presets", "hopper-quick", "--out", "OUT", "--backend", "slurm"],
}


@pytest.mark.parametrize("option", list(BAD_CHOICES))
def test_a_value_not_among_the_choices_is_one_line_exit_2(option, tmp_path, capsys):
    args = [a.replace("OUT", str(tmp_path / "out")) for a in BAD_CHOICES[option]]
    values = {"--scale": SCALES, "--policy": POLICIES, "--order": ORDERS, "--backend": BACKENDS}
    one_error(*run_cli(args, capsys), 2, option, *(repr(v) for v in values[option]))
    assert not (tmp_path / "out").exists()


def config_rows(args: list[str], capsys) -> tuple[dict[str, str], list[str]]:
    """``rp1 config ARGS``: ``{key: value}`` and stderr's lines."""
    code, out, err = run_cli_output(["config", *args], capsys)
    assert code == 0, err
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:] if line.split()}
    return rows, err


def test_config_shows_what_train_would_run_with_its_options(capsys):
    shaping = ["--seed", "3", "--budget", "20000", "--horizon", "50", "--env-workers", "2"]
    for which in (["--preset", "hopper-modelfree"], ["--env", "hopper", "--method", "modelfree"]):
        rows, err = config_rows([*which, "--scale", "small", *shaping], capsys)
        assert err == [] and rows["task"] == "hopper" and rows["scale"] == "small"
        assert (rows["seed"], rows["budget"], rows["horizon"]) == ("3", "20000", "50")
        assert rows["modelfree.workers"] == "2"
    rows, _ = config_rows(["--seed", "3", "--budget", "20000"], capsys)  # the schema's defaults
    assert (rows["seed"], rows["budget"], rows["scale"]) == ("3", "20000", "paper")


def test_config_refuses_what_train_refuses(capsys):
    one_error(
        *run_cli(["config", "--preset", "hopper-quick", "--budget", "0"], capsys), 2, "budget"
    )


RENAMED = {  # old name -> new name, and arguments that reach the option's use
    "--workers": ("--env-workers", ["config", "--preset", "hopper-modelfree", "OPTION", "2"]),
    "--video": ("--video-file", ["evaluate", "RUN", "OPTION", "RUN/v.avi"]),
}


@pytest.mark.parametrize("old", list(RENAMED))
def test_an_old_option_name_still_works_with_one_warning(old, tmp_path, capsys):
    new, args = RENAMED[old]
    args = [a.replace("RUN", str(tmp_path)) for a in args]
    results = [
        run_cli_output([new if a == "OPTION" else a for a in args], capsys),
        run_cli_output([old if a == "OPTION" else a for a in args], capsys),
    ]
    (code, out, err), (old_code, old_out, old_err) = results
    assert (old_code, old_out) == (code, out)  # the same result
    warning = f"rp1: warning: {old} is deprecated and will be removed; use {new}"
    assert old_err == [warning, *err]
    both = [a.replace("OPTION", old) for a in args] + [new, args[-1]]
    one_error(*run_cli(both, capsys), 2, f"{new} and {old}, its old name, are both given")


def test_evaluate_names_its_video_option_as_the_help_does(tmp_path, capsys):
    args = ["evaluate", tmp_path, "--video-file", tmp_path / "v.avi"]
    one_error(*run_cli(args, capsys), 2, "--video-file", "must end in .mp4 or .gif")


MISSPELT = {
    "command": (["trian"], "No such command 'trian'. Did you mean 'train'?"),
    "preset": (["train", "--preset", "hoper-quick"], "did you mean hopper-quick?"),
    "paper task": (["train", "--env", "halfchetah"], "did you mean halfcheetah?"),
    "method": (["train", "--env", "hopper", "--method", "greddy"], "did you mean greedy?"),
    "--set key": (["config", "--set", "model.hiden=3"], "did you mean model.hidden?"),
    "--set key's last part": (["config", "--set", "members=3"], "did you mean model.members?"),
    "sweep preset": (["sweep", "--presets", "hopper-quikc", "--out", "OUT"], "hopper-quick?"),
}


@pytest.mark.parametrize("case", list(MISSPELT))
def test_a_misspelt_name_is_answered_with_the_closest(case, tmp_path, capsys):
    args, fragment = MISSPELT[case]
    args = [a.replace("OUT", str(tmp_path / "out")) for a in args]
    one_error(*run_cli(args, capsys), 2, fragment)


def completion(**variables: str) -> subprocess.CompletedProcess:
    """``rp1`` with click's completion ``variables`` set, in a process of its own: click 8.0 ends
    completion with ``os._exit``."""
    env = subprocess_env(**variables)
    return subprocess.run(
        [sys.executable, "-m", "rp1"], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_shell_completes_commands_options_and_choices():
    """Click's completion, as docs/cli.md tells a shell to ask for it (``_RP1_COMPLETE``)."""
    for words, wanted in (
        ("rp1 tr", "plain,train"),
        ("rp1 train --sc", "plain,--scale"),
        ("rp1 train --scale sm", "plain,small"),
    ):
        cword = str(len(words.split()) - 1)
        done = completion(_RP1_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=cword)
        assert done.returncode == 0 and done.stdout.split() == [wanted], (words, done)
    for shell in ("bash", "zsh", "fish"):  # the script docs/cli.md has each shell load
        done = completion(_RP1_COMPLETE=f"{shell}_source")
        assert done.returncode == 0 and "_RP1_COMPLETE" in done.stdout, (shell, done)


def test_an_unknown_preset_points_to_rp1_presets_without_listing_them(capsys):
    code, err = run_cli(["train", "--preset", "nope"], capsys)
    one_error(code, err, 2, "unknown preset 'nope'", "`rp1 presets`")
    assert "did you mean" not in err[0] and "hopper-quick" not in err[0] and len(err[0]) < 120


def test_presets_are_aligned_and_say_what_each_method_is(capsys):
    from rp1.config import METHOD_TABLE

    code, out, _ = run_cli_output(["presets"], capsys)
    lines = out.splitlines()
    width = max(len(line.split()[0]) for line in lines)
    assert code == 0 and all(line[width : width + 2] == "  " for line in lines)
    assert len({len(line) - len(line[width:].lstrip()) for line in lines}) == 1  # one column
    described = {line.split()[0]: line[width:].strip() for line in lines}
    for method in METHOD_TABLE:
        text = described[f"hopper-{method.name}"]
        assert text.startswith(f"{method.label}: λ ") and "early stopping" in text
    assert described["hopper-rp1"].startswith(
        "RP1: λ adaptive (bandit), reward-variance bonus, PCA early stopping"
    )
    assert described["hopper-greedy"].startswith("Greedy: λ fixed at 0, no bonus, no early")
    assert "beyond the paper" in described["hopper-rp1-fixed05"]
    assert described["hopper-modelfree"].startswith("PPO")


# --- tables wrapped to the terminal ----------------------------------------------------------------


def table_output(args: list[str], columns: str | None, capsys, monkeypatch) -> list[str]:
    """The lines ``rp1 ARGS`` prints with ``COLUMNS`` set to ``columns`` (``None``: unset, as in a
    pipe, where stdout is no terminal)."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    code, out, err = run_cli_output(args, capsys)
    assert code == 0 and err == [], err
    return out.splitlines()


@pytest.mark.parametrize("command", [["config", "--preset", "hopper-quick"], ["presets"]])
@pytest.mark.parametrize("columns", [60, 80, 100, 160])
def test_config_and_presets_wrap_to_the_terminal_width(command, columns, capsys, monkeypatch):
    """Every line fits in ``COLUMNS``; the words are those of the unwrapped table (a line a row,
    into a pipe), and each row still starts a line of its own at the left margin."""
    unwrapped = table_output(command, None, capsys, monkeypatch)
    wrapped = table_output(command, str(columns), capsys, monkeypatch)
    assert max(map(len, wrapped)) <= columns < max(map(len, unwrapped))
    assert " ".join(wrapped).split() == " ".join(unwrapped).split()
    rows = [line.split()[0] for line in wrapped if not line.startswith(" ")]
    assert rows == [line.split()[0] for line in unwrapped]


def test_a_table_wraps_its_text_beside_the_cells_where_it_has_room_else_under_them():
    from rp1.core.terminal import INDENT, NARROWEST, table

    rows = [("key", "meaning"), ("seed", "the seed every random stream is spawned from")]
    assert table(rows, None).splitlines()[1] == f"seed  {rows[1][1]}"
    beside = table(rows, 6 + NARROWEST).splitlines()
    assert beside[1:] == ["seed  the seed every random stream", "      is spawned from"]
    under = table(rows, 5 + NARROWEST).splitlines()
    assert under[:2] == ["key", f"{INDENT}meaning"] and under[2] == "seed"
    assert all(line.startswith(INDENT) for line in under[3:])


# --- values a user gets wrong first -----------------------------------------------------------------

IN_WORDS = {
    "--set of a tuple": (
        ["config", "--set", "model.hidden=abc"],
        "--set model.hidden=abc: expected comma-separated integers, as 64,64",
    ),
    "--set of a tuple of numbers": (
        ["config", "--set", "lam.arms=0,half"],
        "expected comma-separated numbers",
    ),
    "--set of a bool": (["config", "--set", "policy.restore_best=maybe"], "expected true or false"),
    "--seeds reversed": (
        ["sweep", "--presets", "hopper-quick", "--seeds", "0,3-1", "--out", "OUT"],
        "--seeds range 3-1 is reversed; write it low to high, 1-3",
    ),
}


@pytest.mark.parametrize("case", list(IN_WORDS))
def test_a_value_of_the_wrong_form_is_answered_in_words(case, tmp_path, capsys):
    args, message = IN_WORDS[case]
    args = [a.replace("OUT", str(tmp_path / "out")) for a in args]
    one_error(*run_cli(args, capsys), 2, message)
    assert not (tmp_path / "out").exists()
