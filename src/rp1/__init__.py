"""Ready Policy One: model-based RL with active data acquisition, in JAX.

Importing the package points JAX's persistent compilation cache (see :mod:`rp1.compilation`) at
its directory if that exists, so repeated runs do not recompile their inner loops; it writes
nothing to disk. A run (:func:`rp1.train.run_training`) creates the directory.
"""

from rp1.compilation import enable_compilation_cache

__version__ = "0.1.0"

enable_compilation_cache(create=False)

__all__ = ["__version__", "enable_compilation_cache"]
