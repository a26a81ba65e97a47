"""The executables JAX compiles in this process: how many it compiled (:func:`compilations`), how
many it holds (:func:`held`), and the release of those compiled for data of a size seen once
(:func:`releasing`).

JAX compiles an eager operation (``x.mean(0)``, ``x - y`` on arrays) once per input shape and keeps
the executable for the life of the process, about a megabyte each on CPU. A run of
``statistics=eager`` (begun before config schema 10, :mod:`rp1.dynamics.refreshes`) refreshes its
normalisers eagerly from all its data, whose row count grows every iteration, so each iteration
compiles a few operations for a shape that never comes back: kept, they would grow a long run by
about 10 MB per iteration. A function wrapped in :func:`releasing` runs its operations as they are,
through the executables JAX compiles for them (its results are the unwrapped function's, bit for
bit), and then clears the jitted functions that compiled anything while it ran
(``jitted.clear_cache()``, JAX's own per-function release): nothing compiled for one size is kept,
and shapes that recur are compiled again when next used (milliseconds each). New runs
(``statistics=masked``) pad the data to size buckets instead and compile nothing per size; XLA
reduces ``[N, d]`` arrays in an order that depends on ``N`` (and divides by ``N`` as a constant),
so their statistics differ in the last bits, and an eager run keeps this path to continue as it
ran.

Example::

    @releasing
    def refresh(model, data):                 # eager operations on [N, d], N new every call
        return normalizer_fit(model.norm, data)

    compilations(), held()                    # for benchmarks and tests: flat after warm-up
"""

from __future__ import annotations

import functools
import gc
import weakref
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import jax
from jax import monitoring

P = ParamSpec("P")
R = TypeVar("R")

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
"""The event JAX records once per executable it compiles (or loads from its persistent cache)."""
JITTED = type(jax.jit(abs))
"""The type of a jitted function (JAX's C++ ``PjitFunction``), eager operations' included."""

_COUNT = [0]  # compilations in this process
_KNOWN: weakref.WeakSet[Any] = weakref.WeakSet()
"""The jitted functions found alive at the last scan (:func:`_jitted_functions`)."""


def _on_event(event: str, duration_secs: float, **kwargs: str | int) -> None:
    if event == COMPILE_EVENT:
        _COUNT[0] += 1


monitoring.register_event_duration_secs_listener(_on_event)


def compilations() -> int:
    """Executables this process has compiled (or loaded from the persistent cache) so far."""
    return _COUNT[0]


def held() -> int:
    """Executables the jitted functions alive in this process hold now (their per-shape caches)."""
    return sum(f._cache_size() for f in _jitted_functions())


def releasing(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn``, whose eager JAX operations see shapes that do not recur, releasing what they
    compiled: once ``fn``'s result is computed (blocked on), every jitted function that compiled
    something during the call has its cache cleared. Same operations, same executables, same
    results; the only cost is compiling recurring shapes of those functions again."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if not _KNOWN:  # the first call: what is there already is not this call's
            _jitted_functions()
        before, compiled = {f: f._cache_size() for f in _KNOWN}, compilations()
        result = jax.block_until_ready(fn(*args, **kwargs))
        if compilations() > compiled:
            for function in _grown(before, compilations() - compiled):
                function.clear_cache()
        return result

    return run


def _grown(before: dict[Any, int], compiled: int) -> list[Any]:
    """The jitted functions that hold more executables than ``before`` (their earlier counts; a
    function not there held none). The known functions are scanned first; all of them only when
    those account for fewer than the ``compiled`` executables (a function made or first used
    since the last scan compiled some)."""
    grown = [f for f in _KNOWN if f._cache_size() > before.get(f, 0)]
    if sum(f._cache_size() - before.get(f, 0) for f in grown) < compiled:
        grown = [f for f in _jitted_functions() if f._cache_size() > before.get(f, 0)]
    return grown


def _jitted_functions() -> list[Any]:
    """Every jitted function alive in this process (module-level ``jax.numpy`` ones included),
    remembered in :data:`_KNOWN`."""
    found = [obj for obj in gc.get_objects() if type(obj) is JITTED]
    _KNOWN.update(found)
    return found
