"""Test-only driver: ``rp1`` (``rp1.cli.main``) held at a known point, so that a test kills or
signals it there and not wherever a timer happens to land.

    python tests/cli_driver.py [--ready FILE] [--pause-after-row N --at metrics|checkpoint [--in-workers]]
                               [--hold-train-step] [--unprivileged] -- RP1_ARGS… [-- RP1_ARGS…]

Each ``-- RP1_ARGS…`` is one ``rp1`` command, run one after another in this process; after each
the driver writes ``cli_driver: exit CODE`` on stderr. Its exit code is the last command's.

- ``--unprivileged``: run in a process that obeys file permissions also as root (CI runs as root):
  the capabilities that bypass them are dropped from the bounding set and the driver executes
  itself again, which leaves it without them (as root, a program's permitted capabilities are the
  bounding set). Its files stay reachable wherever the repository lies, unlike a switch to another
  user. Nothing changes for a user other than root.
- ``--pause-after-row N --at metrics``: after the N-th metrics row is appended, before its
  checkpoint is written; ``--at checkpoint``: right after the N-th checkpoint is written. The
  driver writes FILE and sleeps (``rp1.rundir.files.RunDir`` patched). With ``--in-workers`` (``rp1
  sweep`` on the local backend) each process of the sweep's pool pauses so in its runs, and
  writes ``FILE.PID``, PID its own.
- ``--hold-train-step``: the first policy update of the run (in iteration 1, after the first
  checkpoint) holds inside a compiled JAX call: inside the compiled loop of updates, its step is
  followed by an ``io_callback`` that writes FILE and waits. A signal sent then arrives while the
  main thread is in compiled code.

Either way the process holds until it is killed or signalled, or until the test creates
``FILE.go`` (``FILE.PID.go`` in a sweep's worker); FILE tells the test it got there.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from functools import partial
from pathlib import Path

# Capabilities that let root ignore file permissions (linux/capability.h); prctl's option that
# drops one from the bounding set.
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2
PR_CAPBSET_DROP = 24


def hold(ready: Path) -> None:
    """Say we got there, then wait to be killed, or for a file ``FILE.go`` (``ready`` with
    ``.go`` appended) to exist, then go on."""
    ready.write_text("ready\n")
    go = ready.with_name(f"{ready.name}.go")
    while not go.exists():
        time.sleep(0.05)


def pause_after_row(ready: Path, row: int, at: str) -> None:
    """Patch :class:`rp1.rundir.files.RunDir` to :func:`hold` after the ``row``-th metrics row (``at``
    ``"metrics"``, before its checkpoint) or the ``row``-th checkpoint (``"checkpoint"``)."""
    from rp1.rundir.files import RunDir

    method = {"metrics": "append_metrics", "checkpoint": "save_checkpoint"}[at]
    original, calls = getattr(RunDir, method), []

    def patched(self, *args, **kwargs):
        original(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == row:
            hold(ready)

    setattr(RunDir, method, patched)


def pause_in_workers(ready: Path, row: int, at: str) -> None:
    """Make each process of a local sweep's pool :func:`pause_after_row` (its file: ``ready``
    with ``.PID`` appended)."""
    from rp1.sweep import executors

    executors.start_local_worker = partial(
        start_paused_worker, executors.start_local_worker, ready, row, at
    )


def start_paused_worker(start, ready: Path, row: int, at: str, *args) -> None:
    """A sweep worker's initializer (``start``, with ``args``), then :func:`pause_after_row`."""
    start(*args)
    pause_after_row(ready.with_name(f"{ready.name}.{os.getpid()}"), row, at)


def hold_in_train_step(ready: Path) -> None:
    """Patch the compiled policy update (``rp1.imagination.policy_training._train_step``, the body
    of the updates' compiled loop) so that the first update is followed, inside the loop, by an
    ``io_callback`` that :func:`hold` s."""
    import jax
    from jax.experimental import io_callback

    from rp1.imagination import policy_training

    def wait(updates):
        if updates == 1:
            hold(ready)
        return updates

    step = policy_training._train_step

    @partial(jax.jit, static_argnums=0)
    def holding_step(settings, *args):
        state, metrics = step(settings, *args)
        shape = jax.ShapeDtypeStruct(state.updates.shape, state.updates.dtype)
        return state.replace(updates=io_callback(wait, shape, state.updates)), metrics

    policy_training._train_step = holding_step


def drop_file_privileges_and_restart(argv: list[str]) -> None:
    """Drop the capabilities that bypass file permissions from the bounding set and execute this
    driver again with ``argv`` (without ``--unprivileged``); a no-op for a user other than root."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")
    os.execv(sys.executable, [sys.executable, __file__, *argv])


def main(argv: list[str]) -> int:
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--ready", type=Path)
    parser.add_argument("--pause-after-row", type=int)
    parser.add_argument("--at", choices=("metrics", "checkpoint"), default="checkpoint")
    parser.add_argument("--in-workers", action="store_true")
    parser.add_argument("--hold-train-step", action="store_true")
    parser.add_argument("--unprivileged", action="store_true")
    options = parser.parse_args(argv[:split])
    if options.unprivileged:
        drop_file_privileges_and_restart([a for a in argv if a != "--unprivileged"])
    if options.pause_after_row is not None:
        pause = pause_in_workers if options.in_workers else pause_after_row
        pause(options.ready, options.pause_after_row, options.at)
    if options.hold_train_step:
        hold_in_train_step(options.ready)
    from rp1.cli import main as rp1_main

    commands, current = [], None
    for arg in argv[split:]:
        if arg == "--":
            commands.append(current := [])
        else:
            current.append(arg)
    code = 0
    for command in commands:
        code = rp1_main(command)
        print(f"cli_driver: exit {code}", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
