"""JAX's persistent compilation cache: ``import rp1`` creates nothing, a run creates the cache
directory for its user only, and ``RP1_COMPILATION_CACHE`` turns it off or moves it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import (
    subprocess_env,
)

# --- the compilation cache ------------------------------------------------------------------------


@pytest.mark.slow
def test_import_creates_no_cache_directory_a_run_creates_it_user_only(tmp_path):
    cache = tmp_path / "cache"
    script = (
        "import rp1, rp1.cli, rp1.train, pathlib, sys\n"
        "assert not pathlib.Path(sys.argv[1]).exists(), 'created on import'\n"
        "from rp1.core.compilation import enable_compilation_cache\n"
        "print(oct(enable_compilation_cache().stat().st_mode & 0o777))\n"
    )
    env = {**os.environ, "RP1_JAX_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(cache)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0o700"


def test_empty_cache_variable_turns_the_cache_off_and_a_directory_turns_it_on_there(tmp_path):
    """``RP1_JAX_CACHE=""``: no cache (nothing configured, nothing created, not even under
    ``HOME``), also after a compilation; ``RP1_JAX_CACHE=DIR``: JAX's cache is DIR."""
    cache = tmp_path / "cache"
    script = (
        "import os, pathlib, sys, jax\n"
        "from rp1.core.compilation import enable_compilation_cache\n"
        "assert enable_compilation_cache() is None\n"
        "jax.jit(lambda x: x + 1)(1.0).block_until_ready()\n"
        "home = [entry for entry in os.listdir(os.environ['HOME']) if entry != '.nv']  # CUDA's own cache\n"
        "print(jax.config.jax_compilation_cache_dir, sorted(home))\n"
        "os.environ['RP1_JAX_CACHE'] = sys.argv[1]\n"
        "print(enable_compilation_cache(), jax.config.jax_compilation_cache_dir)\n"
    )
    env = {
        k: v
        for k, v in subprocess_env(RP1_JAX_CACHE="", HOME=str(tmp_path / "home")).items()
        if k != "JAX_COMPILATION_CACHE_DIR"
    }
    (tmp_path / "home").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, str(cache)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["None []", f"{cache} {cache}"]
    assert cache.is_dir()
