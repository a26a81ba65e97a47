"""World-model quality on common data: a fixed test set of real transitions per task that no run
trains on, and the ensemble's one-step error on it (docs/algorithm.md §12).

``model_error`` of a run (the bandit's G, algorithm.md §6) is measured on the phase the run has just
collected, so it measures different data for every method. :func:`errors_on_test_set` measures every
run on the same transitions, after every fit, as two metrics:

- ``test_model_error``: G's formula, ``sqrt(mean_m MSE_m²)``, with the run's own normalisers (the
  units of ``model_error``, so the two compare within a run);
- ``test_model_error_common``: the same formula with ``MSE_m`` the mean squared error of member
  ``m``'s predicted ``s'`` in the test set's own standardisation (per dimension, its next states'
  mean and std, no clip), the same units for every run: a run's normalisers follow the data it
  collected, so its units (and their ±3 clip) differ from another run's.

Both are pure functions of the model and the data: computing them draws no random number, so
every other metric of a run stays as it was.

A test set file is an ``.npz`` (``obs``, ``act``, ``next_obs`` ``[N, …]`` float32 and ``behaviour``
``[N]`` int8, the index of the behaviour that produced each transition) written byte for byte the
same from the same arrays (:func:`write_test_set`: fixed zip dates, stored, sorted). The shipped
files are in ``rp1/dynamics/testsets/`` (:func:`shipped_test_set`); ``rp1 testsets`` rebuilds
them (:mod:`rp1.testsets.build`).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rp1.core.errors import ConfigError
from rp1.core.normalizer import Normalizer, normalizer_fit, normalizer_init, standardize
from rp1.core.storage import write_atomically
from rp1.dynamics.ensemble import Ensemble, predict_all
from rp1.dynamics.losses import ensemble_error, model_error
from rp1.envs import names as task_names

SHIPPED = Path(__file__).parent / "testsets"
"""Where the shipped test sets are: ``<task>.npz`` for each paper task."""

ARRAYS = ("obs", "act", "next_obs", "behaviour")
COLUMNS = ("test_model_error", "test_model_error_common")
"""The metrics :func:`errors_on_test_set` returns (``metrics.csv`` columns)."""


class TestSet(NamedTuple):
    """Real transitions: ``obs``, ``next_obs`` ``[N, obs_dim]``, ``act`` ``[N, act_dim]`` (as the
    environment took them, clipped to its bounds), float32; ``behaviour`` ``[N]`` int8."""

    obs: np.ndarray
    act: np.ndarray
    next_obs: np.ndarray
    behaviour: np.ndarray

    @property
    def scale(self) -> Normalizer:
        """The test set's own standardisation: mean and variance of ``next_obs`` per dimension
        (variance floored as every normaliser's), no clip."""
        return normalizer_fit(normalizer_init(self.next_obs.shape[1]), jnp.asarray(self.next_obs))


# Not a pytest test class (set here: mypy takes a NamedTuple's class attributes for fields).
TestSet.__test__ = False  # type: ignore[attr-defined]  # pytest's opt-out attribute


def write_test_set(path: Path, test_set: TestSet) -> None:
    """``test_set`` as an ``.npz`` at ``path`` whose bytes depend only on the arrays: entries in
    :data:`ARRAYS` order, stored uncompressed with the zip format's earliest date."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in ARRAYS:
            entry = io.BytesIO()
            np.lib.format.write_array(
                entry, np.ascontiguousarray(getattr(test_set, name)), allow_pickle=False
            )
            archive.writestr(
                zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), entry.getvalue()
            )
    write_atomically(path, buffer.getvalue(), "test set")


def read_test_set(path: Path) -> TestSet:
    """The test set in ``path``; ConfigError naming the file if it is not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in ARRAYS}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
        raise ConfigError(f"{path}: not a readable test set ({err})") from None
    return TestSet(**arrays)


def shipped_test_set(task: str) -> TestSet | None:
    """The shipped test set of ``task`` (a paper task), None for any other task."""
    return read_test_set(SHIPPED / f"{task}.npz") if task in task_names() else None


@jax.jit
def common_member_errors(
    model: Ensemble, obs: jax.Array, act: jax.Array, next_obs: jax.Array, scale: Normalizer
) -> jax.Array:
    """Each member's mean squared one-step error ``[M]`` in the units of ``scale``:
    ``mean over rows and dims of (standardize(scale, ŝ'_m) − standardize(scale, s'))²``, with
    ``ŝ'_m`` member ``m``'s predicted next state (``obs [N, obs_dim]``, ``act [N, act_dim]``)."""
    predicted = standardize(scale, predict_all(model, obs, act))  # [M, N, obs_dim]
    return jnp.mean((predicted - standardize(scale, next_obs)) ** 2, axis=(1, 2))


def errors_on_test_set(
    model: Ensemble, test_set: TestSet, scale: Normalizer | None = None
) -> dict[str, float]:
    """The ensemble's one-step error on ``test_set`` (see the module docstring): ``{name: value}``
    for each of :data:`COLUMNS`. ``scale``: ``test_set.scale``, which a caller that scores many
    models computes once (the same bits every time)."""
    scale = test_set.scale if scale is None else scale
    losses = common_member_errors(model, test_set.obs, test_set.act, test_set.next_obs, scale)
    return {
        "test_model_error": model_error(model, test_set.obs, test_set.act, test_set.next_obs),
        "test_model_error_common": ensemble_error(losses),
    }
