"""Does a candidate for README's first command learn visibly, seed after seed? (issue 61)

For every run under ``ROOT/<preset>/seed<k>`` (a sweep's layout), its untrained policy's
evaluation (``metrics.csv`` row 0), its last evaluation and its best, and whether it **ends clearly
above its untrained policy**: the last evaluation return exceeds the first by more than two
standard errors of their difference, ``(final - untrained) / sqrt((s_final² + s_untrained²) / n)
> 2`` with ``s`` an evaluation's standard deviation over its ``n = eval_episodes`` episodes. Then,
per preset, how many runs do, and the runs' work (``wall_s`` summed, minutes: the training alone,
without installing or compiling before the first row). A candidate qualifies with at least 9 of 10
seeds clearly above (the issue's bar); its time is measured apart, on an idle machine, from a fresh
clone (``benchmarks/RESULTS.md``).

``--budget B`` reads the runs as if they had stopped at ``B`` real samples: a model-based run's
iterations do not depend on its budget except that the last phase is cut at it, so a run to ``B``
is the rows of a longer run before ``B`` (its last evaluation is that of the last row collecting
below ``B``; its work, those rows' ``wall_s``, counts the last phase whole).

``--afresh FILE`` adds a second measure, the policy a run hands its user: ``FILE`` names, in each
run's folder, what ``rp1 evaluate RUN --json`` printed for its best policy on new episodes (e.g.
``--seed 1000 --episodes 10``), and that policy is *clearly above* its untrained one when
``(mean - untrained) / sqrt(std² / n + s_untrained² / n_untrained) > 2``, the untrained policy's
return and ``s`` being its first evaluation's (``metrics.csv`` row 0).

``--figure OUT.png`` (one preset, its runs finished) draws README's picture of the command: each
seed's evaluation returns (thin lines, as its ``learning_curve.png`` draws them) over the seeds'
band (the 25th to 75th percentile and the median of the return of the policy in force on the
evaluation grid, as ``rp1 train`` draws a preset's reference seeds), titled with the count (and the
count afresh, with ``--afresh``).

Usage::

    python benchmarks/first_command.py ROOT [--presets P …] [--budget B] [--afresh FILE]
                                           [--figure OUT.png]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from rp1.report.canvas import new_figure, save
from rp1.report.references import make_reference
from rp1.report.run_curve import draw_reference
from rp1.rundir.files import evaluates_trained

CLEAR_Z = 2.0
"""How many standard errors above its untrained policy a run's last evaluation must end."""


def z_above(mean: float, std: float, n: int, base: float, base_std: float, base_n: int) -> float:
    """How many standard errors of their difference an evaluation (``mean`` ± ``std`` over ``n``
    episodes) lies above another (``base``), ±∞ where both are exact."""
    spread = math.sqrt(std**2 / n + base_std**2 / base_n)
    gain = mean - base
    return gain / spread if spread > 0 else math.copysign(math.inf, gain)


def afresh_evaluation(path: Path) -> tuple[float, float, int]:
    """The mean, std and episode count of ``path``, an ``rp1 evaluate --json`` output of a run's
    best policy on new episodes. Raises ``ValueError`` naming the file if it is not such an output
    or a return is missing or not finite."""
    result = json.loads(path.read_text())
    returns = result.get("returns") or []
    if result.get("policy") != "best" or result.get("replayed") is not False:
        raise ValueError(f"{path}: not an evaluation of the best policy on new episodes")
    if len(returns) != result.get("episodes") or not all(map(math.isfinite, returns)):
        raise ValueError(
            f"{path}: {len(returns)} finite returns for {result.get('episodes')} episodes"
        )
    return float(result["mean"]), float(result["std"]), len(returns)


def run_outcome(run_dir: Path, budget: float = math.inf, afresh: str | None = None) -> dict:
    """One run's untrained, final and best evaluation returns (the best of a trained policy, as
    ``rp1 train`` reports it: :func:`~rp1.rundir.files.evaluates_trained`), ``z`` of final over
    untrained, whether it ends clearly above (``z > CLEAR_Z``) and its work in minutes, all of its
    rows collecting below ``budget`` real samples; with ``afresh`` (a file name in ``run_dir``,
    :func:`afresh_evaluation`), its best policy's return afresh, ``z`` over the untrained one and
    whether it is clearly above."""
    metrics = pd.read_csv(run_dir / "metrics.csv")
    metrics = metrics[metrics["samples"] < budget]
    episodes = json.loads((run_dir / "config.json").read_text())["eval_episodes"]
    evaluated = metrics.dropna(subset=["eval_return"])
    first, last = evaluated.iloc[0], evaluated.iloc[-1]
    untrained = (float(first["eval_return"]), float(first["eval_std"]), episodes)
    z = z_above(float(last["eval_return"]), float(last["eval_std"]), episodes, *untrained)
    outcome = {
        "seed": int(run_dir.name.removeprefix("seed")),
        "samples": int(last["samples"]),
        "untrained": untrained[0],
        "final": float(last["eval_return"]),
        "best": float(evaluated["eval_return"][evaluates_trained(evaluated["iteration"])].max()),
        "z": z,
        "clearly_above": z > CLEAR_Z,
        "work_min": float(metrics["wall_s"].sum()) / 60,
    }
    if afresh:
        mean, std, n = afresh_evaluation(run_dir / afresh)
        z_afresh = z_above(mean, std, n, *untrained)
        outcome |= {
            "afresh": mean,
            "afresh_z": z_afresh,
            "afresh_clearly_above": z_afresh > CLEAR_Z,
        }
    return outcome


def preset_outcomes(
    root: Path, preset: str, budget: float = math.inf, afresh: str | None = None
) -> pd.DataFrame:
    """The outcome of each finished-or-not run of ``preset`` under ``root``, by seed, to
    ``budget`` real samples, with its best policy's evaluation afresh if ``afresh`` names one."""
    runs = sorted(
        (d for d in (root / preset).glob("seed*") if (d / "metrics.csv").is_file()),
        key=lambda d: int(d.name.removeprefix("seed")),
    )
    return pd.DataFrame([run_outcome(d, budget, afresh) for d in runs])


def seeds_figure(root: Path, preset: str, table: pd.DataFrame, path: Path) -> Path:
    """README's picture of ``preset``'s runs under ``root`` (``table``: their
    :func:`preset_outcomes`), written to ``path``."""
    figure, axes = new_figure()
    ax = axes[0, 0]
    draw_reference(ax, make_reference(root, preset, str(root)))
    for k, seed in enumerate(table["seed"]):
        rows = pd.read_csv(root / preset / f"seed{seed}" / "metrics.csv").dropna(
            subset=["eval_return"]
        )
        label = "each seed's evaluation return" if k == 0 else None
        ax.plot(rows["samples"], rows["eval_return"], color="C0", lw=0.8, alpha=0.6, label=label)
    title = f"{preset}, {len(table)} seeds: {int(table['clearly_above'].sum())} end clearly above"
    if "afresh_clearly_above" in table:
        title += f", {int(table['afresh_clearly_above'].sum())} best policies afresh"
    ax.set_title(f"{title}\n(over their untrained policy)", fontsize="medium")
    ax.set_xlabel("real samples")
    ax.set_ylabel("return (mean of the evaluation episodes)")
    ax.legend(fontsize="small", loc="upper left")
    return save(figure, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a sweep's output directory")
    parser.add_argument("--presets", nargs="*", help="default: every preset folder under ROOT")
    parser.add_argument(
        "--budget", type=float, default=math.inf, help="read the runs as stopped at B samples"
    )
    parser.add_argument(
        "--afresh",
        metavar="FILE",
        help="each run's `rp1 evaluate --json` output of its best policy",
    )
    parser.add_argument("--figure", type=Path, help="draw one preset's finished runs to this PNG")
    args = parser.parse_args(argv)
    presets = args.presets or sorted(d.name for d in args.root.iterdir() if d.is_dir())
    if args.figure and (len(presets) != 1 or args.budget != math.inf):
        parser.error("--figure draws one preset's runs whole: name one preset and no --budget")
    for preset in presets:
        table = preset_outcomes(args.root, preset, args.budget, args.afresh)
        if table.empty:
            print(f"{preset}: no runs")
            continue
        print(
            f"## {preset}: {int(table['clearly_above'].sum())} of {len(table)} seeds end "
            f"clearly above their untrained policy; work median "
            f"{table['work_min'].median():.1f} min (range {table['work_min'].min():.1f}–"
            f"{table['work_min'].max():.1f})"
        )
        if args.afresh:
            print(
                f"   its best policy evaluated afresh ({args.afresh}): "
                f"{int(table['afresh_clearly_above'].sum())} of {len(table)} clearly above"
            )
        print(table.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
        if args.figure:
            print(f"wrote {seeds_figure(args.root, preset, table, args.figure)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
