"""Faults a reliability probe found: failed video encodes, diverging runs, links planted in run
directories, odd runs in a report, ``--overwrite`` next to files rp1 did not write, foreign
policy files, out-of-range options, and the smaller defects. Each test fails without its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import fill_disk, one_error, run_cli, run_cli_output, set_args, snapshot, train_args
from rp1.cli import main
from rp1.rundir.files import CHECKPOINT, CONFIG, ENVIRONMENT, FINISHED, METRICS

# --- temporary files are created exclusively, never through a planted link (defect 4) ----------


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


# --- options: range-checked, usage errors one line on every command (defect 8) ------------------

USAGE = {
    "train: not an integer": (
        ["train", "--preset", "hopper-quick", "--budget", "1e12"],
        "--budget",
    ),
    "train: unknown option": (["train", "--preset", "hopper-quick", "--bogus"], "--bogus"),
    "sweep: missing --out": (["sweep", "--presets", "hopper-quick"], "--out"),
    "evaluate: not an integer": (["evaluate", "RUN", "--episodes", "1e20"], "--episodes"),
    "evaluate: no run": (["evaluate"], "Missing argument"),  # click names it RUN or run by version
    "report: no root": (["report"], "Missing argument"),
    "envs: extra argument": (["envs", "a", "b"], "b"),
    "presets: unknown option": (["presets", "--x"], "--x"),
}


@pytest.mark.parametrize("case", list(USAGE))
def test_usage_errors_are_one_line_exit_2_on_every_command(case, capsys):
    args, fragment = USAGE[case]
    one_error(*run_cli(args, capsys), 2, fragment)


OUT_OF_RANGE = {
    "train: budget": (
        ["train", "--preset", "hopper-quick", "--budget", str(10**12)],
        "budget",
        "1,000,000,000",
    ),
    "train: seed 2**64": (
        ["train", "--preset", "hopper-quick", "--seed", str(2**64)],
        "seed",
        "2143289344",
    ),
    "train: members": (
        ["train", "--preset", "hopper-quick", "--set", "model.members=100000"],
        "model.members",
        "100",
    ),
    "train: batch": (
        ["train", "--preset", "hopper-quick", "--set", "policy.batch_steps=1000000000"],
        "policy.batch_steps",
        "10,000,000",
    ),
    "train: no hidden layers": (
        ["train", "--preset", "hopper-quick", "--set", "model.hidden="],
        "model.hidden",
        "1 to 16",
    ),
    "train: horizon": (
        ["train", "--preset", "hopper-quick", "--horizon", str(10**9)],
        "horizon",
        "1,000,000",
    ),
    "sweep: seeds": (
        ["sweep", "--presets", "hopper-quick", "--seeds", f"0-{10**20}"],
        "--seeds",
        "10,000",
    ),
    "sweep: workers": (
        ["sweep", "--presets", "hopper-quick", "--workers", str(10**20)],
        "--workers",
        "1024",
    ),
    "evaluate: seed 2**64": (["evaluate", "RUN", "--seed", str(2**64)], "--seed", "2143289344"),
    "evaluate: episodes": (["evaluate", "RUN", "--episodes", str(10**20)], "--episodes", "10,000"),
    "evaluate: size": (
        ["evaluate", "RUN", "--size", "100000x100000", "--video", "OUT/v.mp4"],
        "--size",
        "4096",
    ),
}


@pytest.mark.parametrize("case", list(OUT_OF_RANGE))
def test_out_of_range_options_are_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    args, *fragments = OUT_OF_RANGE[case]
    args = [
        a.replace("RUN", str(tmp_path / "run")).replace("OUT", str(tmp_path / "out")) for a in args
    ]
    if args[0] in ("train", "sweep"):
        args += ["--out", str(tmp_path / "out")]
    one_error(*run_cli(args, capsys), 2, *fragments)
    assert not (tmp_path / "out").exists()


# --- policy files: metadata checked, a policy of another run refused (defect 7) -----------------


def rewrite_meta(path: Path, change) -> None:
    """Replace the metadata of the policy file ``path`` by ``change(meta)``, sealed again (its
    checksum matches: the checks of the metadata must find it)."""
    from rp1.rundir.sealed import seal, unseal

    data, _ = unseal(path.read_bytes(), path, "policy file")
    data["meta"] = json.dumps(change(json.loads(data["meta"])))
    path.write_bytes(seal(data))


BAD_META = {
    "a key missing": (
        lambda meta: {k: v for k, v in meta.items() if k != "evaluator"},
        "lacks evaluator",
    ),
    "not a map": (lambda meta: [meta], "not a map"),
    "a key of the wrong type": (lambda meta: {**meta, "obs_dim": "17"}, "obs_dim"),
    "sizes that do not fit": (lambda meta: {**meta, "act_dim": 2}, "sizes"),
    "another task": (lambda meta: {**meta, "task": "hopper"}, "task 'hopper'"),
}


@pytest.mark.parametrize("case", list(BAD_META))
def test_policy_file_with_bad_metadata_is_one_line_exit_2_and_a_config_error(
    case, copied_run, capsys
):
    from rp1 import load_policy
    from rp1.core.errors import ConfigError

    change, fragment = BAD_META[case]
    policy = copied_run / "policy" / "best.msgpack"
    rewrite_meta(policy, change)
    one_error(*run_cli(["evaluate", copied_run], capsys), 2, str(policy), fragment)
    with pytest.raises(ConfigError, match=fragment):
        load_policy(copied_run)


# --- one odd run does not stop a report; a report is whole or not written (defects 5, 9) --------


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

    from rp1.outputs.policy_files import PolicySnapshot

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


# --- --overwrite deletes only what rp1 wrote, and only in an rp1 run (defect 6) ------------------


def test_a_directory_whose_config_json_is_not_rp1s_is_refused_untouched(tmp_path, capsys):
    out = tmp_path / "project"
    out.mkdir()
    (out / CONFIG).write_text(json.dumps({"name": "my web app", "port": 8080}))
    (out / METRICS).write_text("mine\n")
    before = snapshot(out)
    for flag in ([], ["--overwrite"], ["--resume"]):
        one_error(
            *run_cli(train_args(out, *flag), capsys),
            2,
            str(out / CONFIG),
            "not the config of an rp1 run",
        )
        assert snapshot(out) == before


@pytest.mark.slow
def test_overwrite_deletes_only_the_files_rp1_wrote(copied_run, capsys):
    mine = {
        "notes.txt": "mine",
        "policy/my_policy.msgpack": "mine",
        "checkpoint/backup.msgpack": "mine",
        "videos/holiday.mp4": "mine",
        "tensorboard/readme.txt": "mine",
    }
    for name, text in mine.items():
        (copied_run / name).parent.mkdir(exist_ok=True)
        (copied_run / name).write_text(text)
    (copied_run / "checkpoint" / ".state.msgpack.abc123.tmp").write_bytes(b"left by a kill")
    assert main(train_args(copied_run, "--overwrite", "--seed", "1")) == 0
    for name, text in mine.items():
        assert (copied_run / name).read_text() == text, name
    assert not (copied_run / "checkpoint" / ".state.msgpack.abc123.tmp").exists()
    assert json.loads((copied_run / CONFIG).read_text())["seed"] == 1


# --- a diverging run stops with one line, its checkpoint kept (defect 3) -------------------------

DIVERGING = {  # the stop rule would restore a policy from before it diverged, unless told not to
    "model fit": (["model.lr=1e6"], "the world model's fit diverged", "model.lr = 1000000.0"),
    "policy": (
        ["policy.lr=1e8", "policy.restore_best=false"],
        "policy training in the model diverged",
        "policy.lr = 100000000.0",
    ),
}


@pytest.mark.parametrize("case", list(DIVERGING))
def test_divergence_is_one_line_exit_1_without_a_nan_row_and_the_checkpoint_kept(
    case, tmp_path, capsys
):
    import math

    from helpers import read_rows

    settings, *fragments = DIVERGING[case]
    out = tmp_path / "run"
    one_error(*run_cli(train_args(out, *set_args(settings)), capsys), 1, *fragments, "iteration 1")
    rows = read_rows(out)
    assert [row["iteration"] for row in rows] == ["0"] and math.isfinite(
        float(rows[0]["eval_return"])
    )
    assert (out / CHECKPOINT).is_file() and not (out / FINISHED).exists()


# --- a run's task module is not imported from the working directory (defect 9) ------------------


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


# --- a video the encoder fails to write is an error, and nothing is left (defect 2) --------------


@pytest.fixture
def failing_encoder(tmp_path, monkeypatch):
    """Skip unless MuJoCo renders here and the video extra is installed; then make ffmpeg a program
    that writes part of its output and fails as on a full disk. Returns the temporary directory
    videos are encoded in (empty again after any video)."""
    import tempfile

    pytest.importorskip("imageio_ffmpeg")
    import imageio_ffmpeg

    from rp1.core.errors import RenderError
    from rp1.outputs.video import check_rendering

    try:
        check_rendering("halfcheetah", 100, (64, 48))
    except RenderError as err:
        pytest.skip(f"no OpenGL for offscreen rendering: {err}")
    fake = tmp_path / "ffmpeg"
    fake.write_text(
        '#!/bin/sh\nfor out; do :; done\nhead -c 1000 > "$out"\necho "av_interleaved_write_frame(): No space left on device" >&2\nexit 1\n'
    )
    fake.chmod(0o755)
    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", lambda: str(fake))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    return temporary


@pytest.mark.slow
def test_a_failed_video_encode_is_one_line_exit_1_and_leaves_nothing(
    failing_encoder, finished_run, tmp_path, capsys
):
    video = tmp_path / "out" / "best.mp4"
    args = ["evaluate", finished_run, "--episodes", "1", "--size", "64x48", "--video", video]
    code, out, err = run_cli_output(args, capsys)
    one_error(code, err, 1, str(video), "No space left on device")
    assert "video:" not in out and not video.exists() and list(failing_encoder.iterdir()) == []
    out = tmp_path / "run"
    one_error(
        *run_cli(train_args(out, "--video"), capsys),
        1,
        str(out / "videos"),
        "No space left on device",
    )
    assert not any((out / "videos").glob("*")) and list(failing_encoder.iterdir()) == []


VIDEO_THEN_SIGTERM = """
import os, signal, sys
from pathlib import Path
import numpy as np
from rp1.core.signals import exit_on_signals
from rp1.outputs.video import VideoFile

with exit_on_signals("resume it"), VideoFile(Path(sys.argv[1]), 10.0, (32, 24)) as video:
    video.add(np.zeros((24, 32, 3), np.uint8))
    print(video._tmp.name, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pause()
"""


def test_sigterm_while_a_video_is_encoded_leaves_no_temporary_folder_and_no_file(tmp_path):
    """An exit on a signal removes the encoder's temporary folder (rp1.core.signals.TEMPORARY) before it
    ends the process; the video never appears."""
    import subprocess
    import sys

    pytest.importorskip("imageio_ffmpeg", reason="the video extra is not installed")
    done = subprocess.run(
        [sys.executable, "-c", VIDEO_THEN_SIGTERM, str(tmp_path / "v.mp4")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    folder = Path(done.stdout.strip())
    assert done.returncode == 143 and done.stderr.strip().startswith(
        "rp1: interrupted (SIGTERM)"
    ), done.stderr
    assert folder.name.startswith("rp1-video-") and not folder.exists()
    assert not (tmp_path / "v.mp4").exists()
