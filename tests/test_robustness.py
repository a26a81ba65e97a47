"""Issue 27, a reliability probe: signals to a sweep, failed video encodes, diverging runs, links
planted in run directories, odd runs in a report, ``--overwrite`` next to files rp1 did not
write, foreign policy files, out-of-range options, and the smaller defects. Each test fails
without its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import one_error, run_cli, snapshot, train_args
from rp1.cli import main
from rp1.runs import CHECKPOINT, CONFIG, ENVIRONMENT, FINISHED, METRICS


# --- temporary files are created exclusively, never through a planted link (defect 4) ----------


def test_temporary_files_are_not_written_through_planted_links(tmp_path):
    """Links at the names a temporary file once had (``NAME.tmp``), pointing at a file of the
    user's: a run and a report write their files and leave the target alone."""
    from rp1.experiments.report import write_report

    out, report = tmp_path / "run", tmp_path / "report"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    names = [CONFIG, METRICS, FINISHED, ENVIRONMENT, str(CHECKPOINT), "policy/last.msgpack", "policy/best.msgpack", "learning_curve.png"]
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
