"""docs/development.md "Layout": every module of rp1 imports only from its own layer and the layers below, so no
import runs upward and none runs in a cycle across layers."""

from __future__ import annotations

import ast
from pathlib import Path

import rp1

# docs/development.md's Layout, top to bottom: a module's layer is the first prefix (a module or a package) it
# falls under.
LAYERS = (
    ("rp1.cli", "rp1.__main__"),
    ("rp1.experiments",),
    ("rp1.train", "rp1.evaluation"),
    ("rp1.agents",),
    ("rp1.outputs",),
    ("rp1.config",),
    ("rp1.imagination",),
    ("rp1.policy", "rp1.realenv", "rp1.dynamics"),
    ("rp1.envs", "rp1.rundir"),
    ("rp1.acquisition", "rp1.core"),
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
