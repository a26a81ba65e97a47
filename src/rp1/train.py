"""Drive a run to its budget: run directory, checkpoint per iteration, resume, progress bar.

Any agent with ``initial_state()``, ``step(state) -> (state, row)``, ``checkpoint(state)`` and
``restore(data)`` and states with ``samples`` and ``rows`` can be driven: the model-based
:class:`~rp1.agent.ModelBasedAgent` and the model-free PPO agent alike.
"""

from __future__ import annotations

import math
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from rp1.config import Config, validate
from rp1.runs import RunDir


def make_agent(cfg: Config):
    """The agent that runs ``cfg.method``."""
    if cfg.method == "modelfree":
        from rp1.modelfree import ModelFreeAgent

        return ModelFreeAgent(cfg)
    from rp1.agent import ModelBasedAgent

    return ModelBasedAgent(cfg)


def _fmt(value, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def run_training(cfg: Config, out: str | Path, resume: bool = False, progress: bool = True) -> Path:
    """Train ``cfg`` in run directory ``out`` until ``cfg.budget`` real samples; returns ``out``.

    Checks the directory first (see :meth:`RunDir.prepare`): nothing is written on bad input.
    With ``resume``, continues from the checkpoint exactly where the killed run stopped.
    """
    validate(cfg)
    run = RunDir(out)
    run.prepare(cfg.to_dict(), resume)
    agent = make_agent(cfg)
    state = agent.restore(run.load_checkpoint()) if resume else agent.initial_state()
    run.write_metrics(state.rows)
    last = state.rows[-1] if state.rows else {}
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} samples"),
        TextColumn("λ {task.fields[lam]}  eval {task.fields[ret]}"),
        TimeElapsedColumn(),
        disable=not progress,
    ) as bar:
        task = bar.add_task(cfg.preset, total=cfg.budget, completed=state.samples, lam="–", ret=_fmt(last.get("eval_return"), ".1f"))
        while state.samples < cfg.budget:
            state, row = agent.step(state)
            run.append_metrics(row)
            run.save_checkpoint(agent.checkpoint(state))
            bar.update(task, completed=min(state.samples, cfg.budget), lam=_fmt(row.get("lambda"), ".1f"), ret=_fmt(row.get("eval_return"), ".1f"))
    run.mark_finished()
    return Path(out)
