"""Where the runs under a directory stand (``rp1 status``): per run, the real samples it has
collected of its budget, whether it is finished, running or stopped, its best evaluation return and
the work it has taken so far — read from its files, without taking its lock.

A run is *finished* once its ``finished`` marker exists; *complete* when it has reached its budget
without one (a copy of its results, such as ``rp1 export`` writes); *running* while its lock file
names a live process on this host; *running on HOST* when it names a process on another host (whose
liveness cannot be seen from here); else *stopped* (``rp1 train --resume`` or the sweep continues
it). A run directory whose files cannot be read is *unreadable*, with the reason.
"""

from __future__ import annotations

import math
import os
import socket
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rp1.core.errors import ConfigError
from rp1.report import curves
from rp1.report.runs_table import read_config, read_metrics, samples_reached
from rp1.rundir.files import RunDir, find_run_dirs
from rp1.rundir.lock import LOCK, read_holder

FINISHED, COMPLETE, RUNNING, STOPPED, UNREADABLE = (
    "finished",
    "complete",
    "running",
    "stopped",
    "unreadable",
)
STATES = (FINISHED, COMPLETE, RUNNING, STOPPED, UNREADABLE)
"""The states of a run (module docstring), in the order the status counts them."""


class RunStatus(NamedTuple):
    """One run: ``run`` its path under the root; ``reached`` the real samples it has collected,
    of ``budget``; ``state`` (module docstring); ``best`` its best evaluation return of a trained
    policy (NaN before one); ``work_s`` the seconds its iterations took (``wall_s``, summed over
    every process that ran it); ``note`` why it is unreadable, or the host it runs on."""

    run: str
    reached: float
    budget: float
    state: str
    best: float
    work_s: float
    note: str = ""

    def to_json(self) -> dict[str, str | float | None]:
        """Its fields by name, for ``rp1 status --json`` (``None``, JSON's ``null``, for a number
        that is not finite)."""
        return {
            key: None if isinstance(value, float) and not math.isfinite(value) else value
            for key, value in self._asdict().items()
        }


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by another user
        return True
    return True


def run_state(run_dir: Path, reached: float, budget: float) -> tuple[str, str]:
    """(state, note) of the run in ``run_dir``, which has collected ``reached`` real samples of
    its ``budget`` (see the module docstring)."""
    if RunDir(run_dir).is_finished():
        return FINISHED, ""
    if reached >= budget:
        return COMPLETE, ""
    if not (run_dir / LOCK).exists():
        return STOPPED, ""
    holder = read_holder(run_dir / LOCK)
    if holder is None:  # being written or removed this instant
        return RUNNING, ""
    if holder.host != socket.gethostname():
        return RUNNING, f"on {holder.host}"
    return (RUNNING, "") if alive(holder.pid) else (STOPPED, "")


def run_status(root: Path, run_dir: Path) -> RunStatus:
    """The status of the run in ``run_dir``, named by its path under ``root``."""
    name = run_dir.relative_to(root).as_posix()
    try:
        config = read_config(run_dir)
        metrics, _ = read_metrics(run_dir, name)
        budget = float(config["budget"])
        reached = samples_reached(metrics, config["method"]) if len(metrics) else 0.0
        state, note = run_state(run_dir, reached, budget)
    except (ConfigError, OSError) as err:
        return RunStatus(name, math.nan, math.nan, UNREADABLE, math.nan, math.nan, str(err))
    return RunStatus(
        name,
        reached,
        budget,
        state,
        curves.best_trained(metrics),
        float(metrics["wall_s"].fillna(0).sum()),
        note,
    )


def sweep_status(root: Path) -> list[RunStatus]:
    """The status of every run directory under ``root`` (any depth), by path; ConfigError when
    there is none."""
    return [run_status(root, run) for run in find_run_dirs(root)]


def count(samples: float) -> str:
    """A sample count in few characters: ``950``, ``53.6k``, ``100k``, ``5M``."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if samples >= scale:
            return f"{round(samples / scale, 1):g}{suffix}"
    return f"{samples:.0f}"


def clock(seconds: float) -> str:
    """``h:mm`` of ``seconds`` (empty for NaN)."""
    if math.isnan(seconds):
        return ""
    minutes = round(seconds / 60)
    return f"{minutes // 60}:{minutes % 60:02d}"


def print_status(statuses: list[RunStatus]) -> None:
    """A table of ``statuses`` (run, samples of budget, state, best return, work in h:mm), a line
    per unreadable run with its reason, and the count of each state."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("run", "samples", "state", "best", "work"):
        table.add_column(column, overflow="fold", no_wrap=column != "state")
    styles = {
        FINISHED: "green",
        COMPLETE: "green",
        RUNNING: "cyan",
        STOPPED: "yellow",
        UNREADABLE: "bold red",
    }
    for s in statuses:
        samples = "" if math.isnan(s.budget) else f"{count(s.reached)} / {count(s.budget)}"
        note = f" {s.note}" if s.note and s.state != UNREADABLE else ""
        table.add_row(
            s.run,
            samples,
            f"[{styles[s.state]}]{s.state}{note}[/]",
            "" if math.isnan(s.best) else f"{s.best:.1f}",
            clock(s.work_s),
        )
    console = Console()
    console.print(table)
    for s in statuses:
        if s.state == UNREADABLE:
            console.print(Text(f"{s.run}: {s.note}"), soft_wrap=True)
    counts = Counter(s.state for s in statuses)
    console.print(
        f"{len(statuses)} runs: " + ", ".join(f"{counts[state]} {state}" for state in STATES)
    )
