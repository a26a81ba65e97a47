"""JAX's persistent compilation cache, configured in this one place.

The cache directory is, in order: the ``path`` argument, the ``RP1_JAX_CACHE`` environment
variable, or ``~/.cache/rp1/jax``. Setting ``RP1_JAX_CACHE`` to an empty string disables it.

The cache holds compiled programs that JAX loads and runs as they are: whoever can write there can
make rp1 run their code. rp1 therefore creates the directory readable and writable by its user
only (mode 0700); a directory given in ``RP1_JAX_CACHE`` must not be writable by anyone else.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import tempfile
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "rp1" / "jax"
_POINTED_AT: list[Path | None] = [None]  # the directory JAX's cache was pointed at here


def enable_compilation_cache(
    path: str | os.PathLike | None = None, create: bool = True
) -> Path | None:
    """Point JAX's persistent compilation cache at its directory and return it.

    `import rp1` calls it with `create=False`; a run, with `create=True`. When the directory
    cannot be used with `create`, one warning line on stderr says why, JAX is not pointed there
    (it would warn at every compilation) and the run goes on, compiling afresh.

    Args:
        path: The cache directory; `None`: the environment variable `RP1_JAX_CACHE`, or
            `~/.cache/rp1/jax` (`RP1_JAX_CACHE=""` turns the cache off).
        create: Create a missing directory (mode 0700); without, the cache stays off unless the
            directory exists, so nothing is written to disk.

    Returns:
        The directory, or `None` when the cache is off: disabled, missing without `create`, or
            not creatable or not writable (a read-only file system, another user's directory).
    """
    import jax

    if path is None:
        env = os.environ.get("RP1_JAX_CACHE")
        if env == "":
            return None
        path = env or DEFAULT_CACHE_DIR
    directory = Path(path).expanduser()
    if not create and not directory.is_dir():
        return None
    problem = _unusable(directory) if create else _not_writable(directory)
    if problem:
        if create:
            print(f"rp1: warning: compilation cache off: {problem}", file=sys.stderr)
        if _POINTED_AT[0] == directory:  # by an earlier call (on import)
            jax.config.update("jax_compilation_cache_dir", None)
            _POINTED_AT[0] = None
        return None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    _POINTED_AT[0] = directory
    # Cache every compiled program that took noticeable time, however small its binary.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return directory


def _unusable(directory: Path) -> str:
    """Why ``directory`` cannot hold the cache (``""`` if it can): created if missing, then a file
    created and removed in it, as the cache would."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as err:
        return f"cannot create {directory}: {err.strerror or err}"
    try:
        fd, probe = tempfile.mkstemp(prefix=".rp1-probe-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        return f"cannot write in {directory}: {err.strerror or err}"
    return ""


def _not_writable(directory: Path) -> str:
    """Why this process may not write in ``directory`` as the file system's permissions say
    (``""`` if it may), without writing there."""
    return "" if os.access(directory, os.W_OK | os.X_OK) else f"{directory} is not writable"


def enable_when_jax_is_imported() -> None:
    """``enable_compilation_cache(create=False)`` now if JAX is imported, else right after JAX's
    import, whoever imports it: what ``import rp1`` calls, so that importing rp1 imports no JAX
    (``rp1 report`` and ``rp1 status`` never do) and JAX's first compilation still finds its cache."""
    if "jax" in sys.modules:
        enable_compilation_cache(create=False)
    elif not any(isinstance(finder, _AfterJaxImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterJaxImport())


class _AfterJaxImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: at JAX's import it leaves ``sys.meta_path`` and has JAX's own loader
    run :func:`enable_compilation_cache` once JAX's package has run."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            enable_compilation_cache(create=False)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
