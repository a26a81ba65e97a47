"""Ready Policy One: model-based RL with active data acquisition, in JAX.

Importing the package points JAX's persistent compilation cache (see :mod:`rp1.core.compilation`) at
its directory if that exists, so repeated runs do not recompile their inner loops; it writes
nothing to disk. A run (:func:`rp1.train.run_training`) creates the directory.

``rp1.load_policy(run_dir, which="best")`` loads a run's kept policy (:mod:`rp1.evaluation`).
"""

from typing import Any

from rp1.core.compilation import enable_compilation_cache

__version__ = "0.1.0"

enable_compilation_cache(create=False)

__all__ = ["__version__", "enable_compilation_cache", "load_policy"]


def __getattr__(name: str) -> Any:
    """``rp1.load_policy`` (:func:`rp1.evaluation.load_policy`), imported on first use so that
    ``import rp1`` stays light."""
    if name == "load_policy":
        from rp1.evaluation import load_policy

        return load_policy
    raise AttributeError(f"module 'rp1' has no attribute {name!r}")
