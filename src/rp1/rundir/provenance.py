"""Where a run ran: what its numbers depend on besides its config, in ``RUN/environment.json``.

A run's metrics are reproduced bit for bit only by the same code and libraries, on the same kind
of device and CPU, with the same number of threads in XLA's CPU thread pool (docs/runs.md has the
measurements). :func:`environment` collects these:

- ``rp1``: version, and the git commit when rp1 runs from a checkout (``unknown`` otherwise; with
  ``-modified`` when tracked files differ from it);
- ``python``, and the versions of the libraries the numbers come from (:data:`PACKAGES`);
- ``backend`` and ``device``: JAX's default backend and its device (the CPU's model name from
  ``/proc/cpuinfo``, else the platform's processor; a GPU's kind);
- ``cpu_features``: the CPU's vector and floating-point instruction-set extensions
  (:data:`CPU_EXTENSIONS`), on every backend. A model name can hide them (a hypervisor's "AMD
  EPYC" is CPUs with and without AVX-512), and they choose the arithmetic: XLA compiles for the
  extensions of the CPU it runs on, NumPy's OpenBLAS picks its kernels by them (for the PCA
  residual's linear algebra: its AVX-512 kernels and its Zen kernels give a quick run two curves);
  ``openblas_coretype``: ``OPENBLAS_CORETYPE``, which overrides OpenBLAS's pick;
- ``xla_threads``: the size of XLA's CPU thread pool, which XLA takes from ``PJRT_NPROC`` or
  ``NPROC`` where set and otherwise from the CPUs this process may run on
  (``os.sched_getaffinity``: ``taskset`` and cgroups' cpusets narrow it); ``xla_flags``:
  ``XLA_FLAGS``.

:func:`record` keeps a list of them in the run directory, each with the iteration from which it
applies: a fresh run writes one; a resume on the environment of the last entry adds nothing, a
resume elsewhere appends one and returns a one-line warning. A damaged record (not JSON, an entry
of the wrong shape) is rewritten with this environment alone, and the warning says so. ``host`` and ``recorded`` (local time)
are kept with each entry but not compared: identical machines give identical numbers. An entry
written before a field existed is read too; the field counts as differing (``not recorded``).
:func:`changes_since` says how this process differs from where a run's iteration ran (what ``rp1
evaluate`` names when a replay's return is not the recorded one); :func:`recorded_from`, from which
iteration an rp1 that records ran it (every such rp1 keeps policy files: ``rp1 evaluate`` names it
when one is missing).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

from rp1._version import __version__
from rp1.core.storage import write_atomically
from rp1.rundir.files import ENVIRONMENT, SEEDS_PER_PROCESS, RunDir

PACKAGES = ("jax", "jaxlib", "flax", "numpy", "mujoco", "gymnasium", "optax")
"""The libraries whose versions a run's numbers depend on."""
CPU_EXTENSIONS = {
    "flags": ("sse", "ssse3", "pni", "avx", "fma", "f16c", "xop", "amx"),
    "Features": ("asimd", "sve", "sme", "fphp", "bf16", "i8mm", "f32mm", "f64mm"),
}
"""Prefixes of the ``/proc/cpuinfo`` flags of vector and floating-point extensions, per line: x86's
``flags`` (SSE, ``pni`` being SSE3; AVX, AVX2, AVX-512, AVX-VNNI; FMA, F16C, XOP, AMX) and Arm's
``Features`` (Advanced SIMD, SVE, SME, half precision, BF16, the matrix multiplies)."""
NOT_COMPARED = ("from_iteration", "host", "recorded")
"""Fields of a record entry that say when and where, not what the numbers depend on."""


def environment() -> dict[str, Any]:
    """What this process's numbers depend on (see the module docstring); initialises JAX's backend."""
    import jax

    backend = jax.default_backend()
    return {
        "rp1": __version__,
        "commit": _commit(),
        "python": platform.python_version(),
        **{name: _version(name) for name in PACKAGES},
        "backend": backend,
        "device": _cpu_model() if backend == "cpu" else jax.devices()[0].device_kind,
        "cpu_features": cpu_features(),
        "xla_threads": xla_threads(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
    }


def xla_threads(environ: dict[str, str] | os._Environ = os.environ) -> int:
    """The size of XLA's CPU thread pool in a process started with ``environ``: ``PJRT_NPROC`` or
    ``NPROC`` where set to an integer (XLA's ``DefaultThreadPoolSize``), else the CPUs this
    process may run on."""
    for name in ("PJRT_NPROC", "NPROC"):
        try:
            return max(0, int(environ[name]))
        except (KeyError, ValueError):
            continue
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        return os.cpu_count() or 1


def cpu_features(cpuinfo: str | os.PathLike = "/proc/cpuinfo") -> str:
    """The CPU's vector and floating-point extensions (:data:`CPU_EXTENSIONS`) in ``cpuinfo``'s
    first ``flags`` or ``Features`` line, sorted and space-separated; ``unknown`` without one
    (a system without ``/proc/cpuinfo``)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in CPU_EXTENSIONS:
                    return " ".join(
                        sorted(
                            flag
                            for flag in set(value.split())
                            if flag.startswith(CPU_EXTENSIONS[key.strip()])
                        )
                    )
    except OSError:
        pass
    return "unknown"


def record(run_dir: str | os.PathLike, iteration: int) -> str | None:
    """Record in ``run_dir`` that it runs here from ``iteration`` on; a one-line warning if that
    continues a run recorded elsewhere, or one that has no record of where it ran.

    ``iteration`` 0 starts the record afresh. Otherwise entries from ``iteration`` on are dropped
    (a resume that died before its next checkpoint wrote no row under them), and this environment
    is appended unless the last entry's is the same.
    """
    file = Path(run_dir) / ENVIRONMENT
    entries, damage = read_record(RunDir(run_dir)) if iteration > 0 else ([], "")
    entries = [e for e in entries if e.get("from_iteration", 0) < iteration]
    here = environment()
    last = entries[-1] if entries else None
    if last is not None and _compared(last) == here:
        return None
    entry = {
        "from_iteration": iteration,
        "host": socket.gethostname(),
        "recorded": datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        **here,
    }
    write_atomically(
        file,
        (json.dumps({"environments": [*entries, entry]}, indent=2) + "\n").encode(),
        "environment record",
    )
    if iteration == 0:
        return None
    if damage:
        return (
            f"rp1: warning: {file} was damaged ({damage}) and is rewritten: from iteration {iteration} on "
            f"the run runs on {summary(here)}; where iterations 0-{iteration - 1} ran is not known"
        )
    if last is None:
        return (
            f"rp1: warning: {run_dir} has no record of where iterations 0-{iteration - 1} ran (an earlier rp1 wrote "
            f"them); from iteration {iteration} on it runs on {summary(here)}"
        )
    changed = "; ".join(changes(last, here))
    return (
        f"rp1: warning: {run_dir} continues from iteration {iteration} in another environment than it ran in "
        f"({changed}): its metrics may differ from an uninterrupted run's from there on; recorded in {file}"
    )


def summary(env: dict[str, Any]) -> str:
    """``device, N XLA threads, jax X, rp1 V (commit)`` of an :func:`environment`."""
    return f"{env['device']}, {env['xla_threads']} XLA threads, jax {env['jax']}, rp1 {env['rp1']} ({env['commit']})"


def changes(entry: dict[str, Any], here: dict[str, Any]) -> list[str]:
    """How the environment ``here`` differs from record entry ``entry`` in what numbers depend on,
    a :func:`_change` per field of ``here``; ``[]`` where they agree."""
    compared = _compared(entry)
    return [_change(key, entry, value) for key, value in here.items() if compared.get(key) != value]


def changes_since(run_dir: str | os.PathLike, iteration: int) -> list[str] | None:
    """How this process's :func:`environment` differs from the one ``run_dir``'s record says ran
    its iteration ``iteration`` (the last entry from that iteration or before; :func:`changes`),
    or ``None`` where the record does not say (none, a damaged one, or none so early)."""
    entries, _ = read_record(RunDir(run_dir))
    ran = [e for e in entries if e.get("from_iteration", 0) <= iteration]
    return changes(ran[-1], environment()) if ran else None


def recorded_from(run_dir: str | os.PathLike) -> int | None:
    """The first iteration ``run_dir``'s record covers (its first entry's ``from_iteration``: 0 for
    a run begun by an rp1 that records, the resume's iteration for one begun by an earlier rp1),
    or ``None`` where it has no record (none, or a damaged one)."""
    entries, _ = read_record(RunDir(run_dir))
    return entries[0].get("from_iteration", 0) if entries else None


def _change(key: str, last: dict[str, Any], now: Any) -> str:
    """How field ``key`` of entry ``last`` became ``now``: ``key 'was' -> 'now'``, ``key not
    recorded -> 'now'`` for a field ``last`` was written without, and for ``cpu_features`` the
    extensions gone (``-``) and added (``+``)."""
    if key not in last:
        return f"{key} not recorded -> {now!r}"
    if key == "cpu_features":
        was, here = set(str(last[key]).split()), set(str(now).split())
        return f"{key} " + " ".join(
            [*(f"-{f}" for f in sorted(was - here)), *(f"+{f}" for f in sorted(here - was))]
        )
    return f"{key} {last[key]!r} -> {now!r}"


def _compared(entry: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``entry`` that its numbers depend on (the size of an rp1 0.2.x program,
    :data:`SEEDS_PER_PROCESS`, is :mod:`rp1.rundir.lockstep`'s to judge)."""
    return {
        key: value
        for key, value in entry.items()
        if key not in NOT_COMPARED and key != SEEDS_PER_PROCESS
    }


def read_record(run: RunDir) -> tuple[list[dict[str, Any]], str]:
    """The entries recorded in ``run``'s record (none if it has none), and what is wrong with it
    if it is damaged (``""`` if not): unreadable, a link out of the run directory, not JSON, or an
    entry that is not a map whose ``from_iteration`` is an integer. A damaged record gives no
    entries: it is a record, not an input, and is rewritten."""
    if not (run.path / ENVIRONMENT).exists():
        return [], ""
    try:
        entries = json.loads(run.read_file(ENVIRONMENT, "environment record"))["environments"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        return [], f"{type(err).__name__}: {err}"[:200]
    if not isinstance(entries, list) or not all(_is_entry(e) for e in entries):
        return [], "an entry is not a map with an integer from_iteration"
    return entries, ""


def _is_entry(entry: Any) -> bool:
    return isinstance(entry, dict) and type(entry.get("from_iteration", 0)) is int


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what the platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


@functools.cache
def _commit() -> str:
    """rp1's git commit when it runs from a checkout (``-modified`` if tracked files under ``src`` differ), else
    ``unknown``."""
    root = Path(__file__).resolve().parents[3]
    git = ["git", "-C", str(root)]
    try:
        top = subprocess.run(
            [*git, "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=10
        )
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != root:
            return "unknown"
        head = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        clean = (
            subprocess.run(
                [*git, "diff", "--quiet", "HEAD", "--", "src"], capture_output=True, timeout=30
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head if clean else f"{head}-modified"
