"""JAX's persistent compilation cache, configured in this one place.

The cache directory is, in order: the ``path`` argument, the ``RP1_JAX_CACHE`` environment
variable, or ``~/.cache/rp1/jax``. Setting ``RP1_JAX_CACHE`` to an empty string disables it.

The cache holds compiled programs that JAX loads and runs as they are: whoever can write there can
make rp1 run their code. rp1 therefore creates the directory readable and writable by its user
only (mode 0700); a directory given in ``RP1_JAX_CACHE`` must not be writable by anyone else.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import jax

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "rp1" / "jax"


def enable_compilation_cache(
    path: str | os.PathLike | None = None, create: bool = True
) -> Path | None:
    """Point JAX's persistent compilation cache at its directory and return it.

    With ``create``, a missing directory is created (mode 0700); without, the cache stays off
    unless the directory exists, so nothing is written to disk. Returns ``None`` when the cache is
    off: disabled (``RP1_JAX_CACHE=""``), missing without ``create``, or not creatable (a one-line
    warning on stderr says why; the run goes on, compiling afresh).
    """
    if path is None:
        env = os.environ.get("RP1_JAX_CACHE")
        if env == "":
            return None
        path = env or DEFAULT_CACHE_DIR
    directory = Path(path).expanduser()
    if create:
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as err:
            print(
                f"rp1: warning: compilation cache off: cannot create {directory}: {err.strerror or err}",
                file=sys.stderr,
            )
            return None
    elif not directory.is_dir():
        return None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    # Cache every compiled program that took noticeable time, however small its binary.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return directory
