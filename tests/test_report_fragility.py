"""rp1 report says how firm each verdict is: how many single-seed leave-outs move it
(claims.csv's fragility, fragile_without), whether its difference differs between provenance
blocks (blocks, block_p), and which XLA settings each cell's runs ran with (provenance's xla)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from report_runs import two_method_runs, write_environment
from rp1.report import blocks, cell_provenance, fragility, stats
from rp1.report.claims import claim_table, share_no_block, verdict_cell
from rp1.report.measures import run_tables
from rp1.report.realisations import CLAIM_KEY
from rp1.report.runs_table import load_runs
from rp1.report.tables.results import table_frames
from rp1.report.tables.specs import TABLES

TASKS = ("hopper", "swimmer")


def judged(root):
    """Table 1 of the runs under ``root`` on hopper and swimmer: their tables, frames and claims."""
    loaded = load_runs(root)
    runs = run_tables(loaded.metrics, loaded.evaluations)
    frames = {"table1": table_frames(runs, TABLES[0], TASKS)}
    return loaded, runs, frames, claim_table(frames)


def one_outlier_runs(root):
    """Hopper: RP1 well above Greedy on seeds 0-3, but Greedy's seed 4 far above both, so the
    verdict is inconclusive with seed 4 and holds without it, and no other seed moves it.
    Swimmer: RP1 above Greedy on every seed, a verdict no leave-out moves."""
    two_method_runs(
        root,
        "hopper",
        {"rp1": [100.0, 101.0, 102.0, 103.0, 104.0], "greedy": [0.0, 1.0, 2.0, 3.0, 500.0]},
        0.0,
    )
    two_method_runs(
        root,
        "swimmer",
        {"rp1": [30.0, 31.0, 32.0, 33.0, 34.0], "greedy": [1.0, 2.0, 0.0, 1.5, 0.5]},
        0.0,
    )


@pytest.mark.slow
def test_a_verdict_that_one_seed_moves_counts_that_seed_and_no_other(tmp_path):
    one_outlier_runs(tmp_path)
    _, runs, frames, claims = judged(tmp_path)
    assert fragility.leave_outs(runs, TASKS) == [("hopper", s) for s in range(5)] + [
        ("swimmer", s) for s in range(5)
    ]
    found = fragility.fragility(claims, frames, runs, TASKS).set_index(["task", "metric"])
    hopper, swimmer = found.loc["hopper"], found.loc["swimmer"]
    assert set(hopper["verdict"].map(lambda v: v.split(":")[0])) == {"inconclusive"}
    assert list(hopper["fragility"]) == [1] * len(hopper)
    assert list(hopper["fragile_without"]) == ["4"] * len(hopper)
    # Swimmer shares Hopper's Holm family: Hopper's leave-outs change its p_H, not its data, and
    # are not counted against it; none of its own moves it
    assert set(swimmer["verdict"]) == {"holds"}
    assert list(swimmer["fragility"]) == [0] * len(swimmer)
    assert list(swimmer["fragile_without"]) == [""] * len(swimmer)
    row = next(found.reset_index().itertuples())
    assert verdict_cell(row).endswith("; moves without seed 4")


@pytest.mark.slow
def test_a_leave_out_judges_as_the_whole_report_made_again_would(tmp_path):
    """The leave-out makes only its task's part again and splices it in: its claims equal those
    of every table made anew from the runs without that seed, every number of them."""
    one_outlier_runs(tmp_path)
    _, runs, frames, _ = judged(tmp_path)
    compared = ["verdict", "n_a", "n_b", "diff", "diff_low", "diff_high", "p", "p_holm"]
    for task, seed in [("hopper", 4), ("hopper", 0), ("swimmer", 2)]:
        spliced = fragility.leave_out_claims(frames, runs, task, seed).set_index(CLAIM_KEY)
        anew = claim_table(
            {"table1": table_frames(fragility.without(runs, task, seed), TABLES[0], TASKS)}
        )
        anew = anew.set_index(CLAIM_KEY)
        pd.testing.assert_frame_equal(
            spliced.loc[anew.index, compared], anew[compared], check_dtype=False
        )


def test_a_leave_out_that_empties_a_cell_moves_its_verdicts(tmp_path):
    """With two seeds a cell, leaving one out leaves a single run: no test can be made, and the
    verdict it had counts as moved."""
    two_method_runs(tmp_path, "hopper", {"rp1": [300.0, 301.0], "greedy": [0.0, 1.0]}, 0.0)
    _, runs, frames, claims = judged(tmp_path)
    found = fragility.fragility(claims, frames, runs, TASKS)
    assert set(found["fragile_without"]) == {"0 1"} and set(found["fragility"]) == {2}


def test_the_block_interaction_is_small_where_one_blocks_difference_is_not_the_others():
    """Two blocks: p is the normal p of the difference between them over its standard error."""
    p = stats.heterogeneity(np.array([170.0, 9.0]), np.array([30.0, 40.0]))
    z = (170.0 - 9.0) / math.hypot(30.0, 40.0)
    assert p == pytest.approx(2 * (1 - 0.5 * (1 + math.erf(z / math.sqrt(2)))))
    assert stats.heterogeneity(np.array([10.0, 10.0, 10.0]), np.array([1.0, 2.0, 3.0])) == 1.0
    assert math.isnan(stats.heterogeneity(np.array([10.0]), np.array([1.0])))
    assert math.isnan(stats.heterogeneity(np.array([1.0, 2.0]), np.array([0.0, 1.0])))


def test_a_verdict_whose_cells_mix_blocks_says_each_blocks_difference_and_their_interaction(
    tmp_path,
):
    """Hopper's seeds 0-2 of both methods from one commit and CPU, seeds 3-5 from another: RP1
    leads in the first block only, so the interaction is small; Swimmer's cells are one block."""
    two_method_runs(
        tmp_path,
        "hopper",
        {
            "rp1": [300.0, 310.0, 305.0, 100.0, 104.0, 98.0],
            "greedy": [100.0, 102.0, 99.0, 101.0, 97.0, 103.0],
        },
        0.0,
    )
    two_method_runs(
        tmp_path, "swimmer", {"rp1": [30.0, 31.0, 32.0], "greedy": [1.0, 2.0, 0.0]}, 0.0
    )
    for method in ("rp1", "greedy"):
        for seed in range(6):
            commit, cpu = ("a" * 40, "avx avx2 avx512f") if seed < 3 else ("b" * 40, "avx avx2")
            write_environment(
                tmp_path / f"hopper-{method}" / f"seed{seed}",
                {"commit": commit, "cpu_features": cpu},
            )
    loaded, runs, _, claims = judged(tmp_path)
    rows = cell_provenance.run_provenance(loaded.dirs, loaded.metrics, runs.grid, kept=True)
    found = blocks.block_columns(claims, runs, rows).set_index(["task", "metric"])
    hopper = found.loc[("hopper", "return_at")]
    assert hopper["blocks"] == "aaaaaaa, AVX-512: 3 vs 3, Δ 204.7; bbbbbbb, AVX2: 3 vs 3, Δ 0.3"
    assert hopper["block_p"] < 0.001
    swimmer = found.loc[("swimmer", "return_at")]
    assert swimmer["blocks"] == "" and math.isnan(swimmer["block_p"])
    row = next(found.reset_index().query("task == 'hopper'").itertuples())
    assert "; method × block p = " in verdict_cell(row)


def test_a_block_one_side_lacks_is_listed_but_not_tested(tmp_path):
    two_method_runs(
        tmp_path, "hopper", {"rp1": [300.0, 310.0, 305.0, 301.0], "vr": [1.0, 2.0, 3.0, 4.0]}, 0.0
    )
    for seed in range(4):
        write_environment(tmp_path / "hopper-rp1" / f"seed{seed}", {"commit": "ab"[seed // 2] * 40})
        write_environment(tmp_path / "hopper-vr" / f"seed{seed}", {"commit": "b" * 40})
    loaded, runs, _, claims = judged(tmp_path)
    rows = cell_provenance.run_provenance(loaded.dirs, loaded.metrics, runs.grid, kept=True)
    found = blocks.block_columns(claims, runs, rows)
    text = found.loc[found["metric"] == "return_at", "blocks"].iloc[0]
    assert text == "aaaaaaa, not recorded: 2 vs 0; bbbbbbb, not recorded: 2 vs 4, Δ 300.5"
    assert found["block_p"].isna().all()


def test_cells_made_on_other_commits_share_no_block_and_the_verdict_says_so(tmp_path):
    """RP1's runs from one commit, V+R's from another: no block holds both, so no interaction can
    be tested and the verdict says that its difference is also one between commits."""
    two_method_runs(tmp_path, "hopper", {"rp1": [300.0, 310.0, 305.0], "vr": [1.0, 2.0, 3.0]}, 0.0)
    for seed in range(3):
        write_environment(tmp_path / "hopper-rp1" / f"seed{seed}", {"commit": "a" * 40})
        write_environment(tmp_path / "hopper-vr" / f"seed{seed}", {"commit": "b" * 40})
    loaded, runs, _, claims = judged(tmp_path)
    rows = cell_provenance.run_provenance(loaded.dirs, loaded.metrics, runs.grid, kept=True)
    found = blocks.block_columns(claims, runs, rows)
    row = next(found[found["metric"] == "return_at"].itertuples())
    assert row.blocks == "aaaaaaa, not recorded: 3 vs 0; bbbbbbb, not recorded: 0 vs 3"
    assert math.isnan(row.block_p)
    assert verdict_cell(row).endswith("; cells share no block")
    # pandas reads an empty `blocks` back as NaN; a block with runs on both sides is shared
    assert share_no_block(row.blocks) and not share_no_block(math.nan)
    assert not share_no_block("aaaaaaa, not recorded: 2 vs 0; bbbbbbb, not recorded: 2 vs 4, Δ 3.0")


def test_provenance_shows_the_xla_settings_a_run_recorded(tmp_path):
    two_method_runs(tmp_path, "hopper", {"rp1": [300.0, 310.0, 305.0]}, 0.0)
    flags = "--xla_cpu_multi_thread_eigen=false"
    write_environment(tmp_path / "hopper-rp1" / "seed0", {"xla_flags": flags, "xla_threads": 2})
    write_environment(tmp_path / "hopper-rp1" / "seed1", {"xla_flags": "", "xla_threads": 2})
    loaded, runs, _, _ = judged(tmp_path)
    rows = cell_provenance.run_provenance(loaded.dirs, loaded.metrics, runs.grid, kept=True)
    by_run = rows.set_index("run")["xla"]
    assert by_run["hopper-rp1/seed0"] == f"{flags}, 2 threads"
    assert by_run["hopper-rp1/seed1"] == "no flags, 2 threads"
    assert by_run["hopper-rp1/seed2"] == cell_provenance.NOT_RECORDED
    cell = cell_provenance.cell_provenance(rows, ("hopper",)).iloc[0]
    assert cell["mixed"] == "xla"
    assert "`XLA_FLAGS` with XLA's CPU thread count (`xla`)" in cell_provenance.provenance_text(
        cell_provenance.cell_provenance(rows, ("hopper",)), rows
    )
