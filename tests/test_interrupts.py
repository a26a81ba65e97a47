"""Ctrl-C and SIGTERM stop a run at once, even inside a compiled call, and it resumes exactly; a
Ctrl-C while a command starts is one line and exit code 130."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from helpers import (
    driver_cmd,
    metrics_without_timing,
    subprocess_env,
    train_args,
    wait_for,
)
from rp1.cli import main
from rp1.rundir.files import (
    FINISHED,
)

# --- interrupts -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_the_run_inside_a_compiled_call_and_it_resumes(
    sig, code, finished_run, tmp_path
):
    """The driver holds the run inside a compiled JAX call (its first policy update, after the first
    checkpoint) and says so; only then is the signal sent."""
    out, ready = tmp_path / "run", tmp_path / "ready"
    proc = subprocess.Popen(
        [*driver_cmd(ready, "--hold-train-step"), *train_args(out)],
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(ready.exists, proc)
    sent = time.monotonic()
    proc.send_signal(sig)
    err = proc.communicate(timeout=60)[1].strip().splitlines()
    assert time.monotonic() - sent < 5 and not (out / FINISHED).exists()
    assert (
        proc.returncode == code
        and len(err) == 1
        and err[0].startswith("rp1: interrupted")
        and "--resume" in err[0]
    ), err
    assert len(metrics_without_timing(out)) == 1  # held in the second iteration
    assert main(train_args(out, "--resume")) == 0
    assert metrics_without_timing(out) == metrics_without_timing(finished_run)


def test_ctrl_c_while_the_command_starts_is_one_line_and_130(monkeypatch, capsys):
    """Before a run stops on signals itself (the imports, the config), Ctrl-C raises
    KeyboardInterrupt: one line, exit code 130, no traceback."""
    import rp1.config

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rp1.config, "resolve", interrupted)
    assert main(["train", "--preset", "halfcheetah-quick"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["rp1: interrupted (SIGINT)"]
