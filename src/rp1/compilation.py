"""JAX's persistent compilation cache, configured in this one place.

The cache directory is, in order: the ``path`` argument, the ``RP1_JAX_CACHE`` environment
variable, or ``~/.cache/rp1/jax``. Setting ``RP1_JAX_CACHE`` to an empty string disables it.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "rp1" / "jax"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Point JAX's persistent compilation cache at ``path`` and return the directory used.

    Returns ``None`` when the cache is disabled (``RP1_JAX_CACHE=""``).
    """
    if path is None:
        env = os.environ.get("RP1_JAX_CACHE")
        if env == "":
            return None
        path = env or DEFAULT_CACHE_DIR
    directory = Path(path).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    # Cache every compiled program that took noticeable time, however small its binary.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return directory
