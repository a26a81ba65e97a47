"""Ready Policy One: model-based RL with active data acquisition, in JAX.

Importing the package turns on JAX's persistent compilation cache (see
:mod:`rp1.compilation`), so repeated runs do not recompile their inner loops.
"""

from rp1.compilation import enable_compilation_cache

__version__ = "0.1.0"

enable_compilation_cache()

__all__ = ["__version__", "enable_compilation_cache"]
