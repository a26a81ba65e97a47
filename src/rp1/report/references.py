"""What a preset's run usually reaches: the reference seeds a preset ships, and where one run
stands among them (``rp1 train``'s last lines, the band behind ``learning_curve.png``).

A reference (:class:`Reference`) is made from committed runs of one preset, scale and budget
(:func:`make_reference`): per seed its best evaluation return of a trained policy (what
``rp1 train`` reports as a run's best) and its return at the budget (the evaluation return in
``metrics.csv`` of the policy in force at N), and, on the evaluation grid, the quartiles over
seeds of the return of the policy in force. It is package data,
``references/<preset>-<budget>.json`` (a preset may have one per budget), read back checked
(:func:`read_reference`). A run is compared only with the reference of its own preset, scale and
budget (:func:`reference_for`); the reference's seeds ran on one CPU with one commit of rp1 (its
``source``), and another CPU's last bits grow into another run, so a run outside their range is
not by itself a fault.

``python -m rp1.report.references RUNS PRESET`` writes the reference of the runs of
``PRESET`` under ``RUNS`` (one budget) into the package's ``references/`` folder.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from rp1.core.storage import write_atomically
from rp1.report.fair import in_force_returns, policy_grid
from rp1.report.runs_table import load_runs
from rp1.rundir.files import RunDir, evaluates_trained

REFERENCES = Path(str(resources.files("rp1.report") / "references"))
"""Where the presets' references are (package data): ``<preset>-<budget>.json``
(:func:`reference_path`)."""

SEEDS_DOC = "docs/getting-started.md#how-long-it-takes"
"""Where the docs say why runs of one preset differ by seed and by CPU."""


class Reference(NamedTuple):
    """A preset's reference seeds: ``preset``, ``scale`` and ``budget`` (real samples) they ran
    with; ``source`` (where the runs are and what made them); per seed, in ``seeds`` order, its
    ``best`` evaluation return of a trained policy and its ``final`` return at the budget; and
    ``band``, per grid point (``samples``), the 25th percentile, median and 75th percentile over
    seeds of the return of the policy in force (columns ``samples``, ``q25``, ``median``,
    ``q75``)."""

    preset: str
    scale: str
    budget: int
    source: str
    seeds: tuple[int, ...]
    best: np.ndarray
    final: np.ndarray
    band: pd.DataFrame


BAND_COLUMNS = ("samples", "q25", "median", "q75")


def make_reference(root: Path, preset: str, source: str) -> Reference:
    """The reference of the finished runs of ``preset`` under ``root`` (one scale and budget,
    each run to its budget; ValueError otherwise), described by ``source``."""
    loaded = load_runs(root)
    metrics = loaded.metrics[loaded.metrics["preset"] == preset]
    if metrics.empty:
        raise ValueError(f"{root} holds no run of {preset}")
    scales, budgets = set(metrics["scale"]), set(metrics["budget"])
    if len(scales) != 1 or len(budgets) != 1:
        raise ValueError(f"{preset}'s runs under {root} mix scales {scales} or budgets {budgets}")
    (budget,) = budgets
    runs = sorted(set(metrics["run"]))
    evaluations = loaded.evaluations
    if evaluations is not None:
        evaluations = evaluations[evaluations["run"].isin(runs)]
    grid = policy_grid(metrics, evaluations)
    at = grid.pivot(index="samples", columns="run", values="eval_return")
    if int(at.index.max()) < budget or at.loc[budget].isna().any():
        raise ValueError(f"not every run of {preset} under {root} reached {budget:,} samples")
    seeds, best, final = [], [], []
    for _, rows in metrics.groupby("run", sort=True):
        trained = rows[evaluates_trained(rows["iteration"])].dropna(subset=["eval_return"])
        seeds.append(int(rows["seed"].iloc[0]))
        best.append(float(trained["eval_return"].max()))
        final.append(final_return(rows, budget))
    quartiles = at.quantile([0.25, 0.5, 0.75], axis=1).T
    band = pd.DataFrame(
        {
            "samples": at.index.to_numpy(int),
            "q25": quartiles[0.25].to_numpy(float),
            "median": quartiles[0.5].to_numpy(float),
            "q75": quartiles[0.75].to_numpy(float),
        }
    )
    scale = str(next(iter(scales)))
    return Reference(
        preset, scale, int(budget), source, tuple(seeds), np.array(best), np.array(final), band
    )


def final_return(rows: pd.DataFrame, budget: int) -> float:
    """The evaluation return of the policy in force at ``budget`` real samples
    (:func:`~rp1.report.fair.in_force_returns`), from one run's ``metrics.csv`` rows."""
    at = in_force_returns(rows.sort_values("samples", kind="stable"), np.array([budget], float))
    return float(at[0])


def reference_json(reference: Reference) -> dict[str, Any]:
    """``reference`` as its JSON file holds it."""
    return {
        "preset": reference.preset,
        "scale": reference.scale,
        "budget": reference.budget,
        "source": reference.source,
        "seeds": list(reference.seeds),
        "best": reference.best.tolist(),
        "final": reference.final.tolist(),
        "band": {column: reference.band[column].tolist() for column in BAND_COLUMNS},
    }


def read_reference(path: Path) -> Reference:
    """The reference in ``path``, checked: every field there and of its type, one best and one
    final return per seed, the band's columns of one length with ascending samples, every number
    finite; ValueError naming the file and what is wrong otherwise (and where it cannot be
    read)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        seeds = tuple(int(seed) for seed in data["seeds"])
        best = np.asarray(data["best"], dtype=float)
        final = np.asarray(data["final"], dtype=float)
        band = pd.DataFrame({column: data["band"][column] for column in BAND_COLUMNS}, dtype=float)
        reference = Reference(
            str(data["preset"]),
            str(data["scale"]),
            int(data["budget"]),
            str(data["source"]),
            seeds,
            best,
            final,
            band.astype({"samples": int}),
        )
        if best.ndim != 1 or final.ndim != 1:
            raise ValueError("its best and final returns are not lists of numbers")
    except (OSError, ValueError, KeyError, TypeError, ArithmeticError) as error:
        raise ValueError(f"reference {path} is not readable: {error}") from None
    numbers = np.concatenate([best, final, band.to_numpy(float).ravel()])
    if (
        len(best) != len(seeds)
        or len(final) != len(seeds)
        or not seeds
        or not np.all(np.isfinite(numbers))
        or not band["samples"].is_monotonic_increasing
    ):
        raise ValueError(
            f"reference {path} is damaged: it needs a finite best and final return per seed and "
            "a band of finite quartiles over ascending samples"
        )
    return reference


def reference_path(directory: Path, preset: str, budget: int) -> Path:
    """Where ``directory`` keeps the reference of ``preset`` at ``budget`` real samples."""
    return Path(directory) / f"{preset}-{budget}.json"


def reference_for(config: dict[str, Any], directory: Path = REFERENCES) -> Reference | None:
    """The reference in ``directory`` of a run whose ``config.json`` is ``config``: that of its
    preset and budget, if it was made at the run's scale; None otherwise, and None with one
    warning line naming the file and the cause (:func:`warn_once`) where it cannot be read
    (:func:`read_reference`): a reference is an extra, which a run's files never wait on."""
    preset, budget = str(config.get("preset", "")), config.get("budget")
    if not preset or "/" in preset or not isinstance(budget, int):
        return None
    path = reference_path(directory, preset, budget)
    if not path.is_file():
        return None
    try:
        reference = read_reference(path)
    except ValueError as error:
        warn_once(f"{error}; the run's summary and learning curve go without it")
        return None
    if (reference.scale, reference.budget) != (config.get("scale"), config.get("budget")):
        return None
    return reference


WARNED: set[str] = set()
"""The warnings :func:`warn_once` has printed in this process."""


def warn_once(message: str) -> None:
    """``message`` as one warning line on stderr (``rp1: warning: …``), once per process: a run's
    summary and its learning curve read the same reference, and its damage costs one line."""
    line = "rp1: warning: " + " ".join(message.split())
    if line not in WARNED:
        WARNED.add(line)
        print(line, file=sys.stderr)


def run_reference(run: RunDir, directory: Path = REFERENCES) -> Reference | None:
    """:func:`reference_for` of the run in ``run`` (None where it has no readable config)."""
    config = run.read_config()
    return None if config is None else reference_for(config, directory)


def standing(value: float, values: np.ndarray) -> str:
    """Where ``value`` stands among ``values``, in words: below or above all of them, below the
    25th percentile, between two quartiles, or above the 75th, with the quartile named."""
    q25, median, q75 = np.quantile(values, [0.25, 0.5, 0.75])
    if value < values.min():
        return f"below every one of them (lowest {values.min():.1f})"
    if value > values.max():
        return f"above every one of them (highest {values.max():.1f})"
    if value < q25:
        return f"below their 25th percentile ({q25:.1f})"
    if value > q75:
        return f"above their 75th percentile ({q75:.1f})"
    side = "below" if value < median else "at or above"
    return f"{side} their median ({median:.1f}), within their middle half ({q25:.1f} to {q75:.1f})"


def seeds_text(seeds: tuple[int, ...]) -> str:
    """``seeds 0–9`` for a range, ``seeds 0, 3, 5`` otherwise."""
    ordered = sorted(seeds)
    if ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 2:
        return f"seeds {ordered[0]}–{ordered[-1]}"
    return "seeds " + ", ".join(map(str, ordered))


def reference_lines(reference: Reference, best: float, final: float) -> list[str]:
    """Where a run whose best evaluation return is ``best`` and whose return at the budget is
    ``final`` (NaN: not known) stands among ``reference``'s seeds, with why runs differ."""
    count = f"{len(reference.seeds)} reference seeds ({seeds_text(reference.seeds)}; {reference.source})"
    lines = [f"against the preset's {count}:"]
    lines.append(f"  best {best:.1f} is {standing(best, reference.best)}")
    if not math.isnan(final):
        lines.append(
            f"  return at {reference.budget:,} samples {final:.1f} is {standing(final, reference.final)}"
        )
    lines.append(f"  a run's outcome varies by seed and by CPU: {SEEDS_DOC}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m rp1.report.references RUNS PRESET [--source TEXT] [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m rp1.report.references")
    parser.add_argument("runs", type=Path, help="a folder holding the preset's finished runs")
    parser.add_argument("preset")
    parser.add_argument("--source", default="", help="where the runs are and what made them")
    parser.add_argument("--out", type=Path, default=REFERENCES)
    args = parser.parse_args(argv)
    reference = make_reference(args.runs, args.preset, args.source or str(args.runs))
    path = reference_path(args.out, args.preset, reference.budget)
    text = json.dumps(reference_json(reference), indent=1) + "\n"
    write_atomically(path, text.encode(), "reference")
    print(f"wrote {path}: {len(reference.seeds)} seeds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
