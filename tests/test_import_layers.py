"""README "Layout": every module of rp1 imports only from its own layer and the layers below, so no
import runs upward and none runs in a cycle across layers."""

from __future__ import annotations

import ast
from pathlib import Path

import rp1

# README's Layout, top to bottom: a module's layer is the first prefix (a module or a package) it
# falls under.
LAYERS = (
    ("rp1.cli", "rp1.cli_options", "rp1.experiments", "rp1.__main__"),
    ("rp1.train", "rp1.signals", "rp1.evaluation"),
    ("rp1.run_outputs", "rp1.video", "rp1.tensorboard_log"),
    ("rp1.agent", "rp1.modelfree"),
    ("rp1.config",),
    ("rp1.imagination", "rp1.realenv", "rp1.policy_files"),
    ("rp1.policy",),
    ("rp1.dynamics",),
    ("rp1.envs", "rp1.runs", "rp1.seeding", "rp1.provenance"),
    ("rp1.acquisition", "rp1.nn", "rp1.errors", "rp1.compilation", "rp1.protocol", "rp1.checkpoints", "rp1.migrations", "rp1.runlock"),
)
SOURCE = Path(rp1.__file__).parent


def layer(module: str) -> int | None:
    """Index of ``module``'s layer, 0 at the top; None for the package itself (``rp1``)."""
    for depth, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return depth
    return None


def modules() -> dict[str, Path]:
    out = {}
    for path in SOURCE.rglob("*.py"):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def rp1_imports(path: Path) -> set[str]:
    """Every rp1 module ``path`` imports, at module level or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rp1":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "rp1")
    return found


def test_every_module_has_a_layer():
    assert [m for m in modules() if m != "rp1" and layer(m) is None] == []


def test_imports_run_only_downward():
    upward = [
        f"{module} imports {target}"
        for module, path in sorted(modules().items())
        if module != "rp1"
        for target in sorted(rp1_imports(path))
        if target != "rp1" and layer(target) < layer(module)
    ]
    assert upward == []
