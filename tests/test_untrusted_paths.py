"""What others can plant is not followed: temporary files are created exclusively, never through
a planted link; a link planted as a run's lock file is not followed; no file of a run is read
through a link out of its run directory (export, report and status leave it out, saying why);
``python -m rp1`` imports no task module from the working directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import one_error, rewrite_meta, run_cli, run_cli_output, train_args
from rp1.cli import main
from rp1.core.errors import LinkOutside
from rp1.rundir.files import (
    CHECKPOINT,
    CONFIG,
    ENVIRONMENT,
    EVALUATIONS,
    FINISHED,
    METRICS,
    RunDir,
    config_hash,
)

# --- temporary files are created exclusively, never through a planted link ------------------------


@pytest.mark.slow
def test_temporary_files_are_not_written_through_planted_links(tmp_path):
    """Links at the names a temporary file once had (``NAME.tmp``), pointing at a file of the
    user's: a run and a report write their files and leave the target alone."""
    from rp1.report.write import write_report

    out, report = tmp_path / "run", tmp_path / "report"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    names = [
        CONFIG,
        METRICS,
        FINISHED,
        ENVIRONMENT,
        str(CHECKPOINT),
        "policy/last.msgpack",
        "policy/best.msgpack",
        "learning_curve.png",
    ]
    names += [f"../report/{name}" for name in ("index.md", "table1.md", "table1.csv", "phases.csv")]
    for name in names:
        link = out / f"{name}.tmp"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(victim)
    assert main(train_args(out)) == 0
    write_report(out, report)
    assert victim.read_text() == "precious"
    assert json.loads((out / CONFIG).read_text())["seed"] == 0 and (report / "index.md").is_file()


def test_a_link_planted_as_the_lock_file_is_not_followed(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "lock").symlink_to(victim)
    one_error(*run_cli(train_args(out), capsys), 1, str(out / "lock"))
    assert victim.read_text() == "precious"


# --- no file of a run is read through a link out of its run directory ----------------------------


def hand_run(run: Path, seed: int = 0) -> Path:
    """A finished hopper ``rp1`` run of two metrics rows written by hand in ``run``, with an
    ``environment.json``: what export, report and status read, without a training."""
    config = {"preset": "hopper-rp1", "task": "hopper", "method": "rp1", "seed": seed}
    config |= {"budget": 6_000, "collect": {"phase_cap": 3_000}}
    run.mkdir(parents=True)
    (run / CONFIG).write_text(json.dumps(config))
    header = "iteration,samples,eval_return,phase_samples\n"
    (run / METRICS).write_text(header + "0,0,1.0,3000\n1,3000,2.0,3000\n")
    (run / EVALUATIONS).write_text("samples,trained_on,iteration,eval_return,eval_std\n")
    (run / ENVIRONMENT).write_text(json.dumps({"environments": []}))
    (run / FINISHED).write_text(config_hash(config) + "\n")
    return run


def link_out(run: Path, name: str, outside: Path) -> None:
    """Move the run's file ``name`` to ``outside`` and leave a link to it in its place."""
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(run / name, outside)
    (run / name).symlink_to(outside)


def test_a_run_file_is_read_through_a_link_only_while_it_stays_in_the_run(tmp_path):
    run = hand_run(tmp_path / "run")
    link_out(run, METRICS, run / "kept" / METRICS)  # a link inside the run: read
    assert RunDir(run).read_file(METRICS, "metrics").startswith(b"iteration,")
    link_out(run, CONFIG, tmp_path / "elsewhere" / CONFIG)
    with pytest.raises(LinkOutside, match=f"{run / CONFIG} is a link out of {run}"):
        RunDir(run).read_config()
    (run / "checkpoint").symlink_to(tmp_path / "elsewhere")  # a folder on the way leads out
    with pytest.raises(LinkOutside, match="link out of"):
        RunDir(run).read_file(CHECKPOINT.parent / CONFIG, "checkpoint")


def test_export_leaves_out_a_result_file_linked_from_outside_the_tree(tmp_path, capsys):
    """The adversary's case: a run's environment.json is a link to a file outside the tree of
    runs. The export holds the run's own files and not that one, and says so in one line; a run
    whose metrics.csv leads out is left out whole."""
    root, out = tmp_path / "runs", tmp_path / "exported"
    run = hand_run(root / "a" / "seed0")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.json").write_text('{"secret": "not the run\'s"}')
    (run / ENVIRONMENT).unlink()
    (run / ENVIRONMENT).symlink_to(tmp_path / "private" / "secret.json")
    link_out(hand_run(root / "b" / "seed0", seed=1), METRICS, tmp_path / "private" / METRICS)
    code, stdout, err = run_cli_output(["export", root, "--out", out], capsys)
    assert (code, err) == (0, [])
    assert sorted(p.name for p in (out / "a" / "seed0").iterdir()) == [CONFIG, EVALUATIONS, METRICS]
    assert not (out / "b").exists()
    notes = [line for line in stdout.splitlines() if "link out of" in line]
    assert [note.split(":")[0] for note in notes] == [
        str(run / ENVIRONMENT),
        str(root / "b" / "seed0" / METRICS),
    ]
    assert f"{root / 'b' / 'seed0'}: left out" in stdout
    assert not any(b"secret" in p.read_bytes() for p in out.rglob("*") if p.is_file())


def test_an_environment_record_that_leads_out_is_rewritten_and_its_target_left_alone(tmp_path):
    from rp1.rundir.provenance import record

    run = hand_run(tmp_path / "run")
    link_out(run, ENVIRONMENT, tmp_path / "private" / ENVIRONMENT)
    warning = record(run, 1)
    assert warning is not None and "damaged" in warning and "link out of" in warning
    assert not (run / ENVIRONMENT).is_symlink()
    assert json.loads((tmp_path / "private" / ENVIRONMENT).read_text()) == {"environments": []}


@pytest.mark.slow  # the session's finished run: a tiny training
def test_resume_refuses_a_config_that_leads_out_of_the_run(copied_run, tmp_path, capsys):
    link_out(copied_run, CONFIG, tmp_path / "private" / CONFIG)
    one_error(*run_cli(train_args(copied_run, "--resume"), capsys), 2, "link out of")


@pytest.mark.slow  # a report: figures and bootstrap intervals
def test_report_and_status_leave_out_a_run_whose_files_link_out_of_it(tmp_path, capsys):
    from rp1.report.write import write_report

    root = tmp_path / "runs"
    hand_run(root / "a" / "seed0")
    link_out(hand_run(root / "b" / "seed0", seed=1), METRICS, tmp_path / "private" / METRICS)
    link_out(hand_run(root / "c" / "seed0", seed=2), CONFIG, tmp_path / "private" / CONFIG)
    write_report(root, tmp_path / "report")
    index = (tmp_path / "report" / "index.md").read_text()
    left_out = [line for line in index.splitlines() if "link out of" in line]
    assert len(left_out) == 2 and all(line.endswith("left out") for line in left_out)
    assert "b/seed0" in left_out[0] + left_out[1] and "c/seed0" in left_out[0] + left_out[1]
    code, stdout, err = run_cli_output(["status", root, "--json"], capsys)
    statuses = {s["run"]: s for s in json.loads(stdout)}
    assert (code, err) == (0, []) and statuses["a/seed0"]["state"] == "finished"
    for name in ("b/seed0", "c/seed0"):
        assert statuses[name]["state"] == "unreadable" and "link out of" in statuses[name]["note"]


# --- a run's task module is not imported from the working directory -------------------------------


@pytest.mark.slow
def test_python_m_rp1_evaluate_does_not_import_a_task_module_from_the_working_directory(
    copied_run, tmp_path
):
    import subprocess
    import sys

    from helpers import subprocess_env

    here = tmp_path / "cwd"
    here.mkdir()
    marker = tmp_path / "imported"
    (here / "planted27.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    config = json.loads((copied_run / CONFIG).read_text())
    (copied_run / CONFIG).write_text(json.dumps({**config, "task": "planted27:SPEC"}))
    rewrite_meta(
        copied_run / "policy" / "best.msgpack", lambda meta: {**meta, "task": "planted27:SPEC"}
    )
    done = subprocess.run(
        [sys.executable, "-m", "rp1", "evaluate", str(copied_run)],
        cwd=here,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert not marker.exists()
    one_error(done.returncode, done.stderr.strip().splitlines(), 2, "planted27")


def test_the_reports_provenance_does_not_read_an_environment_record_that_leads_out(tmp_path):
    from rp1.report.cell_provenance import read_environments

    run = hand_run(tmp_path / "run")
    (run / ENVIRONMENT).write_text(json.dumps({"environments": [{"commit": "abc"}]}))
    assert read_environments(run) == [{"commit": "abc"}]  # the run's own record, read
    outside = tmp_path / "private" / ENVIRONMENT
    link_out(run, ENVIRONMENT, outside)
    assert read_environments(run) == []  # not recorded, as for a run without one
    assert json.loads(outside.read_text())["environments"]  # the outside file holds a record
