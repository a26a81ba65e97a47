"""Shared fixtures: tiny configs that run the whole RP1 loop on CPU in seconds."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

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


def tiny_sets(**extra: str) -> list[str]:
    """``--set`` arguments of the tiny config, plus ``extra`` (``key=value``)."""
    items = {**TINY, **{k.replace("__", "."): v for k, v in extra.items()}}
    return [f"{k}={v}" for k, v in items.items()]


def kill_after_rows(cmd: list[str], run_dir, rows: int, timeout: float = 300.0) -> None:
    """Start ``cmd`` (an ``rp1 train`` subprocess writing to ``run_dir``), SIGKILL it as soon as its
    ``metrics.csv`` holds ``rows`` rows, and check it had not finished by then."""
    import signal
    import subprocess
    import time

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    metrics = run_dir / "metrics.csv"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 1 + rows:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (run_dir / "finished").exists(), "the run ended before it could be killed"


def metrics_without_timing(run_dir) -> list[dict]:
    """``metrics.csv`` rows without the wall-clock columns (what must match after a resume)."""
    import csv

    from rp1.runs import TIMING_COLUMNS

    with open(run_dir / "metrics.csv") as f:
        return [{k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in csv.DictReader(f)]


class Crash(Exception):
    """Raised by :func:`crash_after_steps` in place of the agent's next step."""


def crash_after_steps(monkeypatch, steps: int) -> None:
    """Make the next ``rp1.train.run_training`` die (raise :class:`Crash`) after ``steps``
    iterations, as a kill would leave the run: its rows and checkpoint written up to then."""
    import rp1.train

    make_agent = rp1.train.make_agent

    def crashing(cfg):
        agent = make_agent(cfg)
        step, done = agent.step, []

        def limited(state):
            if len(done) == steps:
                raise Crash
            done.append(1)
            return step(state)

        agent.step = limited
        return agent

    monkeypatch.setattr(rp1.train, "make_agent", crashing)


def read_events(directory) -> list:
    """Every TensorBoard event of the event files in ``directory`` (TFRecords: length, its CRC,
    data, its CRC), parsed with tensorboardX's protocol buffers."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    events = []
    for path in sorted(directory.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        at = 0
        while at < len(data):
            (length,) = struct.unpack_from("<Q", data, at)
            events.append(Event.FromString(data[at + 12 : at + 12 + length]))
            at += 12 + length + 4
    return events
