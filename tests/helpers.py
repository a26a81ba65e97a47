"""Helpers shared by the tests: the tiny config, running the CLI in this process or in another
one, killing and crashing runs at known points, and comparing run directories.

Test files import from here (``from helpers import …``), never from ``conftest`` or from each
other; ``conftest.py`` holds the fixtures.

The tiny config (:data:`TINY`) runs the whole RP1 loop on CPU in seconds. :func:`train_args` is
the tiny ``halfcheetah-rp1`` run (seed 0, 1,800 samples) of the session's ``finished_run`` fixture:
a run that is restarted, resumed or interrupted must reproduce it metric for metric except the
wall-clock columns.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DRIVER = TESTS / "cli_driver.py"

TINY = {
    "model.hidden": "16,16",
    "model.members": "3",
    "model.max_epochs": "10",
    "model.batch_size": "64",
    "policy.hidden": "16,16",
    "policy.batch_steps": "300",
    "policy.max_updates": "13",
    "collect.phase_cap": "300",
    "eval_episodes": "2",
}

EVALUATED_CASES = {
    # 4 iterations (α = 0: phases of 300 samples), every one evaluated
    "rp1": ("halfcheetah-rp1", 1200, {**TINY, "collect.alpha": "0"}),
    # 5 updates of 2 episodes in 2 slots, evaluated after updates 2, 4 and 5
    "modelfree": (
        "halfcheetah-modelfree",
        1000,
        {
            "policy.hidden": "16,16",
            "policy.batch_steps": "200",
            "modelfree.envs": "2",
            "eval_episodes": "2",
            "modelfree.eval_every": "2",
        },
    ),
}
"""Tiny runs whose every few steps are evaluated, by name: ``(preset, budget, --set overrides)``."""

COMPARED = (
    "jax",
    "jaxlib",
    "numpy",
    "mujoco",
    "gymnasium",
    "optax",
    "backend",
    "device",
    "cpu_features",
    "xla_threads",
    "xla_flags",
    "openblas_coretype",
)
"""The fields of an environment record (rp1.rundir.provenance.environment) that a run's numbers depend on:
a fixture made elsewhere is compared bit for bit only where they all match."""


SETTINGS_VARIABLES = {
    "xla_threads": "PJRT_NPROC",
    "xla_flags": "XLA_FLAGS",
    "openblas_coretype": "OPENBLAS_CORETYPE",
}
"""The fields of an environment record that a process takes from its environment variables, and
those variables."""


def made_in_env(made_in: dict) -> dict[str, str]:
    """The environment variables that give a process the XLA thread pool, XLA flags and OpenBLAS
    kernels an environment record (a fixture's ``made_in.json``) names: a run resumed with them
    can reproduce the fixture bit for bit where the CPU is the same (the suite's own XLA_FLAGS,
    set in ``conftest.py``, would not)."""
    return {variable: str(made_in[field]) for field, variable in SETTINGS_VARIABLES.items()}


def environment_differences(made_in: dict, here: dict) -> dict:
    """``{field: (made_in's, here's)}`` for every field of :data:`COMPARED` the two environment
    records disagree on (a field a record lacks counts as a difference)."""
    return {
        key: (made_in.get(key), here.get(key))
        for key in COMPARED
        if made_in.get(key) != here.get(key)
    }


PRESET = "halfcheetah-rp1"  # the preset of train_args
BUDGET = 1800  # the budget of train_args


def tiny_sets(**extra: str) -> list[str]:
    """``--set`` values of the tiny config, plus ``extra`` (``model__members="2"`` for
    ``model.members=2``)."""
    items = {**TINY, **{k.replace("__", "."): v for k, v in extra.items()}}
    return [f"{k}={v}" for k, v in items.items()]


def set_args(sets: list[str]) -> list[str]:
    """``["a=1", "b=2"]`` -> ``["--set", "a=1", "--set", "b=2"]``."""
    return [arg for s in sets for arg in ("--set", s)]


def train_args(out: Path, *extra: str) -> list[str]:
    """``rp1 train`` arguments of the tiny ``halfcheetah-rp1`` run (seed 0, 1,800 samples) in
    ``out``, then ``extra``."""
    return [
        "train",
        "--preset",
        PRESET,
        "--out",
        str(out),
        "--budget",
        str(BUDGET),
        "--quiet",
        *set_args(tiny_sets()),
        *extra,
    ]


def tiny_overrides(args: list[str]) -> dict[str, str]:
    """The ``--set`` values of ``args`` as a dict."""
    return dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--set")


def run_cli(args: list[str], capsys) -> tuple[int, list[str]]:
    """``rp1 ARGS`` in this process: the exit code and stderr's lines."""
    code, _, err = run_cli_output(args, capsys)
    return code, err


def run_cli_output(args: list, capsys) -> tuple[int, str, list[str]]:
    """``rp1 ARGS`` (made strings) in this process: the exit code, stdout and stderr's lines."""
    from rp1.cli import main

    try:
        code = main([str(a) for a in args])
    except SystemExit as ex:
        code = ex.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip().splitlines()


def one_error(code: int, err: list[str], expected_code: int, *fragments: str) -> None:
    """``err`` is the single line ``rp1: error: …`` holding every fragment, and the code is right."""
    assert code == expected_code and len(err) == 1, (code, err)
    assert err[0].startswith("rp1: error: ") and all(f in err[0] for f in fragments), err


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` and its bytes (what "left untouched" compares)."""
    return {str(p): p.read_bytes() for p in sorted(Path(path).rglob("*")) if p.is_file()}


def read_rows(run_dir: Path) -> list[dict[str, str]]:
    """``metrics.csv`` of ``run_dir`` as dicts of strings."""
    with open(Path(run_dir) / "metrics.csv") as f:
        return list(csv.DictReader(f))


def metrics_without_timing(run_dir: Path) -> list[dict[str, str]]:
    """``metrics.csv`` rows without the wall-clock columns (what must match after a resume)."""
    from rp1.rundir.files import TIMING_COLUMNS

    return [{k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in read_rows(run_dir)]


# --- other processes -------------------------------------------------------------------------


def subprocess_env(**extra: str) -> dict[str, str]:
    """This process's environment with ``src`` and ``tests`` first on ``PYTHONPATH`` (absolute),
    unbuffered output, and ``extra``."""
    path = os.pathsep.join(
        [str(ROOT / "src"), str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path, **extra}


def driver_cmd(ready: Path, *options: str) -> list[str]:
    """``rp1`` through :mod:`cli_driver` (see there for ``options``), which writes ``ready`` when
    it holds; the rp1 arguments go after it: ``[*driver_cmd(ready, "--hold-train-step"), *args]``."""
    return [sys.executable, str(DRIVER), "--ready", str(ready), *options, "--"]


def wait_for(condition, proc: subprocess.Popen, timeout: float = 300.0) -> None:
    """Poll ``condition()`` until it holds; fail (with the process's stderr) if ``proc`` ends or
    ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(
                f"the process ended (code {proc.returncode}) before it got there: {proc.communicate()[1]}"
            )
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("timed out")
        time.sleep(0.02)


def kill_at_pause(args: list[str], ready: Path, *options: str) -> None:
    """Run ``rp1 ARGS`` through the driver with its pause ``options`` and SIGKILL it once it
    holds at the pause (its ``ready`` file exists): a kill at a known point, not a race."""
    proc = subprocess.Popen(
        [*driver_cmd(ready, *options), *args],
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(ready.exists, proc)
    finally:
        proc.kill()
        proc.communicate()


def run_cli_unprivileged(*commands: list[str]) -> list[tuple[int, list[str]]]:
    """Each ``rp1 ARGS`` of ``commands``, one after another in one process that obeys file
    permissions also as root (:mod:`cli_driver` ``--unprivileged``), with the compilation cache
    off: every command's exit code and stderr lines."""
    args = [arg for command in commands for arg in ("--", *command)]
    done = subprocess.run(
        [sys.executable, str(DRIVER), "--unprivileged", *args],
        env=subprocess_env(RP1_JAX_CACHE=""),
        capture_output=True,
        text=True,
        timeout=300,
    )
    results, lines = [], []
    for line in done.stderr.strip().splitlines():
        if line.startswith("cli_driver: exit "):
            results.append((int(line.split()[-1]), lines))
            lines = []
        else:
            lines.append(line)
    assert len(results) == len(commands), done.stderr
    return results


# --- crashes in this process -------------------------------------------------------------------


class Crash(Exception):
    """Raised by :func:`crash_after_steps` in place of the agent's next step."""


def before_each_step(monkeypatch, make_hook) -> None:
    """From now on every agent ``rp1.train`` makes calls a hook of its own, ``make_hook()``, with
    no arguments before each of its steps (a hook that raises stops the step)."""
    import rp1.train

    make_agent = rp1.train.make_agent

    def hooked(cfg):
        agent = make_agent(cfg)
        step, hook = agent.step, make_hook()

        def stepped(state):
            hook()
            return step(state)

        agent.step = stepped
        return agent

    monkeypatch.setattr(rp1.train, "make_agent", hooked)


def before_each_save(monkeypatch, hook) -> None:
    """From now on every checkpoint save calls ``hook(state)``, with the packed checkpoint it is
    about to write (a hook that raises stops the save)."""
    from rp1.rundir.files import RunDir

    save = RunDir.save_checkpoint

    def hooked(self, state):
        hook(state)
        save(self, state)

    monkeypatch.setattr(RunDir, "save_checkpoint", hooked)


def crash_after_steps(monkeypatch, steps: int) -> None:
    """Make the next ``rp1.train.run_training`` die (raise :class:`Crash`) after ``steps``
    iterations, as a kill would leave the run: its rows and checkpoint written up to then."""

    def counter():
        done = []

        def count():
            if len(done) == steps:
                raise Crash
            done.append(1)

        return count

    before_each_step(monkeypatch, counter)


def crash_before_checkpoint(monkeypatch, saves: int) -> None:
    """Make the next run die (raise :class:`Crash`) when it would write its checkpoint the
    ``saves + 1``-th time: that step's row and outputs are written, its checkpoint is not."""
    saved = []

    def count(state):
        if len(saved) == saves:
            raise Crash
        saved.append(1)

    before_each_save(monkeypatch, count)


def fill_disk(monkeypatch, name: str = "") -> None:
    """From now on every file rp1 replaces atomically (:func:`rp1.core.storage.write_atomically`), or only
    those whose name holds ``name``, is written to ``/dev/full``, which fails as a full disk does
    (ENOSPC)."""
    import rp1.core.storage

    mkstemp = rp1.core.storage.tempfile.mkstemp

    def full_mkstemp(*args, **kwargs):
        fd, path = mkstemp(*args, **kwargs)
        if name not in Path(path).name:
            return fd, path
        full = os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, fd)
        os.close(full)
        return fd, path

    monkeypatch.setattr(rp1.core.storage.tempfile, "mkstemp", full_mkstemp)


# --- compilations ---------------------------------------------------------------------------------


def count_traces(monkeypatch, module, name: str, **jit_options) -> list[int]:
    """Replace the jitted function ``module.name`` by a fresh ``jax.jit`` (with ``jit_options``,
    as the original was compiled) of the same Python body that appends to the returned list every
    time it is traced. The fresh jit has an empty cache, so the list counts every trace from here
    on (every compilation follows a trace)."""
    import jax

    body, traces = getattr(module, name).__wrapped__, []

    def counted(*args, **kwargs):
        traces.append(1)
        return body(*args, **kwargs)

    monkeypatch.setattr(module, name, jax.jit(counted, **jit_options))
    return traces


def host_reads(monkeypatch) -> list[str]:
    """Record every read of device values by the host from here on: ``"device_get"`` for a call of
    ``jax.device_get`` with a device array in it, ``"implicit"`` for an array brought to the host
    outside such a call (``bool(x)``, ``float(x)``, ``np.asarray(x)``, …)."""
    import jax
    from jax._src.array import ArrayImpl

    reads, inside = [], [False]
    # the method every copy to the host goes through (renamed after jax 0.4.33, the lowest version)
    name = next(
        name
        for name in (
            "_single_device_array_to_np_array_did_copy",
            "_single_device_array_to_np_array",
        )
        if hasattr(ArrayImpl, name)
    )
    to_host, device_get = getattr(ArrayImpl, name), jax.device_get

    def converting(self):
        if not inside[0]:
            reads.append("implicit")
        return to_host(self)

    def getting(tree):
        if any(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(tree)):
            reads.append("device_get")
        inside[0] = True
        try:
            return device_get(tree)
        finally:
            inside[0] = False

    monkeypatch.setattr(ArrayImpl, name, converting)
    monkeypatch.setattr(jax, "device_get", getting)
    return reads


# --- TensorBoard ---------------------------------------------------------------------------------


def read_events(directory: Path) -> list:
    """Every TensorBoard event of the event files in ``directory`` (TFRecords: length, its CRC,
    data, its CRC), parsed with tensorboardX's protocol buffers."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    events = []
    for path in sorted(Path(directory).glob("events.out.tfevents.*")):
        data = path.read_bytes()
        at = 0
        while at < len(data):
            (length,) = struct.unpack_from("<Q", data, at)
            events.append(Event.FromString(data[at + 12 : at + 12 + length]))
            at += 12 + length + 4
    return events


def rewrite_meta(path: Path, change) -> None:
    """Replace the metadata of the policy file ``path`` by ``change(meta)``, sealed again (its
    checksum matches: the checks of the metadata must find it)."""
    from rp1.rundir.sealed import seal, unseal

    data, _ = unseal(path.read_bytes(), path, "policy file")
    data["meta"] = json.dumps(change(json.loads(data["meta"])))
    path.write_bytes(seal(data))
