"""A video the encoder fails to write is one line and exit code 1 and leaves nothing; SIGTERM while
a video is encoded leaves no temporary folder and no file."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import one_error, run_cli, run_cli_output, train_args

# --- a video the encoder fails to write is an error, and nothing is left --------------------------


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
    args = ["evaluate", finished_run, "--episodes", "1", "--size", "64x48", "--video-file", video]
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
