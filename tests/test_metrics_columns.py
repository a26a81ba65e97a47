"""metrics.csv's columns are open: every key of every row is a column, the columns of
``METRIC_COLUMNS`` first and in their order, new ones after in the order they first appear; rows
of an earlier rp1 (without the new keys) are written and read as before; and every column an
earlier rp1 wrote keeps its values bit for bit (fixtures/before_diagnostics)."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import environment_differences
from rp1.config.defaults import EAGER
from rp1.report.runs_table import OPTIONAL_COLUMNS, read_metrics
from rp1.rundir.files import METRIC_COLUMNS, METRICS, TIMING_COLUMNS, RunDir, metric_columns
from rp1.rundir.provenance import environment
from rp1.train import run_training

OLD_ROW = {
    "iteration": 0,
    "samples": 0,
    "eval_return": 1.5,
    "wall_s": 0.25,
}  # keys of METRIC_COLUMNS only


def header_and_rows(run: RunDir) -> tuple[list[str], list[dict[str, str]]]:
    with open(run.path / METRICS, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames), list(reader)


def test_columns_are_the_old_ones_then_new_keys_by_first_appearance():
    rows = [{"b_new": 1, **OLD_ROW}, {"a_new": 2, "b_new": 3, "iteration": 1}]
    assert metric_columns(rows) == [*METRIC_COLUMNS, "b_new", "a_new"]
    assert metric_columns([OLD_ROW]) == list(METRIC_COLUMNS) == metric_columns([])


def test_rows_of_an_earlier_rp1_then_a_row_with_new_keys(tmp_path):
    """Resuming rewrites the checkpoint's rows (an earlier rp1's: the old columns); a row with a
    new key rewrites the file with its column, empty in the earlier rows; a row without it after
    is appended, empty there."""
    run = RunDir(tmp_path)
    run.write_metrics([OLD_ROW])
    assert header_and_rows(run)[0] == list(METRIC_COLUMNS)
    run.append_metrics({**OLD_ROW, "iteration": 1, "ppo_approx_kl_mean": 0.125, "phase_stop": 2})
    run.append_metrics({**OLD_ROW, "iteration": 2, "phase_stop": None})
    header, rows = header_and_rows(run)
    assert header == [*METRIC_COLUMNS, "ppo_approx_kl_mean", "phase_stop"]
    assert [(r["iteration"], r["ppo_approx_kl_mean"], r["phase_stop"]) for r in rows] == [
        ("0", "", ""),
        ("1", "0.125", "2"),
        ("2", "", ""),
    ]
    assert all(
        r["eval_return"] == "1.5" and r["wall_s"] == "0.25" and r["lambda"] == "" for r in rows
    )


def test_a_value_that_is_not_a_number_is_refused_and_nothing_written(tmp_path):
    run = RunDir(tmp_path)
    run.write_metrics([OLD_ROW])
    before = (tmp_path / METRICS).read_bytes()
    for value in ("fast", True, [1.0]):
        with pytest.raises(ValueError, match=r"metrics column odd holds .*, not a number"):
            run.append_metrics({**OLD_ROW, "odd": value})
    assert (tmp_path / METRICS).read_bytes() == before


def test_the_report_reads_old_and_new_files_by_column_name(tmp_path):
    """An earlier rp1's file lacks the new columns and the report's optional ones it did not write;
    a new file has more columns: both read, by name, the absent ones NaN."""
    old, new = RunDir(tmp_path / "old"), RunDir(tmp_path / "new")
    old.path.mkdir()
    (old.path / METRICS).write_text("iteration,samples,eval_return\n0,0,1.5\n")
    new.path.mkdir()
    new.write_metrics([{**OLD_ROW, "ppo_entropy_mean": 2.0}])
    old_table, _ = read_metrics(old.path, "old")
    new_table, _ = read_metrics(new.path, "new")
    assert set(OPTIONAL_COLUMNS) <= set(old_table.columns) and set(OPTIONAL_COLUMNS) <= set(
        new_table.columns
    )
    assert old_table["eval_return"].tolist() == new_table["eval_return"].tolist() == [1.5]
    assert math.isnan(old_table["wall_s"][0]) and new_table["wall_s"][0] == 0.25
    assert new_table["ppo_entropy_mean"].tolist() == [2.0] and "ppo_entropy_mean" not in old_table


# --- the fixture: tiny runs of every method by rp1 at e329a69, before the diagnostics -------------

BEFORE = Path(__file__).parent / "fixtures" / "before_diagnostics"


def fixture_configs() -> dict:
    spec = importlib.util.spec_from_file_location("before_diagnostics_make", BEFORE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make.configs()


@pytest.mark.slow
def test_every_method_keeps_every_column_it_had_bit_for_bit(tmp_path):
    """Tiny runs of every model-based method, RP1 with learned heads and model-free PPO write every
    column that rp1 at e329a69 wrote (fixtures/before_diagnostics) as it did, but the wall-clock
    ones, where the environment matches the one that made them (XLA's CPU arithmetic depends on
    the CPU and its thread count); the diagnostics are columns of their own. That rp1 computed the
    normalisers' statistics eagerly: the runs here do too (``statistics=eager``, what a run of it
    continues with)."""
    made_in, here = json.loads((BEFORE / "made_in.json").read_text()), environment()
    differences = environment_differences(made_in, here)
    if differences:
        pytest.skip(f"the fixture was made in another environment (made, here): {differences}")
    for name, cfg in fixture_configs().items():
        run = run_training(replace(cfg, statistics=EAGER), tmp_path / name, progress=False)
        with open(BEFORE / f"{name}.csv", newline="") as f:
            before = list(csv.DictReader(f))
        _, now = header_and_rows(RunDir(run))
        old = [c for c in before[0] if c not in TIMING_COLUMNS]
        assert [{c: r[c] for c in old} for r in now] == [{c: r[c] for c in old} for r in before], (
            name
        )
        assert ("ppo_approx_kl_mean" in now[0] and "phase_stop" in now[0]) or name.endswith(
            "modelfree"
        ), name
