"""One odd run does not stop a report, and a report is whole or not written: odd runs are left out
with a note, a report the disk cannot hold is one line and no file; ``rp1 evaluate --json`` writes
null for a number that is not finite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import fill_disk, one_error, run_cli_output
from rp1.rundir.files import CONFIG, METRICS

# --- one odd run does not stop a report; a report is whole or not written -------------------------


def odd_runs(finished_run: Path, root: Path) -> dict[str, str]:
    """Copies of ``finished_run``'s config.json and metrics.csv under ``root``, one sound (seed 0)
    and the others each odd in one way; returns each odd run's directory and what its note says."""
    config = json.loads((finished_run / CONFIG).read_text())
    metrics = (finished_run / METRICS).read_text()
    header, *rows = metrics.splitlines()
    at = header.split(",").index("eval_return")

    def eval_returns(value: str, every: bool) -> str:
        changed = [
            ",".join(
                f if i != at or not (every or k == 1) else value for i, f in enumerate(r.split(","))
            )
            for k, r in enumerate(rows)
        ]
        return "\n".join([header, *changed]) + "\n"

    odd = {
        "sound": ({}, metrics.encode(), None),
        "not-utf8": ({"seed": 1}, metrics.encode() + b"3,\xff\xfe\n", "not a text file"),
        "seed-one": ({"seed": "one"}, metrics.encode(), "seed = 'one'"),
        "collect-list": ({"seed": 2, "collect": [1]}, metrics.encode(), "phase_cap = [1]"),
        "all-nan": ({"seed": 3}, eval_returns("nan", every=True).encode(), "not finite (nan)"),
        "one-inf": ({"seed": 4}, eval_returns("inf", every=False).encode(), "not finite (inf)"),
    }
    notes = {}
    for name, (changes, data, note) in odd.items():
        (root / name).mkdir(parents=True)
        (root / name / CONFIG).write_text(json.dumps({**config, **changes}))
        (root / name / METRICS).write_bytes(data)
        if note:
            notes[name] = note
    return notes


@pytest.mark.slow
def test_odd_runs_are_left_out_of_a_report_with_a_note_and_no_warnings(
    finished_run, tmp_path, capsys
):
    import warnings

    root, out = tmp_path / "runs", tmp_path / "report"
    notes = odd_runs(finished_run, root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # libraries' own (matplotlib 3.8 on a newer pyparsing)
        warnings.simplefilter("ignore", DeprecationWarning)
        code, _, err = run_cli_output(["report", root, "--out", out], capsys)
    assert code == 0 and err == [], err
    index = (out / "index.md").read_text()
    left_out = index.split("## Left out")[1].split("## Files")[0]
    for name, note in notes.items():
        assert any(name in line and note in line for line in left_out.splitlines()), (
            name,
            left_out,
        )
    assert "all-nan: no usable metrics rows — left out" in left_out
    # the sound run and what is sound of one-inf
    assert "| halfcheetah | paper | rp1 | 2 | 0, 4 |" in index


@pytest.mark.parametrize("given_out", [False, True])
def test_a_report_of_no_directory_is_bad_input_and_writes_nothing(given_out, tmp_path, capsys):
    out = ["--out", tmp_path / "report"] if given_out else []
    code, _, err = run_cli_output(["report", tmp_path / "nowhere", *out], capsys)
    one_error(code, err, 2, "no such directory")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_report_the_disk_cannot_hold_is_one_line_exit_1_and_leaves_no_file(
    finished_run, tmp_path, monkeypatch, capsys
):
    root, out = tmp_path / "runs", tmp_path / "report"
    odd_runs(finished_run, root)
    fill_disk(monkeypatch)
    code, _, err = run_cli_output(["report", root, "--out", out], capsys)
    one_error(code, err, 1, str(out), "No space left on device")
    assert list(out.iterdir()) == []


def test_evaluate_json_writes_null_for_a_number_that_is_not_finite(
    finished_run, monkeypatch, capsys
):
    import numpy as np

    from rp1.realenv.snapshots import PolicySnapshot

    monkeypatch.setattr(
        PolicySnapshot, "evaluate", lambda self, real, replay=None: np.full(replay.episodes, np.nan)
    )
    code, out, _ = run_cli_output(["evaluate", finished_run, "--json"], capsys)

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    result = json.loads(out, parse_constant=refuse)
    assert (
        code == 0
        and result["mean"] is None
        and result["returns"] == [None] * len(result["returns"])
    )
