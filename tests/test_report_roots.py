"""A report of several roots (``rp1 report A B --out DIR``): one report of all their runs, as if
the roots were folders of one tree, each run named by its root's folder and its path there."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import run_cli_output
from report_runs import two_method_runs, write_environment, write_run
from rp1.core.errors import ConfigError
from rp1.report.cell_provenance import run_provenance
from rp1.report.fair import policy_grid
from rp1.report.runs_table import load_runs, named_run_dirs


def two_sweeps(tree):
    """Two sweeps under ``tree``, ``first`` (seeds 0–2 of Hopper's RP1 and Greedy) and
    ``second`` (seeds 0–2 again, another realisation, and 3–4), each run with its CPU recorded."""
    two_method_runs(
        tree / "first", "hopper", {"rp1": [5.0, 6.0, 7.0], "greedy": [1.0, 2.0, 3.0]}, 0.0
    )
    for seed in range(5):
        for method in ("rp1", "greedy"):
            write_run(
                tree / "second",
                "hopper",
                method,
                seed,
                [0, 5_000],
                [0.0, 4.0 + seed],
                budget=10_000,
                phase=5_000,
            )
    for run_dir in sorted(tree.glob("*/*/seed*")):
        write_environment(run_dir, {"commit": run_dir.parts[-3], "cpu_features": ["avx2"]})


def test_several_roots_are_one_report_as_if_they_were_folders_of_one_tree(tmp_path):
    two_sweeps(tmp_path / "tree")
    one = load_runs(tmp_path / "tree")
    several = load_runs([tmp_path / "tree" / "first", tmp_path / "tree" / "second"])
    for table in ("metrics", "evaluations", "others", "other_evaluations"):
        pd.testing.assert_frame_equal(getattr(one, table), getattr(several, table))
    assert one.notes == several.notes and one.dirs == several.dirs
    assert "second/hopper-rp1/seed4" in set(several.metrics["run"])
    for loaded in (one, several):  # where each run ran is read from its own directory
        runs = run_provenance(
            loaded.dirs,
            loaded.others,
            policy_grid(loaded.others, loaded.other_evaluations),
            kept=False,
        )
        assert list(runs["commit"].unique()) == ["second"]  # seeds 0-2 of the second: realisations


def test_one_root_names_its_runs_by_their_paths_several_after_their_folders(tmp_path):
    write_run(tmp_path / "sweep", "hopper", "rp1", 0, [0], [1.0])
    assert list(named_run_dirs([tmp_path / "sweep"])) == ["hopper-rp1/seed0"]
    write_run(tmp_path / "other", "hopper", "rp1", 0, [0], [1.0])
    assert list(named_run_dirs([tmp_path / "sweep", tmp_path / "other"])) == [
        "sweep/hopper-rp1/seed0",
        "other/hopper-rp1/seed0",
    ]


def test_roots_that_overlap_share_a_folder_name_or_hold_no_runs_are_refused(tmp_path):
    for side in ("a", "b"):
        write_run(tmp_path / side / "runs", "hopper", "rp1", 0, [0], [1.0])
    for roots in ([tmp_path / "a", tmp_path / "a" / "runs"], [tmp_path / "b", tmp_path / "b"]):
        with pytest.raises(ConfigError, match=r"(inside|one folder with) root .* read twice"):
            named_run_dirs(roots)
    with pytest.raises(ConfigError, match="one folder name"):
        named_run_dirs([tmp_path / "a" / "runs", tmp_path / "b" / "runs"])
    with pytest.raises(ConfigError, match="no root"):
        named_run_dirs([])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no run directories"):
        named_run_dirs([tmp_path / "a" / "runs", tmp_path / "empty"])


def test_a_report_of_several_roots_needs_out_and_each_root_must_be_a_directory(tmp_path, capsys):
    two_sweeps(tmp_path)
    code, out, err = run_cli_output(["report", tmp_path / "first", tmp_path / "second"], capsys)
    assert (code, out) == (2, "") and len(err) == 1
    assert err[0].startswith("rp1: error: a report of several roots needs --out DIR")
    code, _, err = run_cli_output(
        ["report", tmp_path / "first", tmp_path / "missing", "--out", tmp_path / "out"], capsys
    )
    assert code == 2 and err == [f"rp1: error: no such directory: {tmp_path / 'missing'}"]
    code, _, err = run_cli_output(["report", "--out", tmp_path / "out"], capsys)
    assert code == 2 and "Missing argument 'ROOT...'" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_rp1_report_of_two_roots_writes_one_report_naming_runs_by_their_roots(tmp_path, capsys):
    """docs/cli.md's example, ``rp1 report sweeps/laptop sweeps/cluster --out DIR``: one report,
    and a seed both roots hold kept once (the first root's, the runs being alike)."""
    two_sweeps(tmp_path)
    out = tmp_path / "both"
    code, printed, err = run_cli_output(
        ["report", tmp_path / "first", tmp_path / "second", "--out", out], capsys
    )
    assert code == 0 and printed.startswith("wrote ") and (out / "index.md").is_file(), err
    index = (out / "index.md").read_text(encoding="utf-8")
    assert "second/hopper-rp1/seed0: duplicate of first/hopper-rp1/seed0" in index
