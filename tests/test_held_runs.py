"""What a run directory holds decides what ``--resume`` and ``rp1 sweep`` may do there, before
anything is written (:meth:`rp1.rundir.files.RunDir.held`): a finished run's copy (results without
checkpoint or marker, as ``rp1 export`` and committed runs keep them) is finished, results short
of the budget without a checkpoint are refused, a retired program's copy is refused in the line
the docs promise, and only a directory holding nothing a restart would not write again starts
afresh. Each kind of directory is hashed before and after.

The runs are copies of the session's tiny ``halfcheetah-rp1`` run (``finished_run``) and of
committed runs; nothing here trains, so every test is fast.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from helpers import BUDGET, PRESET, one_error, run_cli, run_cli_output, snapshot, train_args
from rp1.config import Config
from rp1.core.errors import ConfigError, ResultsWithoutCheckpoint
from rp1.rundir.files import (
    CHECKPOINT,
    DONE,
    ENVIRONMENT,
    FINISHED,
    METRICS,
    Held,
    RunDir,
    find_run_dirs,
    read_run_config,
)
from rp1.rundir.lockstep import CONTINUED_BY, program_mismatch
from rp1.sweep.plan import FAIL, SweepRequest, plan_sweep
from rp1.train import run_training

REPO = Path(__file__).resolve().parents[1]


def as_copy(run: Path) -> Path:
    """``run`` as ``rp1 export`` or a commit keeps it: its results, without checkpoint or marker."""
    shutil.rmtree(run / CHECKPOINT.parent)
    (run / FINISHED).unlink()
    return run


def cut_short(run: Path) -> Path:
    """``run`` (a copy, :func:`as_copy`) as a copy made mid-run would be: its last row's collection
    phase not yet counted, so its rows reach short of the budget."""
    with open(run / METRICS, newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = list(reader.fieldnames or []), list(reader)
    rows[-1]["phase_samples"] = "0"
    with open(run / METRICS, "w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)
    return run


def tiny_sweep_plan(out: Path):
    """The plan of a sweep of the tiny run (seed 0) over ``out``."""
    overrides = dict(a.split("=", 1) for a in train_args(out) if "=" in a)
    return plan_sweep(SweepRequest([PRESET], [0], out, budget=BUDGET, overrides=overrides))


@pytest.mark.parametrize("flags", [[], ["--resume"]], ids=["train", "resume"])
def test_a_finished_runs_copy_is_finished_and_nothing_is_written(flags, copied_run, capsys):
    copy = as_copy(copied_run)
    before = snapshot(copy)
    code, _, err = run_cli_output([*train_args(copy), *flags], capsys)
    assert code == 0 and not err, err
    assert snapshot(copy) == before
    cfg = read_run_config(copy)
    assert RunDir(copy).held(cfg) is Held.COPY and Held.COPY in DONE


def test_a_sweep_counts_a_finished_runs_copy_done(tmp_path, finished_run):
    copy = as_copy(Path(shutil.copytree(finished_run, tmp_path / PRESET / "seed0")))
    before = snapshot(tmp_path)
    assert [job.action for job in tiny_sweep_plan(tmp_path)] == ["skip"]
    assert snapshot(tmp_path) == before and RunDir(copy).held(read_run_config(copy)) in DONE


def test_results_short_of_the_budget_without_a_checkpoint_are_refused_untouched(
    tmp_path, finished_run, capsys
):
    run = cut_short(as_copy(Path(shutil.copytree(finished_run, tmp_path / PRESET / "seed0"))))
    before = snapshot(tmp_path)
    for flags in ([], ["--resume"]):
        one_error(
            *run_cli(train_args(run, *flags), capsys), 2, str(run), "no checkpoint", "--overwrite"
        )
    [job] = tiny_sweep_plan(tmp_path)  # the sweep fails this run alone, naming why
    assert job.action == FAIL and "no checkpoint" in job.problem
    assert snapshot(tmp_path) == before
    with pytest.raises(ResultsWithoutCheckpoint):
        RunDir(run).held(read_run_config(run))


def test_a_copys_metrics_that_are_not_text_are_one_line_naming_them(copied_run, capsys):
    copy = as_copy(copied_run)
    (copy / METRICS).write_bytes(b"iteration,samples\n\xff\xfe\x00garbage\n")
    before = snapshot(copy)
    one_error(*run_cli(train_args(copy, "--resume"), capsys), 2, str(copy / METRICS), "damaged")
    assert snapshot(copy) == before


def test_a_retired_programs_copy_resumed_is_refused_in_the_line_the_docs_promise(
    copied_run, capsys
):
    copy = as_copy(copied_run)
    record = json.loads((copy / ENVIRONMENT).read_text())
    record["environments"][-1]["seeds_per_process"] = 4
    (copy / ENVIRONMENT).write_text(json.dumps(record))
    before = snapshot(copy)
    release = CONTINUED_BY.replace("N", "4", 1).split(" ")[0]
    one_error(*run_cli(train_args(copy, "--resume"), capsys), 2, "4 seeds in one program", release)
    assert snapshot(copy) == before


def test_a_run_that_died_before_a_trained_row_starts_afresh(tmp_path, finished_run):
    """What a restart writes again (config, the untrained policy's row, its record) is all the
    directory holds: a sweep starts it afresh (``--resume`` too: test_run_directory_safety)."""
    run = as_copy(Path(shutil.copytree(finished_run, tmp_path / PRESET / "seed0")))
    with open(run / METRICS) as f:
        header, untrained = f.readline(), f.readline()
    (run / METRICS).write_text(header + untrained)
    cfg = read_run_config(run)
    assert RunDir(run).held(cfg) is Held.RESTART
    assert [job.action for job in tiny_sweep_plan(tmp_path)] == ["start"]
    assert RunDir(tmp_path / "empty").held(cfg) is Held.NOTHING


COMMITTED = [
    run for root in ("benchmarks/runs", "docs", "trained") for run in find_run_dirs(REPO / root)
]
"""Every run committed to the repository: finished runs' copies, a finished run with its marker
(``trained/``), and GPU pilots stopped short of their budgets."""


def held_or_refused(run: Path) -> Held | str:
    """What ``run`` holds for its own config, or ``"refused"`` for results short of the budget."""
    try:
        return RunDir(run).held(read_run_config(run))
    except ResultsWithoutCheckpoint:
        return "refused"


def pick(runs: list[Path]) -> list[Path]:
    """One committed run of each folder of runs (the first): a sample of every kind kept."""
    firsts: dict[Path, Path] = {}
    for run in runs:
        firsts.setdefault(run.parent.parent, run)
    return list(firsts.values())


@pytest.mark.slow
def test_no_committed_run_would_be_started_afresh():
    """Every committed run is finished (a copy, or with its marker) or refused as short of its
    budget: ``--resume`` and a sweep leave every one of them as it is."""
    held = {run: held_or_refused(run) for run in COMMITTED}
    assert len(held) > 100
    assert {run: h for run, h in held.items() if h not in (*DONE, "refused")} == {}


EACH_FOLDER = pytest.mark.parametrize(
    "committed", pick(COMMITTED), ids=lambda p: p.relative_to(REPO).parent.parent.as_posix()
)


def copied(committed: Path, tmp_path: Path) -> Path:
    """A copy of the committed run ``committed`` under ``tmp_path``."""
    return Path(shutil.copytree(committed, tmp_path / committed.parent.name / committed.name))


def test_a_sweep_says_nothing_of_continuing_a_finished_copy_of_an_older_schema(tmp_path, capsys):
    """A committed 10⁵ run (config schema 9) is skipped, not 'upgraded and continued'."""
    committed = REPO / "benchmarks" / "runs" / "pilot1e5" / "hopper-rp1" / "seed9"
    copied(committed, tmp_path)
    request = SweepRequest(
        ["hopper-rp1"],
        [9],
        tmp_path,
        budget=100_000,
        scale="small",
        overrides={"model.dealing": "round-robin"},
    )
    assert [job.action for job in plan_sweep(request)] == ["skip"]
    assert "continue" not in capsys.readouterr().out


@EACH_FOLDER
def test_a_sweep_skips_or_refuses_a_committed_run_and_changes_no_byte_of_it(committed, tmp_path):
    run = copied(committed, tmp_path)
    before = snapshot(tmp_path)
    cfg = Config.from_dict(read_run_config(run))
    if held_or_refused(run) == "refused":  # a GPU pilot stopped by the clock: refused, named
        with pytest.raises(ResultsWithoutCheckpoint, match="no checkpoint"):
            RunDir(run).action(cfg.to_dict())
    else:
        assert RunDir(run).action(cfg.to_dict()) == "skip"
    assert snapshot(tmp_path) == before


@pytest.mark.slow
@EACH_FOLDER
def test_resuming_a_committed_run_changes_no_byte_of_it(committed, tmp_path):
    run = copied(committed, tmp_path)
    before = snapshot(tmp_path)
    cfg = Config.from_dict(read_run_config(run))
    refused = "no checkpoint" if held_or_refused(run) == "refused" else ""
    if not refused and program_mismatch(run):  # a retired program's run: the docs' line
        refused = "seeds in one program"
    if refused:
        with pytest.raises(ConfigError, match=refused):
            run_training(cfg, run, resume=True, progress=False)
    else:
        run_training(cfg, run, resume=True, progress=False)
    assert snapshot(tmp_path) == before
