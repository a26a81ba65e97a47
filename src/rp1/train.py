"""Drive a run to its budget: run directory, checkpoint per iteration, resume, progress bar,
interrupts.

Any :class:`~rp1.protocol.Agent` can be driven: the model-based
:class:`~rp1.agent.ModelBasedAgent` and the model-free PPO agent alike. Drawing the run's learning
curve is left to the layers above (``rp1 train``, ``rp1 sweep``).
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import signal
import threading
from pathlib import Path
from typing import Iterator

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from rp1.compilation import enable_compilation_cache
from rp1.config import Config, validate
from rp1.errors import ConfigError
from rp1.protocol import Agent
from rp1.run_outputs import RunOptions, RunOutputs
from rp1.runs import RunDir


def make_agent(cfg: Config) -> Agent:
    """The agent that runs ``cfg.method``."""
    if cfg.method == "modelfree":
        from rp1.modelfree import ModelFreeAgent

        return ModelFreeAgent(cfg)
    from rp1.agent import ModelBasedAgent

    return ModelBasedAgent(cfg)


def _fmt(value, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def run_training(
    cfg: Config, out: str | Path, resume: bool = False, progress: bool = True, overwrite: bool = False, options: RunOptions | None = None
) -> Path:
    """Train ``cfg`` in run directory ``out`` until ``cfg.budget`` real samples; returns ``out``.

    Checks the config (:func:`~rp1.config.validate`) and the directory (:meth:`RunDir.prepare`)
    first: on bad input (:class:`~rp1.errors.ConfigError`) nothing is written. With ``resume``,
    continues from the checkpoint exactly where the killed run stopped (a run killed before its
    first checkpoint starts afresh); with ``overwrite``, replaces the run in ``out``. After every
    iteration the metrics row is flushed and the checkpoint replaced atomically, so a kill at any
    moment leaves a run that ``resume`` continues identically. ``options`` say what the run logs
    besides (:class:`~rp1.run_outputs.RunOptions`: videos, TensorBoard; the policy files always).
    """
    validate(cfg)
    options = options or RunOptions()
    options.check(cfg)
    run = RunDir(out)
    saved = run.prepare(cfg.to_dict(), resume=resume, overwrite=overwrite)
    enable_compilation_cache()
    agent = make_agent(cfg)
    try:
        drive(agent, cfg, run, saved, progress, options)
    finally:
        agent.close()
    run.mark_finished()
    return Path(out)


def drive(agent: Agent, cfg: Config, run: RunDir, saved: dict | None, progress: bool, options: RunOptions | None = None) -> None:
    """Step ``agent`` from a fresh or ``saved`` state to ``cfg.budget``, writing every row, the
    run's outputs (:class:`~rp1.run_outputs.RunOutputs`: policy files, ``options``) and the
    checkpoint to ``run`` as it goes, in that order, with a progress bar unless ``progress`` is False."""
    state = agent.initial_state() if saved is None else restore_state(agent, saved, run)
    run.write_metrics(state.rows)
    last = state.rows[-1] if state.rows else {}
    outputs = RunOutputs(run.path, cfg, agent.task, state.rows, options or RunOptions())
    with contextlib.closing(outputs), Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} samples"),
        TextColumn("λ {task.fields[lam]}  eval {task.fields[ret]}  {task.fields[rate]} steps/s"),
        TimeElapsedColumn(),
        disable=not progress,
    ) as bar:
        ret = _fmt(last.get("eval_return"), ".1f")
        task = bar.add_task(cfg.preset, total=cfg.budget, completed=state.samples, lam="–", ret=ret, rate=_fmt(last.get("steps_per_s"), ",.0f"))
        while state.samples < cfg.budget:
            state, row = agent.step(state)
            run.append_metrics(row)
            outputs.after_step(agent.policy_snapshot(state), row)
            run.save_checkpoint(agent.checkpoint(state))
            ret = _fmt(row["eval_return"], ".1f") if row.get("eval_return") is not None else ret  # the latest evaluation
            rate = _fmt(row.get("steps_per_s"), ",.0f")  # real env steps per second while collecting
            bar.update(task, completed=min(state.samples, cfg.budget), lam=_fmt(row.get("lambda"), ".1f"), ret=ret, rate=rate)


def restore_state(agent: Agent, saved: dict, run: RunDir):
    """``agent.restore(saved)``; ConfigError naming the checkpoint if it does not fit the agent."""
    try:
        return agent.restore(saved)
    except (KeyError, ValueError, TypeError) as err:
        raise ConfigError(f"checkpoint {run.checkpoint_path} does not hold a state of this run ({type(err).__name__}: {err})") from None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def exit_on_signals(message: str) -> Iterator[None]:
    """While active, SIGINT and SIGTERM end the process at once, even in the middle of a compiled
    JAX call: one line ``rp1: interrupted (SIGINT); <message>`` on stderr, exit code 128 + the
    signal's number (130, 143).

    Files are left as a SIGKILL would leave them, which a run survives: its checkpoint is replaced
    atomically, so the last one stays valid. (A ``KeyboardInterrupt`` would not do: raised while
    JAX runs a garbage-collection callback, Python prints and drops it and the run goes on.) A
    thread watches a wakeup pipe that the interpreter writes the signal's number to from its C
    handler, so the exit does not wait for the main thread; it kills the daemonic child processes
    (environment workers) first, as a normal exit would end them. Outside the main thread this
    does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    watcher = threading.Thread(target=_exit_on_signal_byte, args=(read_fd, message), name="rp1-signals", daemon=True)
    watcher.start()
    handlers = {sig: signal.signal(sig, lambda *_: None) for sig in STOP_SIGNALS}
    wakeup_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(wakeup_fd)
        os.write(write_fd, b"\0")  # not a signal number: ends the watcher
        watcher.join()
        os.close(read_fd)
        os.close(write_fd)


def _exit_on_signal_byte(read_fd: int, message: str) -> None:
    while (byte := os.read(read_fd, 1)) not in (b"", b"\0"):
        if byte[0] in STOP_SIGNALS:
            for child in multiprocessing.active_children():
                if child.daemon:  # as a normal exit would (environment workers), without their complaints
                    child.kill()
            if os.isatty(1):
                os.write(1, b"\x1b[?25h\n")  # the progress bar hid the cursor
            os.write(2, f"rp1: interrupted ({signal.Signals(byte[0]).name}); {message}\n".encode())
            os._exit(128 + byte[0])
