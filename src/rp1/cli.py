"""The ``rp1`` command line.

Every error a user can act on ends as one line ``rp1: error: …`` on stderr, with exit code 2 for
bad input (:class:`rp1.errors.ConfigError`) and 1 for a file operation the machine failed
(:class:`rp1.errors.StorageError`, or any ``OSError``). ``RP1_DEBUG=1`` shows the traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from rp1.errors import ConfigError, Rp1Error

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Ready Policy One: model-based RL with active data acquisition.",
)


@app.callback()
def _root() -> None:
    """Ready Policy One: model-based RL with active data acquisition."""


@app.command()
def envs(name: str = typer.Argument(None, help="Show only this task.")) -> None:
    """List the tasks with their observation / action sizes and horizons."""
    from rp1 import envs as registry

    selected = [registry.check_name(name)] if name else registry.names()
    typer.echo(f"{'task':<12} {'obs':>4} {'act':>4} {'horizon':>8} {'dt':>6}")
    for task_name in selected:
        env, task = registry.make(task_name)
        env.close()
        typer.echo(
            f"{task.name:<12} {task.obs_dim:>4} {task.act_dim:>4} {task.horizon:>8} {task.dt:>6.3f}"
        )


@app.command()
def presets() -> None:
    """List the presets (the paper's experiments and the quick ones), one line each."""
    from rp1.config import preset_descriptions

    for name, description in preset_descriptions().items():
        typer.echo(f"{name:<24} {description}")


def parse_sets(items: list[str] | None) -> dict[str, str]:
    """``["a.b=1", "c=x"]`` -> ``{"a.b": "1", "c": "x"}``; a malformed item is a ConfigError."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


@app.command()
def train(
    preset: str = typer.Option(..., "--preset", "-p", help="A preset name (see `rp1 presets`)."),
    scale: Optional[str] = typer.Option(None, "--scale", help="small or paper (default: the preset's); applied before --set."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed (default: the preset's, 0)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/PRESET/seedK)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Real-sample budget."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out from its checkpoint."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Delete the run in --out and start afresh."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override a config value: key=value."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Env worker processes (model-free)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Train one run: RP1 or a baseline, model-based or model-free, as the preset says.

    Ctrl-C (SIGINT) or SIGTERM stops the run at once (exit code 130 or 143); --resume continues it.
    """
    from rp1.config import resolve
    from rp1.experiments.figures import write_learning_curve
    from rp1.train import exit_on_signals, run_training

    overrides = parse_sets(set_)
    if workers is not None:
        overrides["modelfree.workers"] = str(workers)
    cfg = resolve(preset, seed=seed, budget=budget, overrides=overrides, scale=scale)
    out = out or Path("runs") / cfg.preset / f"seed{cfg.seed}"
    again = "--resume instead of --overwrite" if overwrite else "--resume"
    with exit_on_signals(f"continue the run in {out} with the same command and {again}"):
        run_training(cfg, out, resume=resume, overwrite=overwrite, progress=not quiet)
    curve = write_learning_curve(out, cfg.preset)
    if not quiet:
        typer.echo(run_summary(out, curve))


def run_summary(run_dir: Path, curve: Path | None) -> str:
    """What a finished run reached and where its results are, for the end of ``rp1 train``: the
    best evaluation of a trained policy (iteration ≥ 1, as ``rp1 report`` counts) and the first
    evaluation (the untrained policy's)."""
    import pandas as pd

    from rp1.runs import METRICS

    evals = pd.read_csv(run_dir / METRICS).dropna(subset=["eval_return"])
    trained = evals[evals["iteration"] >= 1]
    lines = []
    if not evals.empty:
        first = evals["eval_return"].iloc[0]
        if trained.empty:
            lines.append(f"no trained policy was evaluated (first evaluation {first:.1f})")
        else:
            best = trained.loc[trained["eval_return"].idxmax()]
            lines.append(f"best evaluation return {best['eval_return']:.1f} (at {int(best['samples']):,} samples; first evaluation {first:.1f})")
    lines.append(f"metrics:        {run_dir / METRICS}")
    if curve is not None:
        lines.append(f"learning curve: {curve}")
    return "\n".join(lines)


def parse_seeds(text: str) -> list[int]:
    """``"0-9"`` or ``"0,2,5"`` or ``"0-2,7"`` -> sorted unique seeds; ConfigError if malformed."""
    seeds: set[int] = set()
    try:
        for part in text.split(","):
            lo, sep, hi = part.strip().partition("-")
            seeds.update(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    except ValueError:
        raise ConfigError(f"--seeds expects e.g. 0-9 or 0,2,5, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise ConfigError(f"--seeds must name seeds >= 0, got {text!r}")
    return sorted(seeds)


@app.command()
def sweep(
    presets_: str = typer.Option(..., "--presets", help="Comma-separated preset names."),
    seeds: str = typer.Option("0-9", "--seeds", help="Seeds, e.g. 0-9 or 0,3,5."),
    out: Path = typer.Option(..., "--out", help="Sweep directory: OUT/<preset>/seed<k>/."),
    backend: str = typer.Option("local", "--backend", help="local (process pool) or ray."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Runs at a time (local backend)."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (ray backend)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Real-sample budget of every run."),
    scale: Optional[str] = typer.Option(None, "--scale", help="small or paper for every run (default: each preset's)."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override a config value: key=value."),
) -> None:
    """Run every (preset, seed): skip finished runs, resume unfinished ones, run the rest."""
    from rp1.experiments.sweep import run_sweep
    from rp1.runs import check_writable_dir

    check_writable_dir(out)

    names = [p.strip() for p in presets_.split(",") if p.strip()]
    code = run_sweep(
        names, parse_seeds(seeds), out, backend=backend, workers=workers, address=address,
        budget=budget, overrides=parse_sets(set_), scale=scale,
    )
    raise typer.Exit(code)


@app.command()
def report(
    root: Path = typer.Argument(..., help="A tree of run directories."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default: ROOT/report)."),
) -> None:
    """Tables (Markdown + CSV) and figures (PNG) of the paper from run directories."""
    from rp1.experiments.report import write_report
    from rp1.runs import check_writable_dir

    if not root.is_dir():
        raise ConfigError(f"no such directory: {root}")
    out = out or root / "report"
    check_writable_dir(out)
    written = write_report(root, out)
    typer.echo(f"wrote {len(written)} files to {out}")


INTERRUPTED = 130  # 128 + SIGINT


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    An :class:`~rp1.errors.Rp1Error` or ``OSError`` becomes one line ``rp1: error: …`` on stderr
    and its exit code (``OSError``: 1); with ``RP1_DEBUG=1`` it propagates with its traceback. A
    Ctrl-C while the command starts up (before a run stops on signals itself,
    :func:`rp1.train.exit_on_signals`) is one line and exit code 130.
    """
    try:
        app(args=argv, prog_name="rp1")
    except SystemExit as ex:  # raised by click at the end of every command
        if ex.code == INTERRUPTED:  # typer's exit on a Ctrl-C before a run installs its handler
            typer.echo("rp1: interrupted (SIGINT)", err=True)
        return ex.code if isinstance(ex.code, int) else (0 if ex.code is None else 1)
    except (Rp1Error, OSError) as err:
        if os.environ.get("RP1_DEBUG") == "1":
            raise
        typer.echo(f"rp1: error: {_one_line(err)}", err=True)
        return err.exit_code if isinstance(err, Rp1Error) else 1
    return 0


def _one_line(err: Exception) -> str:
    """The message of ``err`` on one line; an ``OSError`` with its file and cause."""
    if isinstance(err, OSError) and not isinstance(err, Rp1Error) and err.strerror:
        text = f"{err.filename}: {err.strerror}" if err.filename else err.strerror
    else:
        text = str(err)
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
