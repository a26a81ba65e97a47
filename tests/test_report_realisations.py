"""rp1 report says where each cell's runs come from (provenance.md) and how its verdicts depend
on which realisation of a seed it keeps (realisations.md, claims.csv's robust_to_realisation)."""

from __future__ import annotations

import pandas as pd
import pytest

from report_runs import two_method_runs, write_environment, write_grid
from rp1.core.errors import ConfigError
from rp1.report import cell_provenance, realisations
from rp1.report.claims import claim_table
from rp1.report.measures import run_tables
from rp1.report.runs_table import load_runs
from rp1.report.tables.results import table_frames
from rp1.report.tables.specs import TABLES

COMMIT_A, COMMIT_B = "a" * 40, "b" * 40
ZEN4 = "avx avx2 avx512f fma sse"
ZEN5 = "avx avx2 avx512f avx512_vp2intersect fma sse"


def judged(root):
    """Table 1 of the runs under ``root`` on hopper and swimmer: the loaded runs, their tables,
    the shown frames and the claims."""
    loaded = load_runs(root)
    runs = run_tables(loaded.metrics, loaded.evaluations)
    frames = {"table1": table_frames(runs, TABLES[0], ("hopper", "swimmer"))}
    return loaded, runs, frames, claim_table(frames)


def test_of_two_realisations_alike_in_what_they_hold_the_first_by_path_is_kept(tmp_path):
    """The rule looks at what a run holds, never at its returns: b's realisation, whose Greedy
    returns make RP1's lead vanish, is left out because a comes first."""
    two_method_runs(tmp_path / "a", "hopper", {"rp1": [300.0, 280.0, 310.0]}, 0.0)
    two_method_runs(tmp_path / "a", "hopper", {"greedy": [0.0, 20.0, -5.0]}, 0.0)
    two_method_runs(tmp_path / "b", "hopper", {"greedy": [290.0, 300.0, 310.0]}, 0.0)
    loaded = load_runs(tmp_path)
    kept = set(loaded.metrics.loc[loaded.metrics["method"] == "greedy", "run"])
    assert kept == {f"a/hopper-greedy/seed{k}" for k in range(3)}
    assert set(loaded.others["run"]) == {f"b/hopper-greedy/seed{k}" for k in range(3)}


def test_a_verdict_that_another_realisation_moves_is_listed_and_marked(tmp_path):
    """Hopper: RP1 beats Greedy with a's Greedy, not with b's: that variant moves the verdict on
    every measure (robust no); Swimmer's verdicts share Hopper's Holm family, so the variant
    touches them, but they stay (robust yes)."""
    two_method_runs(tmp_path / "a", "hopper", {"rp1": [300.0, 280.0, 310.0, 305.0]}, 0.0)
    two_method_runs(tmp_path / "a", "hopper", {"greedy": [0.0, 20.0, -5.0, 3.0]}, 0.0)
    two_method_runs(tmp_path / "b", "hopper", {"greedy": [290.0, 300.0, 310.0, 295.0]}, 0.0)
    two_method_runs(
        tmp_path / "a",
        "swimmer",
        {"rp1": [30.0, 31.0, 32.0, 33.0], "greedy": [1.0, 2.0, 0.0, 1.5]},
        0.0,
    )
    loaded, runs, frames, claims = judged(tmp_path)
    found = realisations.variants(loaded)
    assert [v.name for v in found] == ["hopper, paper, Greedy: b/hopper-greedy"]
    assert found[0].kept == tuple(f"a/hopper-greedy/seed{k}" for k in range(4))
    assert found[0].others == tuple(f"b/hopper-greedy/seed{k}" for k in range(4))
    other = realisations.variant_claims(frames, loaded, runs, found[0], ("hopper", "swimmer"))
    moves = realisations.compare(claims, [(found[0], other)])
    hopper = moves[moves["task"] == "hopper"]
    assert hopper["moves"].all() and set(hopper["metric"]) == {
        "paper_best",
        "return_at",
        "grid_best",
        "auc",
    }
    assert set(hopper["verdict"]) == {"holds"}
    assert not any(v.startswith("holds") for v in hopper["verdict_other"])
    swimmer = moves[moves["task"] == "swimmer"]
    assert len(swimmer) == 4 and not swimmer["moves"].any()  # p_H changed, the verdict did not
    robust = claims.assign(robust=realisations.robustness(claims, moves)).set_index(
        ["task", "metric"]
    )
    assert set(robust.loc["hopper", "robust"]) == {"no"}
    assert set(robust.loc["swimmer", "robust"]) == {"yes"}
    # the kept runs are untouched by the variant: the same claims again
    assert claim_table(frames).equals(claims)


def test_without_other_realisations_nothing_is_touched(tmp_path):
    two_method_runs(tmp_path, "hopper", {"rp1": [300.0, 280.0], "greedy": [0.0, 20.0]}, 0.0)
    loaded, _, _, claims = judged(tmp_path)
    assert realisations.variants(loaded) == []
    moves = realisations.compare(claims, [])
    assert moves.empty and set(realisations.robustness(claims, moves)) == {""}
    assert "No seed of this report has a second realisation." in realisations.variants_text(
        [], moves, pd.DataFrame()
    )


def test_several_folders_of_other_realisations_also_swap_all_at_once(tmp_path):
    two_method_runs(tmp_path / "a", "hopper", {"rp1": [300.0, 280.0], "greedy": [0.0, 20.0]}, 0.0)
    two_method_runs(tmp_path / "b", "hopper", {"rp1": [100.0, 120.0]}, 0.0)
    two_method_runs(tmp_path / "c", "hopper", {"greedy": [90.0, 110.0]}, 0.0)
    found = realisations.variants(load_runs(tmp_path))
    assert [v.name for v in found] == [
        "hopper, paper, RP1: b/hopper-rp1",
        "hopper, paper, Greedy: c/hopper-greedy",
        "every other realisation",
    ]
    assert set(found[-1].others) == set(found[0].others) | set(found[1].others)


def test_each_cell_states_its_provenance_and_a_mixed_cell_is_marked(tmp_path):
    """RP1's runs: one commit and CPU, both scored from their grid. Greedy's: two commits, one
    run without a record, one scored from its grid and one from metrics.csv: mixed in all of
    these; claims.csv names the mixed cell beside the verdict."""
    two_method_runs(tmp_path, "hopper", {"rp1": [300.0, 280.0], "greedy": [0.0, 20.0, 10.0]}, 0.0)
    zen = {"commit": COMMIT_A, "cpu_features": ZEN4, "openblas_coretype": "Zen"}
    for seed in (0, 1):
        run = tmp_path / "hopper-rp1" / f"seed{seed}"
        write_environment(run, {**zen, "recorded": f"2026-11-2{seed + 4} 10:00:00"})
        write_grid(run, 5_000, [0.0, [300.0, 280.0][seed]])
    write_environment(tmp_path / "hopper-greedy" / "seed0", zen)
    write_grid(tmp_path / "hopper-greedy" / "seed0", 5_000, [0.0, 0.0])
    write_environment(
        tmp_path / "hopper-greedy" / "seed1",
        {"commit": COMMIT_B + "-modified", "cpu_features": ZEN5, "openblas_coretype": ""},
        {"commit": COMMIT_A, "cpu_features": ZEN5, "openblas_coretype": ""},
    )
    loaded, runs, _, claims = judged(tmp_path)
    rows = cell_provenance.run_provenance(loaded.dirs, loaded.metrics, runs.grid, kept=True)
    by_run = rows.set_index("run")
    assert by_run.loc["hopper-greedy/seed1", "commit"] == "bbbbbbb-modified+aaaaaaa"
    assert by_run.loc["hopper-greedy/seed2", "commit"] == cell_provenance.NOT_RECORDED
    assert by_run.loc["hopper-greedy/seed1", "coretype"] == "unset"
    assert by_run.loc["hopper-rp1/seed1", "made"] == "2026-11-25"
    cells = cell_provenance.cell_provenance(rows, ("hopper",)).set_index("method")
    assert cells.loc["rp1", "mixed"] == ""
    assert cells.loc["rp1", "commit"] == "aaaaaaa ×2"
    assert cells.loc["rp1", "cpu"] == "AVX-512 (a) ×2"
    assert cells.loc["rp1", "scoring"] == "grid ×2"
    assert cells.loc["rp1", "made"] == "2026-11-24 – 2026-11-25"
    assert cells.loc["greedy", "mixed"] == "commit, cpu, coretype, scoring"
    assert cells.loc["greedy", "scoring"] == "metrics.csv ×2, grid ×1"
    # entries written before seeds_per_process existed are runs alone; no record says nothing
    assert cells.loc["rp1", "program"] == "alone ×2"
    assert cells.loc["greedy", "program"] == "alone ×2, not recorded ×1"
    assert cells.loc["greedy", "cpu"] == "AVX-512 (a) ×1, AVX-512 (b) ×1, not recorded ×1"
    mixed = cell_provenance.mixed_cells(claims, cells.reset_index())
    assert set(mixed) == {"greedy: commit, cpu, coretype, scoring"}
    legend = cell_provenance.cpu_legend(rows["cpu"])
    assert (
        f"- **AVX-512 (b)**: `{ZEN5}` (beyond the others of its kind: avx512_vp2intersect)"
        in legend
    )


def test_a_cell_of_runs_alone_and_in_a_program_is_refused_before_anything_is_written(tmp_path):
    """A seed in a batch of N computes other last bits than alone, or than in a batch of another
    size: a cell whose runs ran in programs of different sizes is not one experiment, and the
    report refuses it in one line naming the cell and which seeds ran how; a cell all of one
    program is reported, and says which program it holds, counting a program's runs once in the
    cell's work in all."""
    from rp1.report.write import write_report

    two_method_runs(tmp_path, "hopper", {"rp1": [300.0, 280.0, 290.0], "greedy": [0.0, 20.0]}, 0.0)
    for seed in (0, 1, 2):
        write_environment(tmp_path / "hopper-rp1" / f"seed{seed}", {"seeds_per_process": 2})
    write_environment(tmp_path / "hopper-greedy" / "seed0", {"seeds_per_process": 1})
    loaded, runs, _, _ = judged(tmp_path)
    rows = cell_provenance.run_provenance(loaded.dirs, loaded.metrics, runs.grid, kept=True)
    cell_provenance.check_programs(
        rows
    )  # Greedy: alone and not recorded, which is not held against it
    cells = cell_provenance.cell_provenance(rows, ("hopper",)).set_index("method")
    assert cells.loc["rp1", "program"] == "2 seeds ×3" and cells.loc["rp1", "mixed"] == ""
    # work in all: a program's run counts 1/N of its wall time, a run alone all of it
    work = rows.set_index("run")["work_s"]
    rp1_work = sum(work[f"hopper-rp1/seed{seed}"] for seed in (0, 1, 2))
    greedy_work = work["hopper-greedy/seed0"] + work["hopper-greedy/seed1"]
    assert rp1_work > 0 and greedy_work > 0
    assert cells.loc["rp1", "work_total_s"] == pytest.approx(rp1_work / 2)
    assert cells.loc["greedy", "work_total_s"] == pytest.approx(greedy_work)
    # a program's runs each count its wall time: the legend says so where a cell holds one
    shared = "counts the program's wall time, which the N seeds share"
    assert shared in cell_provenance.provenance_text(cells.reset_index(), rows)
    alone = rows[rows["run"].str.startswith("hopper-greedy")]
    alone_cells = cell_provenance.cell_provenance(alone, ("hopper",))
    assert shared not in cell_provenance.provenance_text(alone_cells, alone)

    write_environment(tmp_path / "hopper-rp1" / "seed1", {"seeds_per_process": 1})
    with pytest.raises(ConfigError) as refused:
        write_report(tmp_path, tmp_path / "out")
    assert str(refused.value) == (
        "hopper, paper, RP1 holds runs of programs of different sizes (2 seeds: seeds 0, 2; "
        "alone: seeds 1): a seed in a batch computes other last bits than alone or in a batch of "
        "another size, so they are not one experiment; report them from separate folders"
    )
    assert not (tmp_path / "out").exists()


def test_cpus_are_named_by_their_widest_extension():
    labels = cell_provenance.cpu_labels(
        ["avx avx2 fma", ZEN4, cell_provenance.NOT_RECORDED, "asimd sve"]
    )
    assert labels == {
        cell_provenance.NOT_RECORDED: cell_provenance.NOT_RECORDED,
        "avx avx2 fma": "AVX2",
        ZEN4: "AVX-512",
        "asimd sve": "Arm SIMD",
    }
    assert cell_provenance.short_commit("unknown") == "unknown"


@pytest.mark.slow
def test_the_report_writes_provenance_and_realisations_and_links_them(tmp_path):
    from rp1.report.write import write_report

    two_method_runs(
        tmp_path / "a", "hopper", {"rp1": [300.0, 280.0, 310.0], "greedy": [0.0, 20.0, -5.0]}, 0.0
    )
    two_method_runs(tmp_path / "b", "hopper", {"greedy": [290.0, 300.0, 310.0]}, 0.0)
    names = {path.name for path in write_report(tmp_path, tmp_path / "out")}
    assert {"provenance.md", "provenance.csv", "realisations.md", "realisations.csv"} <= names
    index = (tmp_path / "out" / "index.md").read_text()
    assert "[realisations.md](realisations.md)" in index and "**Realisations**" in index
    claims = pd.read_csv(tmp_path / "out" / "claims.csv")
    assert set(claims.loc[claims["task"] == "hopper", "robust_to_realisation"]) == {"no"}
    text = (tmp_path / "out" / "realisations.md").read_text()
    assert (
        "| hopper, paper, Greedy: b/hopper-greedy | 3 | a/hopper-greedy ×3; not recorded ×3; not recorded ×3 |"
        in text
    )
