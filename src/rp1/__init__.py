"""rp1: Ready Policy One (Ball et al., 2020, https://arxiv.org/abs/2002.02693) in JAX.

Model-based reinforcement learning with active data acquisition: a policy is trained inside an
ensemble world model on the task's reward plus λ times the members' disagreement about it, λ is
chosen online by an exponential-weights bandit, and each real-data collection phase stops once a
new episode adds nothing the phase has not seen (a PCA test). rp1 also runs the paper's
baselines, ablations, tables and figures. The algorithm, with every number of the paper and
where rp1 deviates, is the documentation's algorithm page (`docs/algorithm.md`).

The top-level API:

```python
import rp1

cfg = rp1.resolve("halfcheetah-quick", seed=0)        # a preset's config (rp1.Config)
rp1.run_training(cfg, "runs/halfcheetah-quick")       # train; a run directory
policy = rp1.load_policy("runs/halfcheetah-quick")    # its best policy: obs -> action
env, task = rp1.make_env("halfcheetah", seed=0)       # a Gymnasium env and its Task
```

- configs: [`resolve`][rp1.config.resolve], [`env_config`][rp1.config.env_config],
  [`Config`][rp1.config.schema.Config], [`Method`][rp1.config.Method],
  [`register_method`][rp1.config.register_method];
- runs: [`run_training`][rp1.train.run_training], [`load_policy`][rp1.evaluation.load_policy],
  [`evaluate_run`][rp1.evaluation.evaluate_run];
- tasks: [`make_env`][rp1.envs.make], [`TaskSpec`][rp1.envs.TaskSpec],
  [`register_task`][rp1.envs.register_task], [`never_done`][rp1.envs.never_done];
- [`enable_compilation_cache`][rp1.core.compilation.enable_compilation_cache] and `__version__`.

Errors a caller catches: [`ConfigError`][rp1.core.errors.ConfigError] (bad input, a
`ValueError`), [`StorageError`][rp1.core.errors.StorageError] (a file operation the machine
failed, an `OSError`), [`RunInUse`][rp1.rundir.lock.RunInUse] (another process owns the run
directory), [`DivergedError`][rp1.core.errors.DivergedError],
[`RenderError`][rp1.core.errors.RenderError], all [`Rp1Error`][rp1.core.errors.Rp1Error]; and
[`Interrupted`][rp1.core.errors.Interrupted] (SIGINT or SIGTERM, a `BaseException`).

Importing rp1 is light: the names above are imported on first use, and JAX only with them. It
points JAX's persistent compilation cache at its directory if that exists (once JAX is imported),
so repeated runs do not recompile their inner loops; it writes nothing to disk. A run creates the
directory.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rp1._version import __version__
from rp1.core.compilation import enable_compilation_cache, enable_when_jax_is_imported
from rp1.core.errors import (
    ConfigError,
    DivergedError,
    Interrupted,
    RenderError,
    Rp1Error,
    StorageError,
)

if TYPE_CHECKING:
    from rp1.config import Config, Method, env_config, register_method, resolve
    from rp1.envs import TaskSpec, never_done, register_task
    from rp1.envs import make as make_env
    from rp1.evaluation import evaluate_run, load_policy
    from rp1.rundir.lock import RunInUse
    from rp1.train import run_training

enable_when_jax_is_imported()

_LAZY = {
    "Config": ("rp1.config", "Config"),
    "Method": ("rp1.config", "Method"),
    "env_config": ("rp1.config", "env_config"),
    "register_method": ("rp1.config", "register_method"),
    "resolve": ("rp1.config", "resolve"),
    "TaskSpec": ("rp1.envs", "TaskSpec"),
    "never_done": ("rp1.envs", "never_done"),
    "register_task": ("rp1.envs", "register_task"),
    "make_env": ("rp1.envs", "make"),
    "evaluate_run": ("rp1.evaluation", "evaluate_run"),
    "load_policy": ("rp1.evaluation", "load_policy"),
    "RunInUse": ("rp1.rundir.lock", "RunInUse"),
    "run_training": ("rp1.train", "run_training"),
}
"""The names of the top-level API that are imported on first use: ``name -> (module, attribute)``."""

__all__ = [
    "Config",
    "ConfigError",
    "DivergedError",
    "Interrupted",
    "Method",
    "RenderError",
    "Rp1Error",
    "RunInUse",
    "StorageError",
    "TaskSpec",
    "__version__",
    "enable_compilation_cache",
    "env_config",
    "evaluate_run",
    "load_policy",
    "make_env",
    "never_done",
    "register_method",
    "register_task",
    "resolve",
    "run_training",
]


def __getattr__(name: str) -> Any:
    """The lazily imported names of `__all__` (`_LAZY`), so that `import rp1` stays light."""
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rp1' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
