"""rp1 export: finished runs' result files copied to their paths in a tree of their own, checked,
never replacing a different copy unless told to."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import ROOT, one_error, run_cli_output
from rp1.core.errors import ConfigError
from rp1.rundir.export import EXPORTED, export_runs
from rp1.rundir.files import CONFIG, FINISHED, METRICS, RESULT_FILES

POLICIES = ("policy/best.msgpack", "policy/last.msgpack")
"""The kept policies of a run, by their path in it."""
SHIPPED = ROOT / "trained" / "halfcheetah-first-seed0"
"""A finished run with its policies and without its checkpoint (README's "Use a trained run")."""


def sweep_tree(finished_run: Path, root: Path) -> dict[str, Path]:
    """``root`` holding copies of the finished run: two finished, one unfinished (no marker), one
    whose config.json is not JSON."""
    runs = {name: root / name / "seed0" for name in ("a", "b", "unfinished", "damaged")}
    for run in runs.values():
        shutil.copytree(finished_run, run)
    (runs["unfinished"] / FINISHED).unlink()
    (runs["damaged"] / CONFIG).write_text("{not json")
    return runs


@pytest.mark.slow  # the session's finished run: a tiny training
def test_finished_runs_result_files_are_copied_to_their_paths_and_nothing_else(
    finished_run, tmp_path
):
    root, out = tmp_path / "sweep", tmp_path / "results"
    runs = sweep_tree(finished_run, root)
    done = export_runs(root, out)
    assert done.written == [out / "a" / "seed0", out / "b" / "seed0"]
    assert [note.split(":")[0] for note in done.left_out] == [
        str(runs["damaged"]),
        str(runs["unfinished"]),
    ]
    assert "no finished marker" in done.left_out[1] and "not valid JSON" in done.left_out[0]
    copied = out / "a" / "seed0"
    present = [name for name in EXPORTED if (finished_run / name).is_file()]
    assert {CONFIG, METRICS, *POLICIES} <= set(present)
    files = [str(p.relative_to(copied)) for p in copied.rglob("*") if p.is_file()]
    assert sorted(files) == sorted(present)
    for name in present:
        assert (copied / name).read_bytes() == (runs["a"] / name).read_bytes()
    again = export_runs(root, out)
    assert (again.written, again.unchanged) == ([], done.written)


@pytest.mark.slow  # the session's finished run: a tiny training
def test_a_copy_that_differs_is_replaced_only_when_told_and_nothing_is_written_before(
    finished_run, tmp_path, capsys
):
    root, out = tmp_path / "sweep", tmp_path / "results"
    runs = sweep_tree(finished_run, root)
    export_runs(root, out)
    changed = out / "a" / "seed0" / METRICS
    changed.write_text("edited\n")
    shutil.copytree(finished_run, root / "c" / "seed0")  # a new run, not yet exported
    code, _, err = run_cli_output(["export", root, "--out", out], capsys)
    one_error(code, err, 2, str(changed), "--overwrite")
    assert changed.read_text() == "edited\n" and not (out / "c").exists()
    code, stdout, err = run_cli_output(["export", root, "--out", out, "--overwrite"], capsys)
    assert (code, err) == (0, [])
    assert changed.read_bytes() == (runs["a"] / METRICS).read_bytes()
    assert stdout.splitlines()[-1] == (
        f"exported 2 runs to {out}; 1 already there as they are, 2 left out"
    )


@pytest.mark.slow  # the session's finished run: a tiny training
def test_an_export_inside_the_sweep_is_not_taken_for_runs(finished_run, tmp_path):
    root = tmp_path / "sweep"
    sweep_tree(finished_run, root)
    out = root / "results"
    first = export_runs(root, out)
    second = export_runs(root, out)
    assert (second.written, second.unchanged, second.left_out) == (
        [],
        first.written,
        first.left_out,
    )


def test_a_tree_without_runs_is_bad_input(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no run directories"):
        export_runs(tmp_path / "empty", tmp_path / "out")
    code, _, err = run_cli_output(["export", tmp_path / "nowhere", "--out", tmp_path], capsys)
    one_error(code, err, 2, "no such directory")


def test_the_exported_files_are_the_result_files_and_the_kept_policies():
    assert (*RESULT_FILES, *POLICIES) == EXPORTED


def test_a_copy_carries_the_runs_policies_and_loads_them(tmp_path):
    """Issue 73 (7): a copy ``rp1 export`` made holds the run's policy files, byte for byte, so
    that ``rp1.load_policy`` (and ``rp1 evaluate``) reads its best and last policies, not "an
    earlier rp1, which kept none"."""
    import rp1

    tree, out = tmp_path / "runs", tmp_path / "out"
    shutil.copytree(SHIPPED, tree / SHIPPED.name)  # trained/ holds other runs too
    done = export_runs(tree, out)
    copy = out / SHIPPED.name
    assert done.written == [copy] and done.left_out == []
    for name in POLICIES:
        assert (copy / name).read_bytes() == (SHIPPED / name).read_bytes()
    for which in ("best", "last"):
        policy, kept = rp1.load_policy(copy, which), rp1.load_policy(SHIPPED, which)
        assert policy.meta() == kept.meta() and policy.path == copy / "policy" / f"{which}.msgpack"


def test_a_copys_policy_that_differs_is_a_conflict_as_a_result_file_is(tmp_path):
    out = tmp_path / "out"
    export_runs(SHIPPED.parent, out)
    changed = out / SHIPPED.name / "policy" / "last.msgpack"
    changed.write_bytes(b"edited")
    with pytest.raises(ConfigError, match=f"{changed} differs from its run's own"):
        export_runs(SHIPPED.parent, out)
    assert changed.read_bytes() == b"edited"
    assert export_runs(SHIPPED.parent, out, overwrite=True).written == [out / SHIPPED.name]
    assert changed.read_bytes() == (SHIPPED / "policy" / "last.msgpack").read_bytes()


@pytest.mark.slow  # the session's finished run: a tiny training
def test_rp1_evaluate_replays_the_best_policy_of_an_exported_copy(finished_run, tmp_path, capsys):
    """Issue 73 (7): ``rp1 evaluate`` of a copy this rp1 exported replays its best policy's
    evaluation as it does the run's."""
    root, out = tmp_path / "sweep", tmp_path / "results"
    shutil.copytree(finished_run, root / "seed0")
    export_runs(root, out)
    code, stdout, err = run_cli_output(["evaluate", out / "seed0", "--json"], capsys)
    assert code == 0, err
    copied = json.loads(stdout)
    _, stdout, _ = run_cli_output(["evaluate", finished_run, "--json"], capsys)
    original = json.loads(stdout)
    assert copied["policy"] == "best" and copied["replayed"]
    assert {k: v for k, v in copied.items() if k != "run"} == {
        k: v for k, v in original.items() if k != "run"
    }
