"""rp1 as a library and a command: its top-level API, ``rp1 --version``, ``rp1 config``, the
package's metadata, and the friction a new user meets first (paper scale on a CPU, the minimum
budget, the progress bar's throughput and time left)."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib

import pytest

import rp1
from helpers import ROOT, run_cli_output, subprocess_env


def test_top_level_api_resolves():
    """Every name of ``rp1.__all__`` is there; the lazy ones are the library's own objects."""
    from rp1.config import resolve
    from rp1.envs import make
    from rp1.evaluation import load_policy
    from rp1.train import run_training

    assert [name for name in rp1.__all__ if not hasattr(rp1, name)] == []
    assert (rp1.resolve, rp1.make_env, rp1.load_policy, rp1.run_training) == (
        resolve,
        make,
        load_policy,
        run_training,
    )
    assert issubclass(rp1.ConfigError, ValueError) and issubclass(rp1.RunInUse, rp1.ConfigError)
    assert issubclass(rp1.StorageError, OSError) and issubclass(rp1.ConfigError, rp1.Rp1Error)
    assert set(rp1.__all__) <= set(dir(rp1))
    assert rp1.__doc__.startswith("rp1: Ready Policy One")
    with pytest.raises(AttributeError):
        rp1.no_such_name  # noqa: B018


@pytest.mark.slow
def test_import_rp1_is_light():
    """``import rp1`` imports neither the config, the tasks nor the training stack."""
    heavy = (
        "rp1.config",
        "rp1.train",
        "rp1.envs",
        "gymnasium",
        "mujoco",
        "flax",
        "optax",
        "pandas",
    )
    code = f"import sys, rp1; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == "[]", out


def test_version(capsys):
    code, out, _ = run_cli_output(["--version"], capsys)
    assert code == 0 and out.strip() == f"rp1 {rp1.__version__}"


def test_package_metadata():
    """The version has one home (rp1._version, the package's rp1.__version__); the wheel carries py.typed, the licence, a
    short description and the paper's URL."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    meta = project["project"]
    assert "version" in meta["dynamic"] and "version" not in meta
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "rp1._version.__version__"
    }
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["rp1"]
    assert (ROOT / "src" / "rp1" / "py.typed").is_file() and (ROOT / "LICENSE").is_file()
    assert meta["license"] == "MIT" and "MIT License" in (ROOT / "LICENSE").read_text()
    assert "](docs/" not in meta["readme"]["text"] and len(meta["readme"]["text"]) < 3000
    assert meta["urls"]["Paper"] == "https://arxiv.org/abs/2002.02693"
    assert "Typing :: Typed" in meta["classifiers"] and meta["keywords"] and meta["authors"]
    assert "2002.02693" in (ROOT / "CITATION.cff").read_text()


def test_package_data_ships_every_data_file():
    """Every file under ``src/rp1`` that is not Python matches a glob of its package's
    ``[tool.setuptools.package-data]``, so the wheel carries it (the tasks' models, the test sets,
    the report's templates)."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-data"]
    source = ROOT / "src"
    unshipped = []
    for path in sorted((source / "rp1").rglob("*")):
        if path.is_dir() or path.suffix in {".py", ".pyc"} or "__pycache__" in path.parts:
            continue
        package = path.parent
        while not (package / "__init__.py").is_file():
            package = package.parent
        name, inside = ".".join(package.relative_to(source).parts), path.relative_to(package)
        if not any(fnmatch.fnmatch(inside.as_posix(), glob) for glob in globs.get(name, [])):
            unshipped.append(str(path.relative_to(source)))
    assert unshipped == []


def test_config_lists_every_key(capsys):
    """``rp1 config --preset``: one line per key (those --set takes, and the four it does not),
    each with the preset's value, a range where the schema declares one, and a meaning."""
    from rp1.config import FIXED_KEYS, settable_keys

    code, out, err = run_cli_output(["config", "--preset", "hopper-quick"], capsys)
    assert code == 0 and err == []
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert list(rows) == [*FIXED_KEYS, *settable_keys()]
    assert rows["model.hidden"].split()[1] == "200,200"  # the small scale's
    assert "auto | known | learned" in rows["model.reward"]
    assert ">= 1, <= 100" in rows["model.members"] and "ensemble members" in rows["model.members"]
    assert rows["task"].split()[1] == "hopper"


def test_config_with_scale_and_set(capsys):
    code, out, _ = run_cli_output(
        ["config", "--preset", "hopper-rp1", "--scale", "small", "--set", "model.members=3"], capsys
    )
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:]}
    assert code == 0 and rows["model.members"] == "3" and rows["policy.batch_steps"] == "5000"
    code, out, _ = run_cli_output(["config"], capsys)
    rows = {
        line.split()[0]: line.split()[1] for line in out.splitlines()[1:] if len(line.split()) > 1
    }
    assert code == 0 and rows["policy.batch_steps"] == "50000"  # the schema's, paper scale


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["config", "--preset", "nope"], "valid presets"),
        (["config", "--method", "greedy"], "--method goes with --env"),
        (["config", "--set", "model.width=3"], "`rp1 config` lists the valid keys"),
        (
            ["train", "--preset", "hopper-quick", "--set", "model.member=3"],
            "did you mean model.members?",
        ),
    ],
)
def test_bad_keys_point_to_rp1_config(args, fragment, capsys):
    code, _, err = run_cli_output(args, capsys)
    assert code == 2 and len(err) == 1 and fragment in err[0], err


def test_set_help_points_to_rp1_config():
    from rp1.cli.options import SET

    assert "`rp1 config` lists every key" in SET.help


def test_run_training_takes_a_preset_name_as_resolve_resolves_it(tmp_path, monkeypatch):
    """A user's first guess, ``rp1.run_training("halfcheetah-quick", out)``, trains the preset's
    config (the one ``rp1.resolve`` gives)."""
    from rp1 import train

    given = []
    monkeypatch.setattr(train, "drive", lambda agent, cfg, *_, **__: given.append(cfg))
    assert rp1.run_training("halfcheetah-quick", tmp_path) == tmp_path
    assert given == [rp1.resolve("halfcheetah-quick")]
    with pytest.raises(rp1.ConfigError, match="unknown preset 'halfcheetah-quik'"):
        rp1.run_training("halfcheetah-quik", tmp_path)


def test_the_training_api_refuses_arguments_of_other_types_before_any_work(tmp_path):
    """What is neither a config nor a preset's name is a TypeError naming what is taken; nothing
    is written."""
    from helpers import TINY

    cfg = rp1.resolve("halfcheetah-rp1", budget=300, overrides=TINY)
    out = tmp_path / "run"
    takes = r"a run's config is an rp1\.Config .* also takes a preset's name\), not a "
    with pytest.raises(TypeError, match=takes + "dict"):
        rp1.run_training(cfg.to_dict(), out)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=takes + "int"):
        rp1.run_training(3, out)  # type: ignore[arg-type]
    assert not any(tmp_path.iterdir())


def test_minimum_budget_is_named(capsys):
    code, _, err = run_cli_output(["train", "--preset", "hopper-quick", "--budget", "2000"], capsys)
    assert code == 2 and len(err) == 1
    assert "at least one phase" in err[0] and "--budget 3000 or more" in err[0]


def test_paper_scale_on_a_cpu_says_so():
    """A paper-sized model-based run on a machine without a GPU gets one line naming --scale
    small; a small, shrunk or model-free run none."""
    import jax

    from rp1.config import resolve
    from rp1.train import paper_scale_note, paper_sized

    paper = resolve("halfcheetah-rp1")
    assert paper_sized(paper)
    assert not paper_sized(resolve("halfcheetah-rp1", scale="small"))
    assert not paper_sized(resolve("halfcheetah-rp1", overrides={"policy.batch_steps": "300"}))
    assert not paper_sized(resolve("halfcheetah-modelfree"))
    note = paper_scale_note(paper)
    if jax.default_backend() == "cpu":
        assert "\n" not in note and "paper scale" in note and "--scale small" in note
    else:
        assert note == ""


def test_progress_shows_run_throughput_and_time_left(monkeypatch):
    """The bar's rate is real samples per second of the whole run (a resumed run's earlier
    iterations counted by their wall_s), and the time left is the rest of the budget at it."""
    from rp1 import train

    now = [100.0]
    monkeypatch.setattr(train.time, "monotonic", lambda: now[0])
    fresh = train.RunClock(0, [])
    assert fresh.shown(0, 10_000) == ("–", "–")
    now[0] = 110.0
    assert fresh.shown(500, 10_000) == ("50", "3:10")
    resumed = train.RunClock(2000, [{"wall_s": 30.0}, {"wall_s": 10.0}])
    now[0] = 120.0
    assert resumed.shown(3000, 10_000) == ("60", "1:57")
    assert train.clock_time(3725.4) == "1:02:05"
