"""What a run costs as it grows: wall time against real samples, split into fitting the ensemble,
policy training, real collection and the rest, a growth law fitted to each part, and the projection
to a larger budget with its error.

Every row of ``metrics.csv`` is one outer iteration: ``fit_s`` (the fit on the ``samples`` collected
so far), ``policy_s``, ``collect_s`` (the phase of ``phase_samples``) and ``wall_s`` (the whole
iteration; the rest is what the three leave: evaluations, the normalisers, G, the checkpoint). The
model, per iteration ``i`` with ``n_i`` samples before it:

- fit:        ``a · n_i^p``  (least squares in log–log over iterations ≥ 1; ``p`` near 1 means a fit
  costs time in proportion to the data: epochs to the early stop roughly constant);
- policy:     the median ``policy_s`` (the imagined batch and the update count do not grow with data);
- collection: ``phase_samples`` × the median seconds per real sample;
- the rest:   ``c + d · n_i`` (least squares; the normalisers are refreshed from all data).

The run's phase length after its last iteration is the median ``phase_samples`` of its iterations
≥ 1, so a projection to ``N`` samples adds ``(N − reached) / phase`` iterations at growing ``n``.
Its error is measured, not assumed: the laws are fitted again on the iterations up to half the
samples the run reached (or up to ``--holdout-upto``: 30000 checks a projection from 3·10⁴ against a
run that reached 10⁵), project the cumulative wall time to the samples reached, and the relative
error of that prediction is stated beside the projection (one holdout: an indication, not a bound).

Usage::

    python benchmarks/cost_model.py RUN_DIR [RUN_DIR ...] [--to 100000] [--holdout-upto 30000]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Iterations:
    """One run's iterations ≥ 1 as arrays ``[I]``: samples before each, phase samples, and seconds."""

    samples: np.ndarray
    phase: np.ndarray
    fit: np.ndarray
    policy: np.ndarray
    collect: np.ndarray
    wall: np.ndarray

    def upto(self, samples: float) -> Iterations:
        """The iterations that started with at most ``samples`` samples."""
        keep = self.samples <= samples
        return Iterations(*(getattr(self, f)[keep] for f in self.__dataclass_fields__))

    @property
    def reached(self) -> float:
        return float(self.samples[-1] + self.phase[-1])


def read_iterations(run: Path) -> tuple[Iterations, float]:
    """The iterations ≥ 1 of ``run/metrics.csv`` and iteration 0's wall time (seconds)."""
    with open(run / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    first = float(rows[0]["wall_s"])
    later = [r for r in rows if int(r["iteration"]) >= 1]
    columns = ("samples", "phase_samples", "fit_s", "policy_s", "collect_s", "wall_s")
    return Iterations(*(np.array([float(r[c]) for r in later]) for c in columns)), first


@dataclass(frozen=True)
class CostLaw:
    """The fitted parts of the model (module docstring): seconds per iteration at ``n`` samples."""

    fit_a: float
    fit_p: float
    policy: float
    per_sample: float
    rest_c: float
    rest_d: float
    phase: float

    @classmethod
    def fitted(cls, it: Iterations) -> CostLaw:
        p, log_a = np.polyfit(np.log(it.samples), np.log(it.fit), 1)
        rest = it.wall - it.fit - it.policy - it.collect
        d, c = np.polyfit(it.samples, rest, 1)
        return cls(
            fit_a=float(math.exp(log_a)),
            fit_p=float(p),
            policy=float(np.median(it.policy)),
            per_sample=float(np.median(it.collect / it.phase)),
            rest_c=float(c),
            rest_d=float(d),
            phase=float(np.median(it.phase)),
        )

    def iteration(self, n: float) -> dict[str, float]:
        """Seconds of one iteration that starts with ``n`` samples, by part."""
        return {
            "fit": self.fit_a * n**self.fit_p,
            "policy": self.policy,
            "collect": self.per_sample * self.phase,
            "rest": max(0.0, self.rest_c + self.rest_d * n),
        }

    def extend(self, start: float, to: float) -> dict[str, float]:
        """Seconds, by part, of the iterations that take a run from ``start`` to ``to`` samples."""
        parts = dict.fromkeys(("fit", "policy", "collect", "rest"), 0.0)
        n = start
        while n < to:
            for part, seconds in self.iteration(n).items():
                parts[part] += seconds
            n += self.phase
        return parts


def holdout_error(it: Iterations, fit_upto: float | None = None) -> float:
    """Relative error of the cumulative wall time at the samples reached, projected by laws fitted
    to the iterations that started with at most ``fit_upto`` samples (default: half the samples
    reached; NaN with fewer than four such iterations)."""
    half = it.upto(it.reached / 2 if fit_upto is None else fit_upto)
    if len(half.samples) < 4:
        return math.nan
    projected = half.wall.sum() + sum(
        CostLaw.fitted(half).extend(half.reached, it.reached).values()
    )
    return float(projected / it.wall.sum() - 1)


@dataclass(frozen=True)
class Summary:
    """One run measured and projected: samples reached, wall seconds, the measured split of the
    iterations' time (fractions by part), the laws, and the projection to more samples (seconds, and
    the split of the added time), with the holdout error (:func:`holdout_error`)."""

    reached: float
    wall_s: float
    split: dict[str, float]
    law: CostLaw
    projected_s: float
    projected_split: dict[str, float]
    holdout_error: float


def summary(run: Path, to: int, fit_upto: float | None = None) -> Summary:
    """``run`` measured, its laws fitted and projected to ``to`` samples, with the holdout error of
    laws fitted up to ``fit_upto`` samples (:func:`holdout_error`)."""
    it, first = read_iterations(run)
    law = CostLaw.fitted(it)
    measured = first + it.wall.sum()
    extra = law.extend(it.reached, to)
    added = sum(extra.values())
    return Summary(
        reached=it.reached,
        wall_s=measured,
        split={p: getattr(it, p).sum() / it.wall.sum() for p in ("fit", "policy", "collect")},
        law=law,
        projected_s=measured + added,
        projected_split={k: v / added for k, v in extra.items()} if added else {},
        holdout_error=holdout_error(it, fit_upto),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--to", type=int, default=100_000, help="project to this many samples")
    parser.add_argument(
        "--holdout-upto",
        type=float,
        help="fit the holdout's laws on the iterations up to this many samples (default: half)",
    )
    args = parser.parse_args()
    print(
        "| run | samples | wall (min) | fit / policy / collect | fit ∝ n^p | phase | "
        f"projected to {args.to:,} (h) | fit share of the added time | holdout error |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    projections = []
    for run in args.runs:
        s = summary(run, args.to, args.holdout_upto)
        projections.append(s.projected_s)
        fit_share = f"{s.projected_split['fit']:.0%}" if s.projected_split else "—"
        print(
            f"| {run} | {s.reached:,.0f} | {s.wall_s / 60:.1f} | "
            f"{s.split['fit']:.0%} / {s.split['policy']:.0%} / {s.split['collect']:.0%} | "
            f"p = {s.law.fit_p:.2f} | {s.law.phase:.0f} | {s.projected_s / 3600:.1f} | "
            f"{fit_share} | {s.holdout_error:+.0%} |"
        )
    if len(projections) > 1:
        print(
            f"\nmedian projection {statistics.median(projections) / 3600:.1f} h (range "
            f"{min(projections) / 3600:.1f}–{max(projections) / 3600:.1f} h) over {len(projections)} runs"
        )


if __name__ == "__main__":
    main()
