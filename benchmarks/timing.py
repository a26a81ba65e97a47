"""Shared timing for the benchmarks: median wall time after warm-up, and the report header."""

from __future__ import annotations

import datetime
import platform
import statistics
import time
from collections.abc import Callable

import jax


def timed(fn: Callable, repeats: int) -> float:
    """Median wall time of ``fn()`` in ms over ``repeats`` calls, after one warm-up call (compilation)."""
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def report_header(workload: str) -> None:
    """Print the date, the device, the jax version and ``workload``."""
    device = jax.devices()[0]
    print(f"date {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(
        f"device {device.platform}: {device.device_kind} ({platform.processor() or platform.machine()})"
    )
    print(f"jax {jax.__version__}; {workload}")


def report(pieces: dict[str, Callable], repeats: int, workload: str) -> None:
    """Print the header (:func:`report_header`), then the median time of every piece."""
    report_header(f"{workload}; median of {repeats} after warm-up")
    width = max(len(name) for name in pieces) + 2
    for name, fn in pieces.items():
        print(f"{name:{width}s} {timed(fn, repeats):10.1f} ms", flush=True)
