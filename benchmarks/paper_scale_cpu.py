"""What a paper-scale run would cost on this CPU: the fit's and the policy's compiled calls timed
here at each data size, counted as paper-scale runs made elsewhere (a GPU) counted them.

Timed here (median of repeats after warm-up, :mod:`timing`), at paper scale on HalfCheetah shapes
(5 members of [1024, 1024]; :mod:`bench_ensemble`, :mod:`bench_policy`):

- at every size ``n`` of ``--sizes`` (real samples collected): one fit epoch over ``2n/3`` training
  rows and one validation check over ``n/3`` rows (a phase's rollouts go ⌊k/3⌋ to validation);
- once: one PPO update as ``train_policy`` runs it (500 imagined rollouts × 100 steps, the update's
  10 Adam steps and the stop rule's check; the first 10 updates of a fit skip the check, so this is
  a slight over-count).

Counted from each run's ``metrics.csv`` (iterations ≥ 1, ``n_i`` samples before iteration ``i``):
``model_epochs`` ``e_i`` and ``policy_updates`` ``u_i``. Iteration ``i`` on this CPU:

    e_i · epoch(n_i) + (⌈e_i / 5⌉ + 1) · validation(n_i) + u_i · update

with ``epoch`` and ``validation`` interpolated log–log between the sizes timed (extrapolated beyond
them). Not counted: real collection and the rest (evaluations, normalisers, checkpoint), which are
seconds per iteration on the GPU too. Beyond the samples a run reached, to ``--to``: epochs per fit
by ``e = a · n^p`` fitted (least squares, log–log) on the run's iterations, updates per iteration
and the phase length their medians — a projection, with the law's exponent printed beside it and its
holdout error (the same projection from the first half of the samples a run reached, against the
seconds counted from all of them).

Usage::

    python benchmarks/paper_scale_cpu.py RUN_DIR [RUN_DIR ...] [--sizes 1000,3000,10000,30000,100000]
        [--to 100000] [--repeats 3] [--dealing shuffle|round-robin]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from pathlib import Path

import numpy as np
from bench_ensemble import fit_calls
from bench_policy import TRAIN_STEP, policy_pieces
from timing import report_header, timed

from rp1.dynamics.fit import CHECK_EVERY, DEALINGS, SHUFFLE


def measured_pieces(
    sizes: list[int], repeats: int, dealing: str
) -> tuple[np.ndarray, np.ndarray, float]:
    """Seconds of one fit epoch and one validation check at each of ``sizes`` (arrays ``[S]``) and
    of one PPO update, printed as they are measured."""
    epochs, checks = [], []
    for n in sizes:
        fit = fit_calls(1024, max(1, 2 * n // 3), max(1, n // 3))
        epochs.append(timed(fit.epochs[dealing], repeats) / 1e3)
        checks.append(timed(fit.validation, repeats) / 1e3)
        print(f"n = {n:>7,}: fit epoch {epochs[-1]:8.3f} s, validation {checks[-1]:7.3f} s")
    pieces, _ = policy_pieces(500, 1024, 5)
    update = timed(pieces[TRAIN_STEP], repeats) / 1e3
    print(f"PPO update (imagine + update + check): {update:.3f} s", flush=True)
    return np.array(epochs), np.array(checks), update


def interpolated(sizes: np.ndarray, seconds: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``seconds`` at ``n`` samples, linear in log–log between ``sizes`` and beyond them along the
    nearest segment."""
    x, y, q = np.log(sizes), np.log(seconds), np.log(np.maximum(n, 1.0))
    inside = np.interp(q, x, y)
    low = y[0] + (q - x[0]) * (y[1] - y[0]) / (x[1] - x[0])
    high = y[-1] + (q - x[-1]) * (y[-1] - y[-2]) / (x[-1] - x[-2])
    return np.exp(np.where(q < x[0], low, np.where(q > x[-1], high, inside)))


def read_counts(run: Path) -> dict[str, np.ndarray]:
    """Samples before, phase samples, model epochs and policy updates of the iterations ≥ 1 of
    ``run/metrics.csv`` that fitted the model (arrays ``[I]``)."""
    with open(run / "metrics.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r["iteration"]) >= 1 and r["model_epochs"]]
    columns = {
        "n": "samples",
        "phase": "phase_samples",
        "epochs": "model_epochs",
        "updates": "policy_updates",
    }
    return {k: np.array([float(r[c]) for r in rows]) for k, c in columns.items()}


def cpu_seconds(
    counts: dict[str, np.ndarray],
    sizes: np.ndarray,
    epoch: np.ndarray,
    check: np.ndarray,
    update: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Fit and policy seconds on this CPU of every iteration in ``counts`` (arrays ``[I]``)."""
    n, e = counts["n"], counts["epochs"]
    fit = e * interpolated(sizes, epoch, n) + (np.ceil(e / CHECK_EVERY) + 1) * interpolated(
        sizes, check, n
    )
    return fit, counts["updates"] * update


def projected(counts: dict[str, np.ndarray], to: float) -> tuple[dict[str, np.ndarray], float]:
    """The iterations a run would add from the samples it reached to ``to`` (epochs by the fitted
    law ``a · n^p``, updates and phase their medians) and the law's ``p``."""
    p, log_a = np.polyfit(np.log(counts["n"]), np.log(counts["epochs"]), 1)
    phase = float(np.median(counts["phase"]))
    start = counts["n"][-1] + counts["phase"][-1]
    n = np.arange(start, to, phase) if start < to else np.zeros(0)
    return {
        "n": n,
        "phase": np.full_like(n, phase),
        "epochs": np.exp(log_a) * n**p,
        "updates": np.full_like(n, float(np.median(counts["updates"]))),
    }, float(p)


def holdout_error(
    counts: dict[str, np.ndarray],
    sizes: np.ndarray,
    epoch: np.ndarray,
    check: np.ndarray,
    update: float,
) -> float:
    """Relative error of the CPU seconds to the samples a run reached, projected from its iterations
    up to half of them (:func:`projected`) against those counted from all of them (NaN with fewer
    than four such iterations): the error of the projection's laws, not of the timings."""
    reached = counts["n"][-1] + counts["phase"][-1]
    keep = counts["n"] <= reached / 2
    if keep.sum() < 4:
        return math.nan
    half = {k: v[keep] for k, v in counts.items()}
    more, _ = projected(half, reached)
    predicted = sum(
        x.sum()
        for x in (
            *cpu_seconds(half, sizes, epoch, check, update),
            *cpu_seconds(more, sizes, epoch, check, update),
        )
    )
    counted = sum(x.sum() for x in cpu_seconds(counts, sizes, epoch, check, update))
    return float(predicted / counted - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="paper-scale run directories")
    parser.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    parser.add_argument("--to", type=int, default=100_000, help="project to this many samples")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dealing", choices=tuple(DEALINGS), default=SHUFFLE)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if len(sizes) < 2:
        parser.error("--sizes needs at least two sizes")

    report_header(f"paper scale, dealing {args.dealing}; median of {args.repeats} after warm-up")
    epoch, check, update = measured_pieces(sizes, args.repeats, args.dealing)
    grid = np.array(sizes, dtype=float)
    print(
        "\n| run | samples reached | epochs per fit (median) | updates per iteration (median) | "
        f"CPU h to reach (fit / policy) | epochs ∝ n^p | CPU h projected to {args.to:,} | "
        "holdout error |"
    )
    print("|---|---|---|---|---|---|---|---|")
    totals = []
    for run in args.runs:
        counts = read_counts(run)
        fit, policy = cpu_seconds(counts, grid, epoch, check, update)
        more, p = projected(counts, args.to)
        fit_more, policy_more = cpu_seconds(more, grid, epoch, check, update)
        reached = counts["n"][-1] + counts["phase"][-1]
        total = (fit.sum() + policy.sum() + fit_more.sum() + policy_more.sum()) / 3600
        totals.append(total)
        print(
            f"| {run} | {reached:,.0f} | {np.median(counts['epochs']):.0f} | "
            f"{np.median(counts['updates']):.0f} | {(fit.sum() + policy.sum()) / 3600:.1f} "
            f"({fit.sum() / 3600:.1f} / {policy.sum() / 3600:.1f}) | p = {p:.2f} | {total:.0f} | "
            f"{holdout_error(counts, grid, epoch, check, update):+.0%} |"
        )
    if len(totals) > 1 and all(math.isfinite(t) for t in totals):
        print(
            f"\nmedian projection {statistics.median(totals):.0f} CPU h "
            f"(range {min(totals):.0f}–{max(totals):.0f}) over {len(totals)} runs"
        )


if __name__ == "__main__":
    main()
