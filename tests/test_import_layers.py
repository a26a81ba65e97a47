"""docs/development.md "Layout": every module of rp1 imports only from its own layer and the layers below, so no
import runs upward and none runs in a cycle across layers. An import names the module it really
reaches: ``from rp1 import envs`` is ``rp1.envs``, ``from rp1 import train`` is ``rp1.train``, and
``import rp1`` or ``from rp1 import resolve`` is the package root, which sits above every layer: only
the root itself (its lazy API, ``rp1.__getattr__``) may import from the layers above it."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rp1
from helpers import subprocess_env

# docs/development.md's Layout, top to bottom: a module's layer is that of the longest prefix (a module
# or a package) it falls under.
LAYERS = (
    ("rp1.cli", "rp1.__main__"),
    ("rp1.sweep",),
    ("rp1.report",),
    ("rp1.train", "rp1.evaluation", "rp1.testsets"),
    ("rp1.agents",),
    ("rp1.outputs",),
    ("rp1.rundir",),
    ("rp1.imagination",),
    ("rp1.policy", "rp1.realenv", "rp1.dynamics", "rp1.acquisition"),
    ("rp1.config",),
    ("rp1.envs",),
    ("rp1.core", "rp1._version"),
)
ROOT = "rp1"
SOURCE = Path(rp1.__file__).parent


def layer(module: str) -> int | None:
    """Index of ``module``'s layer, 0 at the top and -1 for the package root (``rp1``), which is
    above them all; None for a module of no layer."""
    if module == ROOT:
        return -1
    matches = [
        (len(prefix), depth)
        for depth, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    return max(matches)[1] if matches else None


def modules() -> dict[str, Path]:
    out = {}
    for path in SOURCE.rglob("*.py"):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def rp1_imports(source: str, module: str, known: set[str]) -> set[str]:
    """Every rp1 module that ``source`` (the text of ``module``) imports, at module level or inside
    a function, as the module it reaches: ``from P import N`` is the module ``P.N`` where that is
    one of ``known``, else ``P``; relative imports are resolved from ``module``'s package."""
    package = module if module in _packages(known) else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == ROOT)
    return found


def _packages(known: set[str]) -> set[str]:
    """The modules of ``known`` that are packages (another module lies under them)."""
    return {m.rsplit(".", 1)[0] for m in known if "." in m}


def upward(module: str, targets: set[str]) -> list[str]:
    """The imports of ``targets`` by ``module`` that climb to a higher layer (or to the root)."""
    return [
        f"{module} imports {target}"
        for target in sorted(targets)
        if target != module and layer(target) < layer(module)
    ]


def test_every_module_has_a_layer():
    assert [m for m in modules() if m != ROOT and layer(m) is None] == []


def test_imports_run_only_downward():
    known = set(modules())
    climbs = [
        climb
        for module, path in sorted(modules().items())
        if module != ROOT
        for climb in upward(module, rp1_imports(path.read_text(encoding="utf-8"), module, known))
    ]
    assert climbs == []


def test_an_import_is_judged_by_the_module_it_reaches():
    """``from rp1 import X`` reaches ``rp1.X`` when that is a module, else the root; both, and a
    relative import, climb where their module is higher."""
    known = set(modules())
    source = """
import rp1
from rp1 import envs, train, resolve
from rp1.config import Config
from rp1.imagination import policy_training
from . import seeding
from ..report import write
"""
    reached = rp1_imports(source, "rp1.core.nn", known)
    assert reached == {
        "rp1",
        "rp1.envs",
        "rp1.train",
        "rp1.config",
        "rp1.imagination.policy_training",
        "rp1.core.seeding",
        "rp1.report.write",
    }
    assert upward("rp1.core.nn", reached) == [
        f"rp1.core.nn imports {target}"
        for target in (
            "rp1",
            "rp1.config",
            "rp1.envs",
            "rp1.imagination.policy_training",
            "rp1.report.write",
            "rp1.train",
        )
    ]
    assert upward("rp1.envs.task", {"rp1.core.errors", "rp1.envs.spec"}) == []


def test_readme_layout_names_every_top_level_entry():
    """docs/development.md's "Layout" shows the architecture: it names every package and module at the top of
    ``src/rp1/``, and every one of them has a layer."""
    page = (SOURCE.parents[1] / "docs" / "development.md").read_text(encoding="utf-8")
    block = page.split("## Layout", 1)[1].split("```", 2)[1]
    named = {
        word.rstrip("/").removesuffix(".py")
        for line in block.splitlines()
        for word in line[:29].split()
    }
    entries = {
        p.stem for p in SOURCE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    entries -= {"__init__", "__main__"}
    assert sorted(entries - named) == []
    assert all(layer(f"rp1.{e}") is not None for e in entries)


# --- config at the bottom: reading runs needs no JAX ---------------------------------------------

NO_JAX = """
import atexit, os, sys
def check():
    loaded = sorted(m for m in ("jax", "jaxlib", "flax", "optax") if m in sys.modules)
    print("loaded:", ",".join(loaded) or "none", flush=True)
atexit.register(check)
from rp1.cli import main
code = main(sys.argv[1:])
check()
os._exit(code)
"""


def _script_output(script: str, *args: str) -> str:
    """The stdout of ``script`` (with ``args`` as its ``sys.argv[1:]``) run by this interpreter in
    another process, which must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _rp1_without_jax(*args: str) -> str:
    """``rp1 ARGS``'s stdout, ending with the line of JAX's modules it loaded (:data:`NO_JAX`)."""
    return _script_output(NO_JAX, *args)


@pytest.mark.parametrize("args", [[], ["--help"], ["--version"]])
def test_rp1_help_and_version_load_no_config(args):
    """``rp1`` alone, ``rp1 --help`` and ``rp1 --version`` print without the config (which loads
    Gymnasium and MuJoCo): the commands import what they call in their bodies."""
    script = (
        "import sys\n"
        "from rp1.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(sorted(m for m in ('rp1.config', 'gymnasium', 'jax') if m in sys.modules), code)\n"
    )
    assert _script_output(script, *args).splitlines()[-1] == "[] 0"


@pytest.mark.slow
def test_the_config_imports_no_jax():
    """``rp1.config`` (schema, defaults, methods, presets, validation, migrations) sits below the
    algorithm: importing it, and reading a stored config, loads none of JAX, flax or optax."""
    script = (
        "import sys, json\n"
        "from rp1.config import Config, resolve, validate\n"
        "from rp1.config.migrations import migrate\n"
        "from rp1.report import runs_table\n"
        "from rp1.sweep import status\n"
        "validate(resolve('hopper-rp1'))\n"
        "print(sorted(m for m in ('jax', 'flax', 'optax') if m in sys.modules))\n"
    )
    assert _script_output(script).strip() == "[]"


@pytest.mark.slow
def test_rp1_report_and_rp1_status_import_no_jax(tmp_path):
    """``rp1 report`` and ``rp1 status`` on committed runs (docs/gpu-pilot/runs) read their
    config.json, metrics and evaluations without JAX, flax or optax: checked at exit."""
    runs = SOURCE.parents[1] / "docs" / "gpu-pilot" / "runs"
    out = _rp1_without_jax("report", str(runs), "--out", str(tmp_path / "report"))
    assert out.splitlines()[-1] == "loaded: none", out[-2000:]
    assert (tmp_path / "report" / "table1.md").is_file()
    out = _rp1_without_jax("status", str(runs))
    assert out.splitlines()[-1] == "loaded: none", out[-2000:]


@pytest.mark.slow
def test_a_runs_own_process_ends_without_scipy(tmp_path):
    """What a run's process loads to end a run — a sweep worker's modules, the learning curve and
    the summary ``rp1 train`` ends with, a sweep's bests of its runs — loads no SciPy (a second a
    process): only ``rp1 report``'s statistics need it."""
    run = tmp_path / "seed0"
    shutil.copytree(
        SOURCE.parents[1] / "docs" / "gpu-pilot" / "runs" / "halfcheetah-rp1" / "seed0", run
    )
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "import rp1.cli, rp1.sweep.driver, rp1.sweep.status, rp1.sweep.worker\n"
        "from rp1.report.run_curve import write_learning_curve\n"
        "from rp1.report.run_summary import run_summary\n"
        f"run = Path({str(run)!r})\n"
        "curve = write_learning_curve(run, 'halfcheetah-rp1')\n"
        "print(run_summary(run, curve))\n"
        "print(sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')))\n"
    )
    out = _script_output(script)
    assert out.splitlines()[-1] == "[]", out
    assert (run / "learning_curve.png").read_bytes().startswith(b"\x89PNG")
