"""What others can plant is not followed: temporary files are created exclusively, never through
a planted link; a link planted as a run's lock file is not followed; ``python -m rp1`` imports no
task module from the working directory."""

from __future__ import annotations

import json

import pytest

from helpers import one_error, rewrite_meta, run_cli, train_args
from rp1.cli import main
from rp1.rundir.files import CHECKPOINT, CONFIG, ENVIRONMENT, FINISHED, METRICS

# --- temporary files are created exclusively, never through a planted link ------------------------


@pytest.mark.slow
def test_temporary_files_are_not_written_through_planted_links(tmp_path):
    """Links at the names a temporary file once had (``NAME.tmp``), pointing at a file of the
    user's: a run and a report write their files and leave the target alone."""
    from rp1.experiments.report import write_report

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
