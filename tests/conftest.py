"""Fixtures shared by the test files: finished tiny runs made once per session. Helpers live in
``helpers.py``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

QUICK_COMPILING = "--xla_backend_optimization_level=0"
"""XLA without LLVM's optimisation: what the suite's programs compile with."""
LEGACY_EMITTERS = "--xla_cpu_use_fusion_emitters=false"
"""XLA:CPU's older fusion emitters, where this jaxlib has the choice: they compile the suite's
programs in about half the CPU time of the newer ones (docs/development.md)."""


def with_legacy_emitters() -> bool:
    """Whether this session's XLA compiles with :data:`LEGACY_EMITTERS` (its ``XLA_FLAGS``)."""
    return LEGACY_EMITTERS in os.environ.get("XLA_FLAGS", "").split()


def knows(flag: str) -> bool:
    """Whether this jaxlib's XLA knows ``flag`` (an unknown one in ``XLA_FLAGS`` aborts a
    process), asked of a process of its own."""
    probe = "import jax.numpy as jnp; jnp.zeros(1).block_until_ready()"
    env = {**os.environ, "XLA_FLAGS": flag, "JAX_PLATFORMS": "cpu"}
    return (
        subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True).returncode == 0
    )


os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.pop("COLUMNS", None)  # rp1's tables wrap to a COLUMNS a terminal exports; tests set it
# XLA compiles the suite's programs (here and in the runs it starts) quickly: compiling is most of
# the suite's CPU time, and the tests compare runs made alike, never to the bits of an optimised
# build (those that compare two different programs bit for bit are marked `fusion_emitters`).
# An XLA_FLAGS that is set, even to "", is left as it is: `XLA_FLAGS= pytest` compiles as users'
# runs do, which the committed fixtures' bit-for-bit comparisons need (they skip elsewhere, naming
# the difference). The xdist workers inherit the controller's choice.
if "XLA_FLAGS" not in os.environ:
    legacy = knows(LEGACY_EMITTERS)
    os.environ["XLA_FLAGS"] = f"{QUICK_COMPILING} {LEGACY_EMITTERS}" if legacy else QUICK_COMPILING

from helpers import ROOT, train_args  # noqa: E402 (after the backend is chosen)

LONGEST = (
    "tests/test_metrics_columns.py::test_every_method_keeps_every_column_it_had_bit_for_bit",
    "tests/test_memory.py::test_a_long_run_keeps_its_memory_and_executables_flat",
    "tests/test_sweep.py::test_ray_sweep_on_a_local_instance",
    "tests/test_sweep.py::test_local_sweep_runs_resumes_then_skips",
)
"""The tests that take longest (a minute or more on 2 idle cores): xdist starts them first."""


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--compile-times",
        action="store_true",
        help="end with the seconds each test file spent tracing, lowering and compiling JAX "
        "programs in the tests' own processes, beside its seconds in all (docs/development.md)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem) -> bool | None:
    """A test marked ``fusion_emitters`` compares the bits of two different compiled programs
    (a loop and its step replayed), which agree as XLA's fusion emitters compile them (its
    default, users' runs) and not as the older ones do: where the suite compiles with those, the
    test runs in a process of its own without them, and passes or fails with it."""
    if not pyfuncitem.get_closest_marker("fusion_emitters") or not with_legacy_emitters():
        return None
    flags = os.environ["XLA_FLAGS"].split()
    env = {**os.environ, "XLA_FLAGS": " ".join(f for f in flags if f != LEGACY_EMITTERS)}
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
    done = subprocess.run(
        [*command, pyfuncitem.nodeid], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.fail(f"in a process with the fusion emitters:\n{done.stdout[-4000:]}", pytrace=False)
    return True


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects
def pytest_collection_modifyitems(config, items):
    """A test marked ``fusion_emitters`` is ``slow`` where it runs in a process of its own
    (:func:`pytest_pyfunc_call`). Under xdist (``-n 2``, ``--dist worksteal``), the longest tests
    first, then the slow ones, then the rest: a worker that runs out steals from the end of the
    other's queue, so the run ends on short tests, not with one worker idle beside a long one. A
    test that shares a module-scoped fixture with a slow test of its module goes with the slow
    ones, so the fixture is made once per worker. Only the order changes; without xdist it is the
    files'."""
    if with_legacy_emitters():
        for item in items:
            if item.get_closest_marker("fusion_emitters"):
                item.add_marker(pytest.mark.slow)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return

    def module_fixtures(item) -> set[str]:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            return set()
        return {
            f"{item.nodeid.split('::')[0]}:{name}"
            for name, defs in info.name2fixturedefs.items()
            if defs and defs[-1].scope == "module"
        }

    with_slow = set().union(*(module_fixtures(i) for i in items if i.get_closest_marker("slow")))

    def tier(item) -> int:
        if item.nodeid.split("[")[0] in LONGEST:
            return LONGEST.index(item.nodeid.split("[")[0])
        slow = item.get_closest_marker("slow") or module_fixtures(item) & with_slow
        return len(LONGEST) + (0 if slow else 1)

    items.sort(key=tier)  # stable: within a tier, the files' order


FAST_TIER_BUDGET_S = 120.0
"""What the fast tier (``-m "not slow"``) may take on two idle cores, from a fresh clone: past it,
the run ends with its slowest tests (:func:`pytest_terminal_summary`)."""
FAST_TEST_LIMIT_S = 5.0
"""What one fast test may take (setup, call and teardown): past it, it belongs in the slow tier."""
SLOWEST_SHOWN = 10

_durations: dict[str, float] = {}
"""Seconds per test id of this session (setup, call and teardown summed), as its reports came in."""
_compiling: dict[str, list[float]] = {}
"""With ``--compile-times``: seconds per test id spent tracing, lowering and compiling JAX programs
in the test's process."""
_started: list[float] = []
_compile_clock = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
"""With ``--compile-times``, in the process running the tests: seconds spent tracing, lowering and
compiling JAX programs so far, and those sums when the last test phase ended."""
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
"""JAX's monitoring events that time making a program: tracing it, lowering it, compiling it (or
loading it from the persistent compilation cache)."""


def pytest_sessionstart(session) -> None:
    """When the session started (the fast tier's budget counts from here); with
    ``--compile-times``, in a process that runs tests, start timing JAX's compilations."""
    _started.append(time.monotonic())
    if session.config.getoption("compile_times"):
        import jax.monitoring

        def timed(event: str, seconds: float, **_) -> None:
            if event in COMPILE_EVENTS:
                _compile_clock[0][COMPILE_EVENTS.index(event)] += seconds

        jax.monitoring.register_event_duration_secs_listener(timed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """With ``--compile-times``: each phase's report carries the seconds it spent tracing, lowering
    and compiling JAX programs, in ``user_properties`` (which reach xdist's controller)."""
    report = yield
    if item.config.getoption("compile_times"):
        now, last = _compile_clock
        report.user_properties.append(
            ("compile_s", [a - b for a, b in zip(now, last, strict=True)])
        )
        _compile_clock[1] = list(now)
    return report


def pytest_runtest_logreport(report) -> None:
    """Sum each test's phases (under xdist, where the workers' reports reach the controller)."""
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    for name, value in report.user_properties:
        if name == "compile_s":
            spent = _compiling.setdefault(report.nodeid, [0.0, 0.0, 0.0])
            _compiling[report.nodeid] = [a + b for a, b in zip(spent, value, strict=True)]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """In the fast tier (``-m "not slow"``), name the tests over :data:`FAST_TEST_LIMIT_S`, and
    where the session took longer than :data:`FAST_TIER_BUDGET_S`, the slowest ones, so that the
    tier stays what a contributor runs after every edit (docs/development.md)."""
    if _compiling:
        compile_times(terminalreporter)
    if config.getoption("markexpr", "") != "not slow" or not _durations:
        return
    elapsed = time.monotonic() - _started[0]
    over = {test: s for test, s in _durations.items() if s > FAST_TEST_LIMIT_S}
    if elapsed <= FAST_TIER_BUDGET_S and not over:
        return
    write = terminalreporter.write_line
    terminalreporter.section("the fast tier's budget")
    if elapsed > FAST_TIER_BUDGET_S:
        write(f"the fast tier took {elapsed:.0f} s, over its {FAST_TIER_BUDGET_S:.0f} s budget")
    if over:
        write(
            f"{len(over)} fast test(s) over {FAST_TEST_LIMIT_S:.0f} s: make them faster or mark them slow"
        )
    slowest = sorted(_durations.items(), key=lambda item: -item[1])[:SLOWEST_SHOWN]
    for test, seconds in slowest:
        write(f"{seconds:7.1f} s  {test}")


def compile_times(terminalreporter) -> None:
    """``--compile-times``' section: per test file, its seconds in all (setup, call and teardown
    summed over its tests) and those spent tracing, lowering and compiling JAX programs in the
    tests' own processes (not in the runs they start in other processes), longest first."""
    by_file: dict[str, list[float]] = {}
    for test, seconds in _durations.items():
        spent = by_file.setdefault(test.split("::")[0], [0.0] * 4)
        making = _compiling.get(test, [0.0, 0.0, 0.0])
        by_file[test.split("::")[0]] = [
            a + b for a, b in zip(spent, [seconds, *making], strict=True)
        ]
    by_file["(all)"] = [sum(spent[i] for spent in by_file.values()) for i in range(4)]
    terminalreporter.section("seconds per test file: in all; tracing, lowering, compiling")
    for path, spent in sorted(by_file.items(), key=lambda item: -item[1][0]):
        terminalreporter.write_line("".join(f"{s:8.1f}" for s in spent) + f"  {path}")
    terminalreporter.section(f"the {SLOWEST_SHOWN * 2} tests that spent longest making programs")
    for test, making in sorted(_compiling.items(), key=lambda item: -sum(item[1]))[
        : SLOWEST_SHOWN * 2
    ]:
        seconds = [_durations.get(test, 0.0), *making]
        terminalreporter.write_line("".join(f"{s:8.1f}" for s in seconds) + f"  {test}")


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """The uninterrupted tiny ``halfcheetah-rp1`` run of :func:`helpers.train_args` (seed 0,
    1,800 samples), finished. Read it, never change it: tests that damage a run take
    ``copied_run``."""
    from rp1.cli import main

    out = tmp_path_factory.mktemp("finished") / "run"
    assert main(train_args(out)) == 0
    return out


@pytest.fixture
def copied_run(finished_run, tmp_path) -> Path:
    """A copy of ``finished_run`` to change or damage."""
    return Path(shutil.copytree(finished_run, tmp_path / "run"))
