"""Tests of ``rp1 report``: tables, statistics and figures from synthetic run directories."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from matplotlib import image
from scipy import stats as scipy_stats

from helpers import TINY, run_cli_output
from report_runs import two_method_runs, write_grid, write_run
from rp1.config import (
    METHOD_TABLE,
    METHODS_VARIABLE,
    Method,
    adaptive_lambda,
    model_based_methods,
    register_method,
    resolve,
)
from rp1.config import methods as method_table
from rp1.core.errors import ConfigError
from rp1.report import curves, fair, figures, stats
from rp1.report.claims import (
    CLAIM_COLUMNS,
    CLAIMS,
    claim_table,
    verdict_summary,
    write_claims,
)
from rp1.report.fair import in_force_returns
from rp1.report.learning import gain_p
from rp1.report.measures import MEASURES, number, run_tables, values_at
from rp1.report.runs_table import load_runs
from rp1.report.significance import (
    equivalent,
    error_margin,
    holm,
    qualified,
    return_margin,
    verdict,
    verdict_kind,
)
from rp1.report.tables.files import write_table_frames
from rp1.report.tables.markdown import render
from rp1.report.tables.results import comparable, table_frames
from rp1.report.tables.specs import TABLES, table_spec
from rp1.report.write import (
    direction_verdict,
    left_out,
    report_tasks,
    write_curve_figures,
    write_diagnostics,
    write_index,
    write_lambda_analysis,
    write_model_figures,
    write_phase_summary,
    write_report,
)
from rp1.train import run_training

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def linear_run(
    root: Path, task: str, method: str, seed: int, start: float, slope: float, budget: int = 100_000
) -> Path:
    """A model-based run evaluated every 3,000 samples up to its budget, returns start + slope·i."""
    samples = list(range(3_000, budget, 3_000))
    returns = [start + slope * i for i in range(len(samples))]
    lambdas = [0.1 * (i % 6) if method in adaptive_lambda() else 0.0 for i in range(len(samples))]
    return write_run(
        root,
        task,
        method,
        seed,
        samples,
        returns,
        budget=budget,
        phase=2_000 + 100 * seed,
        model_error=[1.0 / (i + 1) for i in range(len(samples))],
        **{"lambda": lambdas},
    )


def write_tables(root: Path, out: Path) -> None:
    """Only the tables of the report (faster than :func:`write_report` with its figures)."""
    metrics = load_runs(root).metrics
    out.mkdir()
    for spec in TABLES:
        write_table_frames(table_frames(metrics, spec, report_tasks(metrics)), out)


def cells(out: Path, name: str = "table1", scale: str = "paper") -> pd.DataFrame:
    """The cells of one scale of a written table, indexed by (task, samples, method)."""
    table = pd.read_csv(out / f"{name}.csv")
    return table[table["scale"] == scale].set_index(["task", "samples", "method"])


def test_medians_are_exact(tmp_path):
    bests = [10.0, 30.0, 20.0, 50.0]
    for seed, best in enumerate(bests):
        write_run(
            tmp_path / "runs",
            "hopper",
            "rp1",
            seed,
            [3_000, 6_000, 97_000],
            [best - 5, best, best - 1],
        )
    write_tables(tmp_path / "runs", tmp_path / "out")
    cell = cells(tmp_path / "out").loc["hopper", 100_000, "rp1"]
    assert cell.n_seeds == 4
    assert cell["median"] == pytest.approx(np.median(bests))
    assert (cell.q25, cell.q75) == pytest.approx(tuple(np.percentile(bests, [25, 75])))
    assert cell.paper_median == pytest.approx(619.73)


def test_best_so_far_counts_only_evaluations_by_the_timestep(tmp_path):
    # Seed 0's best (100) comes at 12,000 samples: at 10⁴ only its 5.0 counts. Seed 1's 7.0 is
    # its untrained policy's (iteration 0), which never counts.
    write_run(tmp_path, "ant", "greedy", 0, [3_000, 9_000, 12_000, 97_000], [1.0, 5.0, 100.0, 50.0])
    write_run(tmp_path, "ant", "greedy", 1, [3_000, 10_000, 97_000], [7.0, 3.0, 8.0])
    best_1e4 = stats.best_at(load_runs(tmp_path).metrics, 10_000)
    assert best_1e4.to_dict() == {"ant-greedy/seed0": 5.0, "ant-greedy/seed1": 3.0}
    best_1e5 = stats.best_at(load_runs(tmp_path).metrics, 100_000)
    assert best_1e5.to_dict() == {"ant-greedy/seed0": 100.0, "ant-greedy/seed1": 8.0}


def test_a_run_without_an_evaluation_by_the_timestep_is_missing(tmp_path):
    write_run(tmp_path, "ant", "vr", 0, [12_000, 50_000], [1.0, 2.0])
    write_run(tmp_path, "ant", "vr", 1, [2_000, 4_000, 50_000], [3.0, 4.0, 5.0])
    write_tables(tmp_path, tmp_path / "out")
    assert cells(tmp_path / "out").loc["ant", 10_000, "vr"].n_seeds == 1


def test_t_statistics_equal_scipys_welch_test(tmp_path):
    rng = np.random.default_rng(0)
    for method, shift in (("rp1", 40.0), ("greedy", 0.0), ("vr", 10.0)):
        for seed in range(5):
            write_run(
                tmp_path / "runs",
                "hopper",
                method,
                seed,
                [0, 5_000, 50_000, 97_000],
                list(rng.normal(shift, 10.0, 4)),
            )
    write_tables(tmp_path / "runs", tmp_path / "out")
    metrics = load_runs(tmp_path / "runs").metrics
    tests = pd.read_csv(tmp_path / "out" / "table1_ttests.csv")
    tests = tests[tests["metric"] == "paper_best"].set_index(
        ["task", "scale", "samples", "comparison"]
    )
    for timestep in (10_000, 100_000):
        best = {
            m: stats.best_at(metrics[metrics["method"] == m], timestep).to_numpy()
            for m in ("rp1", "greedy", "vr")
        }
        for comparison, baseline in (("T1", "greedy"), ("T2", "vr")):
            expected = scipy_stats.ttest_ind(best["rp1"], best[baseline], equal_var=False)
            row = tests.loc["hopper", "paper", timestep, comparison]
            assert row.t == pytest.approx(expected.statistic)
            assert row.p == pytest.approx(expected.pvalue)
            assert bool(row.significant) == (expected.pvalue < 0.05)
    text = (tmp_path / "out" / "table1.md").read_text()
    assert "(paper 4.32*)" in text and "(paper 2.21)" in text


def test_best_and_curves_leave_out_the_untrained_policy(tmp_path):
    # Iteration 0 (the untrained policy, 50.0) is the run's best evaluation: the table takes the
    # best of iterations ≥ 1 (20.0); the curve starts at the first trained evaluation.
    write_run(
        tmp_path / "runs",
        "halfcheetah",
        "greedy",
        0,
        [0, 3_000, 6_000],
        [50.0, 10.0, 20.0],
        budget=9_000,
    )
    write_tables(tmp_path / "runs", tmp_path / "out")
    cell = cells(tmp_path / "out").loc["halfcheetah", 9_000, "greedy"]
    assert (cell.n_seeds, cell["median"]) == (1, 20.0)
    grid = np.array([0.0, 2_999.0, 3_000.0, 6_000.0, 9_000.0, 9_001.0])
    curve = curves.step_curves(load_runs(tmp_path / "runs").metrics, grid)
    np.testing.assert_array_equal(curve, [[np.nan, np.nan, 10.0, 20.0, 20.0, np.nan]])


def test_model_free_rows_are_all_trained_and_count_their_own_batch(tmp_path):
    # rp1.agents.modelfree writes updates 1, 2, … with samples after the batch: every evaluation is of a
    # trained policy, and a run stopped at 950,000 samples has not reached 10⁶.
    write_run(tmp_path, "ant", "modelfree", 0, [500_000, 1_000_000], [3.0, 2.0], budget=10**6)
    write_run(tmp_path, "ant", "modelfree", 1, [500_000, 950_000], [4.0, 5.0], budget=10**6)
    metrics = load_runs(tmp_path).metrics
    assert stats.best_at(metrics, 500_000).to_dict() == {
        "ant-modelfree/seed0": 3.0,
        "ant-modelfree/seed1": 4.0,
    }
    assert stats.best_at(metrics, 1_000_000).to_dict() == {"ant-modelfree/seed0": 3.0}


def test_cells_without_runs_are_left_out(tmp_path):
    write_run(tmp_path / "runs", "hopper", "rp1", 0, [3_000, 6_000, 97_000], [1.0, 2.0, 3.0])
    write_tables(tmp_path / "runs", tmp_path / "out")
    table1 = (tmp_path / "out" / "table1.md").read_text()
    assert "0 seeds" not in table1 and "halfcheetah" not in table1
    assert "| task | scale | samples | RP1 |\n" in table1  # no column without runs
    assert "1 seed; no CI" in table1 and "(1 seed; paper 619.73)" in table1
    table = pd.read_csv(tmp_path / "out" / "table1.csv")
    assert table[["task", "scale", "samples", "method", "n_seeds"]].values.tolist() == [
        ["hopper", "paper", 10_000, "rp1", 1],
        ["hopper", "paper", 100_000, "rp1", 1],
    ]
    assert pd.read_csv(tmp_path / "out" / "table1_ttests.csv").empty


def test_tables_2_and_3_are_reported_at_the_budgets_the_runs_reach(tmp_path):
    for method in ("rp1", "rp1-statevar", "rp1-noadapt"):
        for seed in range(2):
            write_run(
                tmp_path,
                "swimmer",
                method,
                seed,
                [0, 3_000, 6_000],
                [0.0, 1.0, 2.0 + seed],
                budget=10_000,
                phase=4_000,
            )
    write_tables(tmp_path, tmp_path / "out")
    for name in ("table2", "table3"):
        table = pd.read_csv(tmp_path / "out" / f"{name}.csv")
        assert table["samples"].tolist() == [10_000, 10_000]
        assert table["median"].tolist() == [2.5, 2.5]
    assert "| swimmer | paper | 10,000 |" in (tmp_path / "out" / "table3.md").read_text()


def test_scales_are_not_pooled(tmp_path):
    write_run(
        tmp_path,
        "hopper",
        "rp1",
        0,
        [0, 3_000, 6_000],
        [0.0, 1.0, 2.0],
        budget=10_000,
        phase=4_000,
        scale="small",
    )
    write_run(
        tmp_path,
        "hopper",
        "rp1",
        0,
        [0, 3_000, 6_000],
        [0.0, 5.0, 6.0],
        budget=10_000,
        phase=4_000,
    )
    loaded = load_runs(tmp_path)
    assert loaded.notes == []  # same task, method and seed, yet not duplicates
    write_tables(tmp_path, tmp_path / "out")
    write_index(loaded, [], tmp_path / "out")
    assert cells(tmp_path / "out", scale="small").loc["hopper", 10_000, "rp1"]["median"] == 2.0
    assert cells(tmp_path / "out").loc["hopper", 10_000, "rp1"]["median"] == 6.0
    index = (tmp_path / "out" / "index.md").read_text()
    assert "Scales present: paper, small" in index
    assert "| hopper | small | rp1 | 1 |" in index


def test_unfinished_and_malformed_metrics_rows_are_left_out_with_a_note(tmp_path):
    run_dir = write_run(tmp_path / "runs", "ant", "rp1", 0, [0, 3_000], [0.0, 1.0], budget=6_000)
    metrics = run_dir / "metrics.csv"
    complete = metrics.read_text()
    fields = complete.splitlines()[-1].split(",")
    not_a_number = ",".join(["2", "3000", fields[2], "1e9x", *fields[4:]])
    too_few = "2,3000,0.0,1e9"
    cut = "2,3000,0.0,12.3"  # cut mid-number (12.3 of 12.345): only the missing newline tells
    metrics.write_text(f"{complete}{not_a_number}\n{too_few}\n{cut}")
    loaded = load_runs(tmp_path / "runs")
    assert loaded.metrics["eval_return"].tolist() == [0.0, 1.0]
    assert loaded.notes == [
        "ant-rp1/seed0: metrics.csv line 4 has a field that is not a number — row left out",
        "ant-rp1/seed0: metrics.csv line 5 has 4 fields, its header 12 — row left out",
        (
            "ant-rp1/seed0: metrics.csv line 6 is unfinished (no newline: cut while written) — "
            "row left out"
        ),
    ]
    write_tables(tmp_path / "runs", tmp_path / "out")
    index = write_index(loaded, [], tmp_path / "out").read_text()
    assert all(note in index for note in loaded.notes)
    assert cells(tmp_path / "out").loc["ant", 6_000, "rp1"]["median"] == 1.0


def test_runs_without_rows_are_left_out_with_a_note(tmp_path):
    run_dir = write_run(tmp_path / "runs", "ant", "rp1", 0, [], [])
    (write_run(tmp_path / "runs", "ant", "vr", 0, [], []) / "metrics.csv").write_text("")
    written = write_report(tmp_path / "runs", tmp_path / "out")
    assert [path.name for path in written] == ["index.md"]
    index = (tmp_path / "out" / "index.md").read_text()
    assert f"{run_dir.relative_to(tmp_path / 'runs').as_posix()}: no metrics rows yet" in index


def test_runs_with_different_budgets(tmp_path):
    # A 10⁴-budget run counts at 10⁴ only; an unfinished 10⁵ run (reached 33,000) at 10⁴ only.
    write_run(
        tmp_path, "halfcheetah", "rp1", 0, [3_000, 6_000, 9_000], [1.0, 2.0, 3.0], budget=10_000
    )
    write_run(tmp_path, "halfcheetah", "rp1", 1, list(range(3_000, 33_000, 3_000)), [5.0] * 10)
    write_run(tmp_path, "halfcheetah", "rp1", 2, list(range(3_000, 100_000, 3_000)), [9.0] * 33)
    write_tables(tmp_path, tmp_path / "out")
    table = cells(tmp_path / "out")
    assert table.loc["halfcheetah", 10_000, "rp1"].n_seeds == 3
    assert table.loc["halfcheetah", 10_000, "rp1"]["median"] == 5.0
    assert table.loc["halfcheetah", 100_000, "rp1"].n_seeds == 1
    assert table.loc["halfcheetah", 100_000, "rp1"]["median"] == 9.0


def test_duplicate_runs_keep_the_one_that_reached_most(tmp_path):
    write_run(tmp_path / "a", "ant", "rp1", 0, [3_000, 6_000], [1.0, 2.0])
    write_run(tmp_path / "b", "ant", "rp1", 0, [3_000, 6_000, 9_000], [1.0, 2.0, 3.0])
    loaded = load_runs(tmp_path)
    assert set(loaded.metrics["run"]) == {"b/ant-rp1/seed0"}
    assert len(loaded.notes) == 1 and loaded.notes[0].startswith("a/ant-rp1/seed0")


def test_of_duplicates_that_reached_as_many_samples_the_one_logging_more_metrics_is_kept(tmp_path):
    """A run made again to log a metric added since replaces the older copy, wherever its path
    sorts; copies equal in both keep the first by path, and each note says why its run went."""
    samples, returns = [3_000, 6_000], [1.0, 2.0]
    write_run(tmp_path / "a", "ant", "rp1", 0, samples, returns, test_model_error=[math.nan] * 2)
    write_run(tmp_path / "b", "ant", "rp1", 0, samples, returns, test_model_error=[math.nan, 0.3])
    write_run(tmp_path / "c", "ant", "rp1", 0, samples, returns, test_model_error=[math.nan] * 2)
    write_run(tmp_path / "a", "hopper", "rp1", 0, samples, returns)
    write_run(tmp_path / "b", "hopper", "rp1", 0, samples, returns)
    loaded = load_runs(tmp_path)
    assert set(loaded.metrics["run"]) == {"b/ant-rp1/seed0", "a/hopper-rp1/seed0"}
    fewer, equal = "as many samples, fewer metrics logged", "as many samples and metrics"
    assert sorted(loaded.notes) == [
        f"{run}: duplicate of {kept} (same task, scale, method, seed; {why}) — left out"
        for run, kept, why in [
            ("a/ant-rp1/seed0", "b/ant-rp1/seed0", fewer),
            ("b/hopper-rp1/seed0", "a/hopper-rp1/seed0", f"{equal}; the first by path kept"),
            ("c/ant-rp1/seed0", "b/ant-rp1/seed0", fewer),
        ]
    ]


def test_no_runs_is_a_config_error_a_bad_config_is_left_out_with_a_note(tmp_path):
    with pytest.raises(ConfigError, match="no run directories"):
        write_report(tmp_path, tmp_path / "out")
    run_dir = write_run(tmp_path, "ant", "rp1", 0, [3_000], [1.0])
    (run_dir / "config.json").write_text(json.dumps({"task": "ant"}))
    loaded = load_runs(tmp_path)
    assert loaded.metrics.empty and len(loaded.notes) == 1 and "missing key" in loaded.notes[0]


def test_bootstrap_iqm_interval_contains_the_iqm():
    values = np.array([3.0, 7.0, 1.0, 12.0, 5.0, 6.0, 8.0, 30.0, 4.0, 5.5])
    cell = stats.summarise(values)
    assert cell.iqm == pytest.approx(np.mean(np.sort(values)[2:8]))
    assert cell.iqm_low <= cell.iqm <= cell.iqm_high
    assert cell.iqm_low < cell.iqm_high
    single = stats.summarise(np.array([4.0]))
    assert single.iqm == 4.0 and math.isnan(single.iqm_low) and math.isnan(single.iqm_high)
    assert stats.summarise(np.array([])).n == 0


def test_lambda_improvements_are_normalised_by_the_run_range(tmp_path):
    write_run(
        tmp_path,
        "ant",
        "rp1",
        0,
        [0, 3_000, 6_000, 9_000, 12_000],
        [30.0, 10.0, 5.0, 20.0, 17.0],
        **{"lambda": [math.nan, 0.0, 0.1, 0.5, 0.1]},
    )
    # Only trained policies (iterations ≥ 1): 10 → 5 (λ 0.1), 5 → 20 (λ 0.5), 20 → 17
    # (λ 0.1), each divided by the range of the trained returns, 20 − 5 = 15.
    improvements = stats.lambda_improvements(load_runs(tmp_path).metrics)
    assert improvements["lambda"].tolist() == [0.1, 0.5, 0.1]
    assert improvements["change"].tolist() == pytest.approx([-5 / 15, 1.0, -3 / 15])
    summary = stats.lambda_summary(improvements).set_index("lambda")
    assert summary.loc[0.1, "mean"] == pytest.approx(-4 / 15) and summary.loc[0.1, "n"] == 2


def test_claims_read_each_comparison_as_holds_does_not_hold_or_equivalent(tmp_path):
    # Per-seed bests at 10⁵: RP1 ≈ 100, Greedy ≈ 0 (RP1 ahead), V+R ≈ 200 (RP1 behind), λ = 0 the
    # same values as RP1 in another order (no difference: the interval of the difference lies
    # inside Hopper's margin, 10 % of the paper's 619.73).
    for method, values in {
        "rp1": [99.0, 100.0, 102.0],
        "greedy": [0.0, 1.0, -1.0],
        "vr": [199.0, 201.0, 200.0],
        "rp1-noadapt": [102.0, 99.0, 100.0],
    }.items():
        for seed, best in enumerate(values):
            write_run(
                tmp_path / "runs",
                "hopper",
                method,
                seed,
                [0, 6_000, 97_000],  # the policy of iteration 0 in force up to 6,000 samples
                [best - 5, best, best - 1],
            )
    metrics = load_runs(tmp_path / "runs").metrics
    frames = {spec.name: table_frames(metrics, spec, report_tasks(metrics)) for spec in TABLES}
    claims = claim_table(frames)
    assert set(claims["samples"]) == {10_000, 100_000}  # Table 1's two sample counts; Table 3's 10⁵
    # every claim in each of the four measures of returns
    assert set(claims["metric"]) == {"paper_best", "return_at", "grid_best", "auc"}
    assert (claims.groupby(["claim", "samples"])["metric"].nunique() == 4).all()
    paper = claims[(claims["samples"] == 100_000) & (claims["metric"] == "paper_best")]
    paper = paper.set_index("claim")
    assert paper.loc["RP1 beats Greedy (Table 1)", "verdict"] == "holds"
    assert paper.loc["RP1 beats V+R (Table 1)", "verdict"] == "does not hold"
    assert paper.loc["adaptive λ beats λ = 0 (Table 3)", "verdict"] == "equivalent"
    assert paper.loc["RP1 beats Greedy (Table 1)", "diff"] == pytest.approx(301 / 3)
    assert set(paper.index) == {  # no state-variance or no-early-stop runs: no such claims
        "RP1 beats Greedy (Table 1)",
        "RP1 beats V+R (Table 1)",
        "adaptive λ beats λ = 0 (Table 3)",
    }
    (tmp_path / "out").mkdir()
    written = write_claims(frames, tmp_path / "out")
    text = (tmp_path / "out" / "claims.md").read_text()
    assert [path.name for path in written] == ["claims.csv", "claims.md", "learning.csv"]
    header = "| claim | task | scale | samples | paper's best | return at N | best over the grid | area under the curve | mixed cells |"
    assert header in text
    assert "| RP1 beats Greedy (Table 1) | hopper | paper | 100,000 | **holds** Δ 100.3 [" in text
    assert list(pd.read_csv(tmp_path / "out" / "claims.csv").columns) == list(CLAIM_COLUMNS)


def test_phase_length_claims_compare_each_matched_control_with_its_3000_sample_method(tmp_path):
    """Table 5: matched Greedy against Greedy and matched No EarlyStop against No EarlyStop, each
    a claim of its own; a pair without runs on both sides has no claim."""
    bests = {
        ("greedy", 3_000): [0.0, 1.0, -1.0],
        ("greedy-matched", 300): [70.0, 71.0, 69.0],
        ("rp1-nopca", 3_000): [5.0, 6.0, 4.0],
        ("rp1-nopca-matched", 600): [6.0, 4.0, 5.0],
        ("rp1", 3_000): [50.0, 52.0, 51.0],  # in no comparison of Table 5
    }
    spec = next(spec for spec in TABLES if spec.name == "table5")

    def claims_of(root: Path, methods: list[str]) -> pd.DataFrame:
        for (method, cap), values in bests.items():
            for seed, best in enumerate(values if method in methods else []):
                write_run(root, "hopper", method, seed, [3_000, 9_000], [best - 5, best], cap=cap)
        metrics = load_runs(root).metrics
        claims = claim_table({"table5": table_frames(metrics, spec, report_tasks(metrics))})
        return claims[claims["metric"] == "paper_best"]

    claims = claims_of(tmp_path / "all", [method for method, _ in bests])
    assert claims.set_index(["claim", "samples"])["verdict"].to_dict() == {
        (
            "phases of the matched length beat 3,000-sample phases, Greedy (control)",
            10_000,
        ): "holds",
        (
            "phases of the matched length beat 3,000-sample phases, No EarlyStop (control)",
            10_000,
        ): "equivalent",
    }
    greedy = claims[claims["method_b"] == "greedy"].iloc[0]
    assert (greedy.method_a, greedy.t) == ("greedy-matched", pytest.approx(70 / np.sqrt(2 / 3)))
    claims = claims_of(tmp_path / "some", ["greedy", "rp1-nopca", "rp1-nopca-matched"])
    assert list(claims["method_b"]) == ["rp1-nopca"]


def test_rp1_against_matched_greedy_is_a_family_of_its_own(tmp_path):
    """Table 6 compares RP1 with Greedy of its phase length and nothing else, in a Holm family of
    its own: on one task its one test's adjusted p is its p, whatever Table 4 tests beside it."""
    for method, values in {
        "rp1": [60.0, 62.0, 61.0],
        "greedy-matched": [50.0, 53.0, 51.0],
        "rp1-noadapt": [55.0, 58.0, 56.0],
    }.items():
        for seed, best in enumerate(values):
            write_run(tmp_path, "hopper", method, seed, [3_000, 9_000], [best - 5, best], cap=300)
    metrics = load_runs(tmp_path).metrics
    frames = {
        name: table_frames(metrics, table_spec(name), report_tasks(metrics))
        for name in ("table4", "table6")
    }
    assert column_headers(frames["table6"]) == ["Greedy (matched)", "RP1"]  # RP1 last
    claims = claim_table(frames)
    claims = claims[(claims["metric"] == "paper_best") & (claims["samples"] == 10_000)]
    own = claims[claims["comparison"] == "t (RP1 vs matched Greedy)"].iloc[0]
    assert (own.method_a, own.method_b, own.verdict) == ("rp1", "greedy-matched", "holds")
    assert own.p_holm == own.p
    assert own.p_holm_all > own.p  # adjusted with Table 4's test over all claims


def test_verdict_summary_counts_each_kind_of_verdict():
    claims = pd.DataFrame(
        {
            "verdict": [
                "holds",
                "holds",
                "does not hold",
                "inconclusive: differences from −1.00 to 2.00 are consistent with the data",
                "inconclusive: too few seeds",
                "nothing learned by 10,000",
            ]
        }
    )
    assert verdict_summary(claims) == (
        "6 verdicts: 2 hold, 1 do not hold, 0 equivalent, 2 inconclusive, 1 nothing learned; 0 "
        "of the 3 decided with a winner not shown above its untrained policy"
    )
    claims.loc[0, "verdict"] = "holds, but only because Greedy fell below its untrained policy"
    assert verdict_summary(claims).endswith("; 1 of the 3 decided with a winner not shown above "
                                            "its untrained policy")  # fmt: skip


@pytest.mark.slow
def test_rp1_report_says_where_to_start_and_counts_the_verdicts(tmp_path, capsys):
    for method, values in {"rp1": [60.0, 62.0, 61.0], "greedy": [0.0, 2.0, 1.0]}.items():
        for seed, best in enumerate(values):
            write_run(tmp_path / "runs", "hopper", method, seed, [3_000, 9_000], [best - 5, best])
    out = tmp_path / "report"
    code, stdout, err = run_cli_output(["report", tmp_path / "runs", "--out", out], capsys)
    claims = pd.read_csv(out / "claims.csv")
    assert (code, err) == (0, [])
    assert stdout.splitlines()[-2:] == [
        f"wrote {len(list(out.iterdir()))} files to {out} (start at {out / 'index.md'})",
        "claims.md, one verdict per claim, task, sample count and measure: "
        + verdict_summary(claims),
    ]


def test_curve_figures_draw_beside_the_paper_s_curve_the_return_at_n_of_the_tables(
    tmp_path, monkeypatch
):
    """The right panel of a curve figure is the median over runs of the return of the policy in
    force at each grid point: at N, the median of the tables' return at N."""
    samples = list(range(0, 30_000, 3_000))
    for method, slope in (("rp1", 2.0), ("greedy", 1.0)):
        for seed in range(3):
            returns = [seed + slope * i for i in range(len(samples))]
            write_run(tmp_path / "runs", "hopper", method, seed, samples, returns, budget=30_000)
    loaded = load_runs(tmp_path / "runs")
    runs = run_tables(loaded.metrics, loaded.evaluations)
    drawn = {}
    monkeypatch.setattr(figures, "save", lambda figure, path: drawn.setdefault(path.stem, figure))
    write_curve_figures(runs, ("hopper",), tmp_path)
    in_force = drawn["fig1_hopper"].axes[1]
    for method in ("rp1", "greedy"):
        line = next(
            line
            for line in in_force.get_lines()
            if line.get_label().startswith(method_table.method_label(method))
        )
        points, medians = line.get_data()
        grid = runs.grid[runs.grid["method"] == method]
        for n in (9_000, 21_000):
            expected = np.median(fair.return_at(grid, n).to_numpy())
            assert medians[list(points).index(n)] == pytest.approx(expected)


def test_lambda_trend_tests_one_slope_per_run(tmp_path):
    # Trained returns (iterations ≥ 1) 0, 1, 3, 6 then λ 0.1, 0.3, 0.5: changes 1, 2, 3 of the
    # range 6, a slope of (1/6) / 0.2 = 5/6 per unit λ; seed 1: changes 2, 2, 8 of 12 at the same
    # λ, a slope of 5/4; seed 2 plays one λ only and has no slope.
    for seed, returns in ((0, [0.0, 0.0, 1.0, 3.0, 6.0]), (1, [0.0, 0.0, 2.0, 4.0, 12.0])):
        write_run(
            tmp_path,
            "hopper",
            "rp1",
            seed,
            [0, 1, 2, 3, 4],
            returns,
            **{"lambda": [math.nan, 0.0, 0.1, 0.3, 0.5]},
        )
    write_run(
        tmp_path,
        "hopper",
        "rp1",
        2,
        [0, 1, 2, 3],
        [0.0, 0.0, 1.0, 5.0],
        **{"lambda": [math.nan, 0.0, 0.2, 0.2]},
    )
    trend = stats.lambda_trend(stats.lambda_improvements(load_runs(tmp_path).metrics))
    row = trend.set_index("method").loc["rp1"]
    assert row["runs"] == 2
    assert row["slope"] == pytest.approx((5 / 6 + 5 / 4) / 2)
    expected = scipy_stats.ttest_1samp([5 / 6, 5 / 4], 0.0)
    assert (row["t"], row["p"]) == pytest.approx((expected.statistic, expected.pvalue))
    assert direction_verdict("hopper", "rp1", -1.0, 0.01) == "as the paper"
    assert direction_verdict("halfcheetah", "rp1", -1.0, 0.01) == "opposite to the paper"
    assert direction_verdict("halfcheetah", "rp1", 1.0, 0.2) == "not significant"
    assert direction_verdict("halfcheetah", "rp1-statevar", 1.0, 0.01) == "—"


def test_lambda_trend_file_is_the_same_whatever_the_statistics_last_bits(tmp_path, monkeypatch):
    """fig2_lambda_trend.csv holds its least-squares statistics at a fixed precision, so that a
    CPU whose LAPACK rounds the last bits otherwise writes the same file (issue 72)."""
    for seed, returns in ((0, [0.0, 0.0, 1.0, 3.0, 6.0]), (1, [0.0, 0.0, 2.0, 4.0, 12.0])):
        write_run(
            tmp_path / "runs",
            "hopper",
            "rp1",
            seed,
            [0, 1, 2, 3, 4],
            returns,
            **{"lambda": [math.nan, 0.0, 0.1, 0.3, 0.5]},
        )
    metrics = load_runs(tmp_path / "runs").metrics
    trend, written = stats.lambda_trend, []
    for nudge in (0.0, 4 * np.finfo(float).eps):  # the statistics moved in their last bits

        def nudged(improvements, nudge=nudge):
            out = trend(improvements)
            out[["slope", "t", "p"]] *= 1 + nudge
            return out

        out = tmp_path / f"out{len(written)}"
        out.mkdir()
        with monkeypatch.context() as patch:
            patch.setattr(stats, "lambda_trend", nudged)
            write_lambda_analysis(metrics, ("hopper",), out)
        written.append((out / "fig2_lambda_trend.csv").read_bytes())
    assert written[0] == written[1]


def test_phase_statistics_use_the_runs_own_cap(tmp_path):
    # Cap 1,000 (config.json collect.phase_cap), budget 3,000. Seed 0: phases 1,000, 400 (stopped
    # early), 1,000, then 600 — all the budget left, so not early. Seed 1: three full phases.
    write_run(
        tmp_path / "runs",
        "hopper",
        "rp1",
        0,
        [0, 1_000, 1_400, 2_400],
        [0.0] * 4,
        budget=3_000,
        cap=1_000,
        phase_samples=[1_000, 400, 1_000, 600],
    )
    write_run(
        tmp_path / "runs",
        "hopper",
        "rp1",
        1,
        [0, 1_000, 2_000],
        [0.0] * 3,
        budget=3_000,
        cap=1_000,
        phase=1_000,
    )
    metrics = load_runs(tmp_path / "runs").metrics
    summary = stats.phase_summary(metrics).iloc[0]
    assert (summary.runs, summary.caps, summary.phases) == (2, "1,000", 7)
    per_run = (summary.phases_per_run, summary.phases_per_run_q25, summary.phases_per_run_q75)
    assert per_run == (3.5, 3.25, 3.75)
    # Phase sizes sorted: 400, 600, 1,000 × 5.
    sizes = (summary.phase_samples, summary.phase_samples_q25, summary.phase_samples_q75)
    assert sizes == (1_000.0, 800.0, 1_000.0)
    assert summary.stopped_early == pytest.approx(1 / 7)
    out = tmp_path / "out"
    out.mkdir()
    text = write_phase_summary(metrics, out)[1].read_text()
    row = "| hopper | paper | rp1 | 2 | 1,000 | 3.5 [3.25, 3.75] | 1,000 [800, 1,000] | 1,000 | 14.3% |"
    assert row in text
    diagnostics = write_diagnostics(metrics, ("hopper",), out)
    assert [path.name for path in diagnostics] == ["diag_hopper.png"]


@pytest.mark.slow
def test_full_report_writes_valid_pngs_and_links_them(tmp_path):
    runs = tmp_path / "runs"
    methods = [method.name for method in METHOD_TABLE if method.in_paper]
    for task in ("halfcheetah", "swimmer"):
        for slope, method in enumerate(methods, start=1):
            for seed in range(3):
                linear_run(runs, task, method, seed, start=float(seed), slope=float(slope))
        for seed in range(2):
            write_run(
                runs,
                task,
                "modelfree",
                seed,
                [1_000_000, 5_000_000, 10_000_000],
                [10.0, 50.0 + seed, 80.0],
                budget=10_000_000,
            )
    written = write_report(runs, tmp_path / "out")
    names = {path.name for path in written}
    for task in ("halfcheetah", "swimmer"):
        assert {
            f"fig1_{task}.png",
            f"fig3_{task}.png",
            f"fig_ablation_{task}.png",
            f"fig_controls_{task}.png",
            f"diag_{task}.png",
        } <= names
    assert {
        "fig2_lambda.png",
        "fig2_lambda.csv",
        "fig2_lambda.md",
        "fig2_lambda_trend.csv",
        "claims.md",
        "phases.csv",
        "phases.md",
        "index.md",
        "table2.md",
        "table3_ttests.csv",
    } <= names
    pngs = [path for path in written if path.suffix == ".png"]
    assert len(pngs) == 11  # no fig_model_*: these runs logged no test-set error
    for path in pngs:
        assert path.read_bytes()[:8] == PNG_SIGNATURE
        pixels = image.imread(path)
        assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    index = (tmp_path / "out" / "index.md").read_text()
    assert all(f"]({path.name})" in index for path in written[:-1])
    table = cells(tmp_path / "out", "table3")
    assert table.loc["swimmer", 100_000, "rp1"].n_seeds == 3


def test_probability_of_improvement_against_a_hand_computed_case():
    # pairs (a_i, b_j): 3 > 0, 3 > 2, 1 > 0, 1 < 2, 2 > 0, 2 = 2 (one half): 4.5 of 6
    result = stats.probability_of_improvement(np.array([3.0, 1.0, 2.0]), np.array([0.0, 2.0]))
    assert result.p == pytest.approx(0.75)
    assert 0.0 <= result.low <= 0.75 <= result.high <= 1.0
    assert stats.probability_of_improvement(np.array([5.0, 6.0]), np.array([1.0, 2.0])) == (
        1.0,
        1.0,
        1.0,
    )
    assert stats.probability_of_improvement(np.array([1.0, 2.0]), np.array([1.0, 2.0])).p == 0.5
    alone = stats.probability_of_improvement(np.array([1.0]), np.array([1.0, 2.0]))
    assert alone.p == 0.25 and np.isnan(alone.low) and np.isnan(alone.high)


def test_t_test_table_gives_the_probability_of_improvement(tmp_path):
    for method, returns in (("rp1", [5.0, 7.0, 9.0]), ("greedy", [6.0, 1.0, 2.0])):
        for seed, value in enumerate(returns):
            write_run(
                tmp_path / "runs",
                "hopper",
                method,
                seed,
                [0, 5_000, 9_000],
                [0.0, value, value],
                budget=10_000,
            )
    write_tables(tmp_path / "runs", tmp_path / "out")
    tests = pd.read_csv(tmp_path / "out" / "table1_ttests.csv")
    row = tests[tests["metric"] == "paper_best"].set_index("comparison").loc["T1"]
    # RP1 (5, 7, 9) vs Greedy (6, 1, 2): 5 loses to 6 only: 8 of 9 pairs
    assert (row.prob_improvement, row.method_a, row.method_b) == (
        pytest.approx(8 / 9),
        "rp1",
        "greedy",
    )
    assert row.pi_low <= 8 / 9 <= row.pi_high
    assert "PI 0.89 [" in (tmp_path / "out" / "table1.md").read_text()


# --- measures that do not reward evaluation count, and significance stated honestly ----------


def measures_at(runs, timestep: int) -> dict[str, list[float]]:
    """Every measure of returns of every run at ``timestep``, by measure name."""
    return {
        name: values_at(runs, MEASURES[name], timestep).tolist()
        for name in ("paper_best", "return_at", "grid_best", "auc")
    }


# Rows at 0, 3,000, 6,000 and 9,000 samples, each followed by a 3,000-sample phase (reached
# 12,000): the untrained policy of row 0 collects samples 1–3,000, so it is in force at the grid
# points 1,000, 2,000 and 3,000; row 1's at 4,000–6,000, row 2's at 7,000–9,000, row 3's at 10,000.
HAND_SAMPLES, HAND_RETURNS = [0, 3_000, 6_000, 9_000], [0.0, 10.0, 40.0, 20.0]


def test_return_at_n_best_over_the_grid_and_area_from_metrics_without_a_grid(tmp_path):
    write_run(tmp_path, "hopper", "greedy", 0, HAND_SAMPLES, HAND_RETURNS, budget=10_000)
    runs = run_tables(load_runs(tmp_path).metrics)
    assert runs.grid["samples"].tolist() == [1_000.0 * k for k in range(1, 13)]
    assert set(runs.grid["source"]) == {"metrics.csv"} and set(runs.grid["every"]) == {1_000}
    assert measures_at(runs, 10_000) == {
        "paper_best": [40.0],
        "return_at": [20.0],
        "grid_best": [40.0],
        "auc": [(3 * 0.0 + 3 * 10.0 + 3 * 40.0 + 20.0) / 10],
    }
    # at 3,000 the policy in force is still the untrained one; the paper's best already counts the
    # evaluation (at 3,000 samples) of the policy trained on them, which collects from there on
    assert measures_at(runs, 3_000) == {
        "paper_best": [10.0],
        "return_at": [0.0],
        "grid_best": [0.0],
        "auc": [0.0],
    }
    assert measures_at(runs, 13_000) == {key: [] for key in measures_at(runs, 0)}  # not reached


def test_return_at_n_best_over_the_grid_and_area_from_evaluations_csv(tmp_path):
    """A run with the grid is read from evaluations.csv at its own spacing; the paper's best still
    reads metrics.csv."""
    run = write_run(tmp_path, "hopper", "rp1", 0, HAND_SAMPLES, HAND_RETURNS, budget=10_000)
    write_grid(run, 2_000, [1.0, 7.0, 3.0, 4.0, 5.0, 6.0])  # 2,000, 4,000, …, 12,000
    loaded = load_runs(tmp_path)
    assert loaded.evaluations["samples"].tolist() == [2_000.0 * k for k in range(1, 7)]
    assert set(loaded.evaluations["eval_every"]) == {2_000}
    runs = run_tables(loaded.metrics, loaded.evaluations)
    assert set(runs.grid["source"]) == {"evaluations.csv"}
    assert measures_at(runs, 10_000) == {
        "paper_best": [40.0],
        "return_at": [5.0],
        "grid_best": [7.0],
        "auc": [(1.0 + 7.0 + 3.0 + 4.0 + 5.0) / 5],
    }
    # 9,000 is no grid point: the last one before it, 8,000
    assert measures_at(runs, 9_000)["return_at"] == [4.0]
    assert measures_at(runs, 9_000)["auc"] == [(1.0 + 7.0 + 3.0 + 4.0) / 4]


def test_unfinished_and_malformed_grid_rows_are_left_out_and_the_run_then_misses_points(tmp_path):
    run = write_run(tmp_path, "hopper", "rp1", 0, HAND_SAMPLES, HAND_RETURNS, budget=10_000)
    write_grid(run, 2_000, [1.0])
    header = "samples,trained_on,iteration,eval_return,eval_std"
    rows = ["2000,0,0,1.0,0.0", "4000,0,0,x,0.0", "6000,0,0,3.0,0.0", "8000,0,0,4.0"]
    (run / "evaluations.csv").write_text("\n".join([header, *rows]))  # the last line is cut
    loaded = load_runs(tmp_path)
    assert loaded.notes == [
        "hopper-rp1/seed0: evaluations.csv line 3 has a field that is not a number — row left out",
        (
            "hopper-rp1/seed0: evaluations.csv line 5 is unfinished (no newline: cut while "
            "written) — row left out"
        ),
    ]
    assert loaded.evaluations["samples"].tolist() == [2_000.0, 6_000.0]
    runs = run_tables(loaded.metrics, loaded.evaluations)
    assert measures_at(runs, 2_000)["return_at"] == [1.0]
    # 4,000 is missing: a run without a return at every grid point up to N does not count there
    assert measures_at(runs, 6_000)["grid_best"] == []


def test_of_duplicates_alike_in_metrics_the_one_with_the_grid_is_kept(tmp_path):
    write_run(tmp_path / "a", "hopper", "rp1", 0, HAND_SAMPLES, HAND_RETURNS)
    write_grid(
        write_run(tmp_path / "b", "hopper", "rp1", 0, HAND_SAMPLES, HAND_RETURNS), 3_000, [1.0]
    )
    loaded = load_runs(tmp_path)
    assert set(loaded.metrics["run"]) == set(loaded.evaluations["run"]) == {"b/hopper-rp1/seed0"}
    why = "same task, scale, method, seed; as many samples and metrics, fewer grid evaluations"
    assert loaded.notes == [
        f"a/hopper-rp1/seed0: duplicate of b/hopper-rp1/seed0 ({why}) — left out"
    ]


def test_every_comparison_has_the_difference_of_means_with_its_bootstrap_interval(tmp_path):
    two_method_runs(tmp_path, "hopper", {"rp1": [3.0, 1.0, 2.0], "greedy": [0.0, 0.0]}, 0.0)
    tests = table_frames(load_runs(tmp_path).metrics, TABLES[0], ("hopper",)).tests
    assert set(tests["metric"]) == {"paper_best", "return_at", "grid_best", "auc"}
    paper = tests[tests["metric"] == "paper_best"].iloc[0]
    assert paper["diff"] == 2.0 and paper.diff_low <= 2.0 <= paper.diff_high
    again = stats.mean_difference(np.array([3.0, 1.0, 2.0]), np.array([0.0, 0.0]))
    assert (again.low, again.high) == (paper.diff_low, paper.diff_high)  # seeded: reproducible
    assert math.isnan(stats.mean_difference(np.array([1.0]), np.array([0.0, 1.0])).low)


def test_holm_adjusts_a_hand_computed_family():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → at least the 0.06
    # before it; the NaN (no test) is not counted in m = 4
    adjusted = holm(np.array([0.01, 0.04, 0.03, 0.005, np.nan]))
    np.testing.assert_allclose(adjusted[:4], [0.03, 0.06, 0.06, 0.02])
    assert math.isnan(adjusted[4])
    np.testing.assert_allclose(holm(np.array([0.5, 0.6])), [1.0, 1.0])  # capped at 1


def test_claims_adjust_p_within_the_tables_family_and_over_the_whole_claims_table(tmp_path):
    """Family: one table's comparisons at one measure, scale and sample count on every task
    (Table 1's T1 and T2 on two tasks: 4 tests); p_holm_all: every claim of that measure, scale
    and sample count (with Table 3's: 6 tests)."""
    shifts = {"rp1": 40.0, "greedy": 0.0, "vr": 25.0, "rp1-noadapt": 30.0, "rp1-nopca": 35.0}
    for task, spread in (("hopper", 30.0), ("halfcheetah", 20.0)):
        for method, shift in shifts.items():
            values = [shift + spread * x for x in (-1.0, 0.0, 1.0, 0.5)]
            two_method_runs(tmp_path, task, {method: values}, -200.0)
    metrics = load_runs(tmp_path).metrics
    frames = {spec.name: table_frames(metrics, spec, ("halfcheetah", "hopper")) for spec in TABLES}
    claims = claim_table(frames)
    claims = claims[claims["metric"] == "return_at"]
    assert len(claims) == 8 and claims["learned"].all()
    table1 = claims[claims["table"] == "table1"]
    np.testing.assert_allclose(table1["p_holm"], holm(table1["p"].to_numpy()))
    np.testing.assert_allclose(claims["p_holm_all"], holm(claims["p"].to_numpy()))
    assert (claims["p_holm_all"] >= claims["p_holm"]).all()
    kinds = claims["verdict"].map(verdict_kind)
    assert (kinds[claims["p_holm"] < 0.05] != "inconclusive").all()


def judged_row(
    low: float,
    high: float,
    p_holm: float = 0.5,
    t: float = 1.0,
    tost: tuple | None = None,
    **gains: float,
) -> SimpleNamespace:
    """A comparison of RP1 (a) against Greedy (b) as
    :func:`~rp1.report.significance.verdict` reads it, margin 3; the two one-sided tests'
    interval ``tost``, the bootstrap's ``[low, high]`` unless given; ``gains``: the one-sided p of
    each side's gain over its untrained policy (``gain_p_a``, ``fall_p_b``, …), 0.01 for a gain
    and 0.99 for a fall unless given: both sides learned."""
    tost_low, tost_high = tost or (low, high)
    untrained = {"gain_p_a": 0.01, "fall_p_a": 0.99, "gain_p_b": 0.01, "fall_p_b": 0.99}
    return SimpleNamespace(
        learned=True,
        samples=10_000,
        t=t,
        p_holm=p_holm,
        diff_low=low,
        diff_high=high,
        tost_low=tost_low,
        tost_high=tost_high,
        margin=3.0,
        method_a="rp1",
        method_b="greedy",
        **{**untrained, **gains},
    )


def test_a_decided_verdict_says_when_its_winner_is_not_shown_above_its_untrained_policy():
    """Issue 46's Hopper: RP1's return at 10⁴ beats Greedy's, but RP1's is not shown above its own
    untrained policy's (p 0.31) while Greedy's fell below its own: the verdict says so."""
    held = judged_row(4.0, 6.0, p_holm=0.01)
    assert verdict(held, number) == "holds"
    fell = judged_row(4.0, 6.0, p_holm=0.01, gain_p_a=0.31, fall_p_b=0.001)
    assert verdict(fell, number) == "holds, but only because Greedy fell below its untrained policy"
    level = judged_row(4.0, 6.0, p_holm=0.01, gain_p_a=0.31, fall_p_b=0.2)
    assert verdict(level, number) == "holds, but RP1 is not shown above its untrained policy"
    # the better method is b where a does not hold; no note without a test of the gain
    lost = judged_row(-6.0, -4.0, p_holm=0.01, t=-2.0, gain_p_b=0.5, fall_p_a=0.01)
    assert (
        verdict(lost, number)
        == "does not hold, but only because RP1 fell below its untrained policy"
    )
    assert verdict(judged_row(4.0, 6.0, p_holm=0.01, gain_p_a=math.nan), number) == "holds"
    assert verdict_kind(verdict(fell, number)) == "holds" and qualified(verdict(fell, number))
    assert not qualified(verdict(held, number)) and not qualified("inconclusive: too few seeds")


def test_the_winner_screen_reads_each_runs_gain_on_the_measure(tmp_path):
    """Hopper learned (V+R's policies beat their untrained one), RP1's did not (gains −1 to 1)
    while Greedy's fell far below theirs: RP1 vs Greedy holds only because of the fall; RP1 vs V+R
    does not hold, and V+R, the better, learned."""
    two_method_runs(
        tmp_path,
        "hopper",
        {
            "rp1": [101.0, 99.0, 100.5, 99.5, 100.0],
            "greedy": [0.0, 10.0, -5.0, 5.0, 2.0],
            "vr": [300.0, 310.0, 290.0, 305.0, 295.0],
        },
        100.0,
    )
    tests = table_frames(load_runs(tmp_path).metrics, TABLES[0], ("hopper",)).tests
    at_n = tests[tests["metric"] == "return_at"].set_index("method_b")
    assert at_n.loc["greedy", "verdict"] == (
        "holds, but only because Greedy fell below its untrained policy"
    )
    assert at_n.loc["vr", "verdict"] == "does not hold"
    greedy = at_n.loc["greedy"]
    assert greedy["gain_a"] == pytest.approx(0.0) and greedy["gain_p_a"] > 0.05
    assert greedy["gain_b"] == pytest.approx(-97.6) and greedy["fall_p_b"] < 0.05
    assert at_n.loc["vr", "gain_p_b"] < 0.05


def test_equivalent_only_where_the_interval_lies_inside_the_margin():
    digits = number
    assert equivalent(-1.0, 2.0, 3.0)  # inside
    assert not equivalent(-1.0, 4.0, 3.0)  # across the margin
    assert not equivalent(4.0, 6.0, 3.0)  # outside
    assert not equivalent(-1.0, 2.0, math.nan)  # no margin off the paper's tasks
    assert verdict(judged_row(-1.0, 2.0), digits) == "equivalent"
    # both intervals must lie inside: a bootstrap of a few seeds can be narrower than the t's
    assert verdict(judged_row(-1.0, 2.0, tost=(-3.5, 3.2)), digits).startswith("inconclusive")
    assert verdict(judged_row(-1.0, 2.0, tost=(math.nan, math.nan)), digits).startswith(
        "inconclusive"
    )
    assert verdict(judged_row(-1.0, 4.0), digits) == (
        "inconclusive: differences from −1.00 to 4.00 are consistent with the data"
    )
    assert verdict(judged_row(4.0, 6.0), digits).startswith("inconclusive: differences from 4.00")
    assert verdict(judged_row(4.0, 6.0, p_holm=0.01), digits) == "holds"
    assert verdict(judged_row(-6.0, -4.0, p_holm=0.01, t=-2.0), digits) == "does not hold"
    assert verdict(judged_row(math.nan, math.nan), digits) == "inconclusive: too few seeds"
    # the margins: a tenth of the paper's RP1 median best at its sample count for N (Hopper: 322.22
    # at 10⁴, 619.73 at 10⁵), a tenth of b's mean test-set error
    assert return_margin("hopper", 10_000) == pytest.approx(32.222)
    assert (
        return_margin("hopper", 5_000) == return_margin("hopper", 99_999) == pytest.approx(32.222)
    )
    assert return_margin("hopper", 100_000) == pytest.approx(61.973)
    assert math.isnan(return_margin("Pendulum-v1", 10_000))
    assert error_margin(np.array([0.4, 0.6])) == pytest.approx(0.05)


def test_a_task_where_nothing_learned_is_marked_and_left_out_of_the_families(tmp_path):
    """Ant: no method's return at N is shown above its untrained policy's 100 (RP1's gains 3, −2,
    0.5: one-sided p 0.33; Greedy's all below): its comparisons keep their numbers, say "nothing
    learned by 10,000" on every measure, and leave Hopper's family of one."""
    two_method_runs(
        tmp_path, "ant", {"rp1": [103.0, 98.0, 100.5], "greedy": [99.0, 98.0, 99.5]}, 100.0
    )
    two_method_runs(
        tmp_path, "hopper", {"rp1": [300.0, 280.0, 310.0], "greedy": [0.0, 20.0, -5.0]}, 0.0
    )
    frames = {"table1": table_frames(load_runs(tmp_path).metrics, TABLES[0], ("ant", "hopper"))}
    claims = claim_table(frames).set_index(["task", "metric"])
    for metric in ("paper_best", "return_at", "grid_best", "auc"):
        ant, hopper = claims.loc[("ant", metric)], claims.loc[("hopper", metric)]
        assert ant["verdict"] == "nothing learned by 10,000" and not ant["learned"]
        assert math.isnan(ant["p_holm"]) and math.isnan(ant["p_holm_all"]) and ant["diff"] > 0
        assert hopper["learned"] and hopper["p_holm"] == pytest.approx(hopper["p"])
    learning = frames["table1"].learning.set_index(["task", "metric"])
    ant = learning.loc[("ant", "return_at")]
    assert (ant["untrained"], ant["top_method"], ant["top_median"]) == (100.0, "rp1", 100.5)
    assert ant["gain_p"] > 0.05 and learning.loc[("hopper", "return_at"), "gain_p"] < 0.05
    (tmp_path / "out").mkdir()
    write_claims(frames, tmp_path / "out")
    text = (tmp_path / "out" / "claims.md").read_text()
    assert (
        "| ant | paper | 10,000 | 100.0 | RP1: 100.5 |" in text and "**nothing learned** |" in text
    )


def test_learned_is_a_one_sided_test_of_each_runs_gain_over_its_untrained_policy():
    assert gain_p(np.array([1.0, 2.0, 3.0])) < 0.05
    assert gain_p(np.array([1.0, -1.0, 0.5])) > 0.05
    assert gain_p(np.array([2.0, 2.0])) == 0.0 and gain_p(np.array([-1.0, -1.0])) == 1.0
    assert math.isnan(gain_p(np.array([1.0, math.nan])))  # one gain: no test


def test_every_comparison_of_every_table_is_a_claim_by_its_id():
    """Comparison ids are unique over the report, each claims one, and a comparison names two
    methods of the method table, a pair once per table."""
    ids = [comparison.id for spec in TABLES for comparison in spec.comparisons]
    assert len(ids) == len(set(ids)) and sorted(ids) == sorted(id_ for _, id_ in CLAIMS)
    names = {method.name for method in METHOD_TABLE}
    for spec in TABLES:
        pairs = [(comparison.a, comparison.b) for comparison in spec.comparisons]
        assert len(pairs) == len(set(pairs)) and set().union(*pairs) <= names


def test_a_table_that_can_compare_nothing_is_left_out_with_a_note(tmp_path):
    """One method (Table 1 with RP1 alone) or one seed each (Table 3): no table file, no
    one-seed "[x, x]" cell, and index.md says why."""
    two_method_runs(tmp_path / "runs", "hopper", {"rp1": [3.0, 2.0], "rp1-noadapt": [1.0]}, 0.0)
    two_method_runs(tmp_path / "runs", "ant", {"rp1-nopca": [1.0]}, 0.0)
    metrics = load_runs(tmp_path / "runs").metrics
    frames = {spec.name: table_frames(metrics, spec, ("hopper", "ant")) for spec in TABLES}
    assert not comparable(frames["table1"]) and comparable(frames["table3"])
    notes = left_out(frames)
    assert "table1: nothing to compare — only rp1 has runs; not written" in notes
    assert not any(note.startswith("table3") for note in notes)
    single = tmp_path / "single"
    two_method_runs(single, "ant", {"rp1": [1.0], "greedy": [2.0]}, 0.0)
    frames = {"table1": table_frames(load_runs(single).metrics, TABLES[0], ("ant",))}
    assert left_out(frames) == (
        "table1: nothing to compare — greedy, rp1 have runs, one seed each at most (1); not written",
    )


def test_a_report_of_old_runs_without_evaluations_csv_beside_runs_with_one(tmp_path):
    """Runs made before the grid still report, their fair measures read from metrics.csv; the
    Runs table says which have a grid; a table that compares nothing is left out with a note."""
    runs = tmp_path / "runs"
    two_method_runs(runs, "hopper", {"rp1": [300.0, 280.0], "greedy": [0.0, 20.0]}, 0.0)
    write_grid(runs / "hopper-rp1" / "seed1", 2_000, [0.0, 0.0, 280.0, 280.0, 280.0])
    written = {path.name for path in write_report(runs, tmp_path / "out")}
    assert {
        "table1.md",
        "table1.csv",
        "table1_fair.csv",
        "table1_ttests.csv",
        "claims.md",
    } <= written
    assert "table3.md" not in written  # RP1 alone
    index = (tmp_path / "out" / "index.md").read_text()
    assert "| hopper | paper | greedy | 2 | 0, 1 | 10,000 | 10,000 – 10,000 | — |" in index
    assert (
        "| hopper | paper | rp1 | 2 | 0, 1 | 10,000 | 10,000 – 10,000 | every 2,000: 1 of 2 |"
        in index
    )
    assert "- table3: nothing to compare — only rp1 has runs; not written" in index
    fair = pd.read_csv(tmp_path / "out" / "table1_fair.csv").set_index(["metric", "method"])
    assert fair.loc[("return_at", "rp1"), "median"] == 290.0
    assert fair.loc[("auc", "greedy"), "median"] == 5.0  # (5·0 + 5·value) / 10 for 0 and 20
    assert fair.loc[("auc", "rp1"), "median"] == (0.5 * 300.0 + 0.6 * 280.0) / 2


@pytest.mark.slow
@pytest.mark.parametrize("phase_cap", ["150", "900"])
def test_read_from_metrics_the_policy_in_force_is_the_one_the_grid_evaluated(phase_cap, tmp_path):
    """A tiny run with the grid (short and long phases): at every grid point, the metrics row
    that the fair measures of a run without the grid read (the last with samples < g) is the
    iteration whose policy the grid evaluated there."""
    overrides = {**TINY, "collect.alpha": "0", "collect.phase_cap": phase_cap, "eval.every": "300"}
    cfg = resolve("halfcheetah-rp1", seed=1, budget=1_800, overrides=overrides)
    run_training(cfg, tmp_path / "run", progress=False)
    loaded = load_runs(tmp_path)
    grid = loaded.evaluations
    assert grid["samples"].tolist() == [300.0 * k for k in range(1, 7)]
    iterations = loaded.metrics.assign(eval_return=loaded.metrics["iteration"])
    read = in_force_returns(iterations, grid["samples"].to_numpy())
    np.testing.assert_array_equal(read, grid["iteration"].to_numpy())


# --- methods of one's own in the tables and figures ------------------------------------------------

OWN_ROWS = (
    Method("vr-03", "V+R (λ = 0.3)", "fixed", 0.3, False),
    Method("rp1-nopca-state", "RP1 (No EarlyStop, state variance)", "adaptive", 0.0, False, bonus="state"),
    Method("rp1-fixed02", "RP1 (λ = 0.2)", "fixed", 0.2, True, in_paper=False),
    Method(
        "vr-matched", "V+R (matched phases)", "fixed", 0.5, False,
        matched_phases=True, in_paper=False, short_label="V+R (matched)",
    ),
)  # fmt: skip
"""Rows of one's own that register_method adds: a baseline, an ablation and two controls (one of
matched phases), beside RP1_METHODS's RANGE, RP1 with a bonus of its own."""

SHOWN_WITH = {
    "rp1-range": {"table2", "fig3"},
    "vr-03": {"table1", "fig1"},
    "rp1-nopca-state": {"table3", "fig_ablation"},
    "rp1-fixed02": {"table4", "table_model", "fig_controls"},
    "vr-matched": {"table4", "table5", "table_model", "fig_controls"},
}
"""The tables and curve figures that list methods of each row's kind (and fig_model, every
model-based method's)."""


def legend_texts(monkeypatch) -> dict[str, list[str]]:
    """The legend entries of each figure the report draws from now on, by file name; none is
    written."""
    drawn: dict[str, list[str]] = {}

    def record(figure, path):
        drawn[path.stem] = [
            text.get_text()
            for ax in figure.axes
            if ax.get_legend()
            for text in ax.get_legend().texts
        ]
        return path

    monkeypatch.setattr(figures, "save", record)
    return drawn


def column_headers(frames) -> list[str]:
    """The method columns of a table, as its first interquartile-mean table heads them."""
    headers = [line for line in render(frames).splitlines() if line.startswith("| task |")]
    return headers[1].strip("| ").split(" | ")[3:]


def test_a_method_of_ones_own_is_labelled_in_every_table_and_figure_of_its_kind(
    tmp_path, monkeypatch
):
    """Rows added from outside rp1 (RP1_METHODS and register_method) are columns of the tables
    and curves of the figures that show methods of their kind, under their labels (a table of
    rp1's controls: the short label), and nowhere else; a matched control brings the method it
    matches into Table 5."""
    monkeypatch.setenv(METHODS_VARIABLE, "extension_examples:RANGE")
    monkeypatch.setattr(method_table, "_REGISTERED", {})
    for row in OWN_ROWS:
        register_method(row)
    methods = model_based_methods()
    for slope, method in enumerate(methods, start=1):
        for seed in range(2):
            write_run(tmp_path / "runs", "hopper", method, seed, [3_000, 6_000, 9_000],
                      [seed, slope, 2 * slope], budget=10_000,
                      test_model_error_common=[1.0, 1.0 / slope, 0.5 / slope])  # fmt: skip
    metrics = load_runs(tmp_path / "runs").metrics
    drawn = legend_texts(monkeypatch)
    write_curve_figures(run_tables(metrics), ("hopper",), tmp_path)
    write_model_figures(metrics, ("hopper",), tmp_path)
    headers = {
        spec.name: column_headers(table_frames(metrics, spec, ("hopper",))) for spec in TABLES
    }
    for name, shown in SHOWN_WITH.items():
        row = methods[name]
        labels = {row.label, row.short_label}
        tables = {table for table, columns in headers.items() if labels & set(columns)}
        curves = {
            figure.removesuffix("_hopper")
            for figure, texts in drawn.items()
            if any(text == f"{row.label} (n = 2)" for text in texts)
        }
        assert (tables, curves) == (
            {t for t in shown if t.startswith("table")},
            {f for f in shown if f.startswith("fig")} | {"fig_model"},
        ), name
    assert headers["table5"] == [
        "Greedy", "Greedy (matched)", "V+R", "V+R (matched)", "No EarlyStop", "No EarlyStop (matched)",
    ]  # fmt: skip
    assert headers["table2"] == ["State", "RP1 (reward range)", "Reward"]  # RP1 last


def test_tost_interval_is_welchs_90_percent_interval_of_the_difference():
    """The interval of the two one-sided tests: each one-sided Welch test of the difference
    against an end of the interval has p = 0.05 exactly; three seeds give a wider interval than
    their percentile bootstrap."""
    from scipy import stats as scipy_stats

    from rp1.report.stats import mean_difference, tost_interval

    a, b = np.array([141.4, 146.5, 156.5]), np.array([135.3, 143.3, 163.1])
    low, high = tost_interval(a, b)
    for end, side in ((low, "greater"), (high, "less")):
        test = scipy_stats.ttest_ind(a - end, b, equal_var=False, alternative=side)
        assert test.pvalue == pytest.approx(0.05)
    boot = mean_difference(a, b)
    assert low < boot.low and boot.high < high
    assert all(math.isnan(x) for x in tost_interval(a[:1], b))
    assert all(math.isnan(x) for x in tost_interval(np.ones(3), np.ones(3)))
