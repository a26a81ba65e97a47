"""`rp1 sweep`: runs every (preset, seed) once — skipping finished runs, resuming unfinished ones —
on a local process pool or on Ray; a failed run is reported and does not stop the others."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from helpers import TINY, read_rows, snapshot
from rp1.config import resolve
from rp1.errors import ConfigError
from rp1.experiments.report import write_report
from rp1.experiments.executors import Backend
from rp1.experiments.sweep import run_sweep
from rp1.experiments.sweep_plan import SweepRequest
from rp1.experiments.sweep_worker import SINGLE_THREAD_XLA_FLAG, worker_env
from rp1.runs import RunDir
from rp1.train import run_training

PRESETS = ["halfcheetah-greedy", "halfcheetah-vr"]
SEEDS = [0, 1]
BUDGET = 600  # two outer iterations of the tiny config


def tiny_sweep(out: Path, presets: list[str] = PRESETS, **backend) -> int:
    return run_sweep(SweepRequest(presets, SEEDS, out, budget=BUDGET, overrides={**TINY}), Backend(**backend))


def tiny_config(preset: str, seed: int):
    return resolve(preset, seed=seed, budget=BUDGET, overrides={**TINY})


class Killed(Exception):
    """Stands for a kill right after a checkpoint was written."""


def killed_after_first_checkpoint(run: Path, monkeypatch) -> None:
    """Leave in ``run`` a tiny greedy run (seed 1) that stopped right after its first checkpoint."""
    save_checkpoint = RunDir.save_checkpoint

    def save_then_die(self, state):
        save_checkpoint(self, state)
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(RunDir, "save_checkpoint", save_then_die)
        with pytest.raises(Killed):
            run_training(tiny_config("halfcheetah-greedy", 1), run, progress=False)


def died_before_first_checkpoint(run: Path) -> None:
    """Leave in ``run`` what a tiny vr run (seed 0) writes before its first iteration ends."""
    directory = RunDir(run)
    directory.prepare(tiny_config("halfcheetah-vr", 0).to_dict(), resume=False)
    directory.write_metrics([])


@pytest.mark.slow
def test_local_sweep_runs_resumes_then_skips(tmp_path, monkeypatch, capsys):
    killed = tmp_path / "halfcheetah-greedy" / "seed1"
    killed_after_first_checkpoint(killed, monkeypatch)
    first_row = read_rows(killed)
    assert len(first_row) == 1 and RunDir(killed).has_checkpoint()
    died_before_first_checkpoint(tmp_path / "halfcheetah-vr" / "seed0")

    assert tiny_sweep(tmp_path, workers=2) == 0
    runs = [tmp_path / preset / f"seed{seed}" for preset in PRESETS for seed in SEEDS]
    for run in runs:
        assert RunDir(run).is_finished(), (run / "log.txt").read_text()
        assert [int(r["iteration"]) for r in read_rows(run)] == [0, 1]
    # the killed run continued from its checkpoint: its first row (wall-clock times too) is kept
    assert read_rows(killed)[0] == first_row[0]
    assert "=== rp1 sweep: resume halfcheetah-greedy seed 1" in (killed / "log.txt").read_text()
    assert "(resumed)" in capsys.readouterr().out

    before = snapshot(tmp_path)
    assert tiny_sweep(tmp_path) == 0
    assert snapshot(tmp_path) == before
    assert capsys.readouterr().out.count("skipped") == len(runs)

    # the sweep's output is what `rp1 report` reads: every run counted at its budget
    assert all((run / "learning_curve.png").exists() for run in runs)
    write_report(tmp_path, tmp_path / "report")
    with open(tmp_path / "report" / "table1.csv") as f:
        cells = {(r["method"], int(r["samples"])): int(r["n_seeds"]) for r in csv.DictReader(f)}
    assert cells[("greedy", BUDGET)] == cells[("vr", BUDGET)] == len(SEEDS)
    assert (tmp_path / "report" / "fig1_halfcheetah.png").exists()


def test_failed_run_is_reported_and_the_others_finish(tmp_path, capsys):
    broken = RunDir(tmp_path / "halfcheetah-greedy" / "seed1")
    broken.prepare(tiny_config("halfcheetah-greedy", 1).to_dict(), resume=False)
    broken.checkpoint_path.parent.mkdir()
    broken.checkpoint_path.write_bytes(b"a corrupted checkpoint")

    assert tiny_sweep(tmp_path, presets=["halfcheetah-greedy"], workers=1) == 1  # one worker: it survives the failure
    assert RunDir(tmp_path / "halfcheetah-greedy" / "seed0").is_finished()
    assert not broken.is_finished()
    assert "Traceback" in (broken.path / "log.txt").read_text()
    out = " ".join(capsys.readouterr().out.split())
    assert "failed" in out and "ExtraData" in out and "1 of 2 runs finished" in out


@pytest.mark.slow
# Ray starts its processes with fork + exec, which is safe; JAX warns once it has run in this process.
@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")
def test_ray_sweep_on_a_local_instance(tmp_path):
    pytest.importorskip("ray")
    assert tiny_sweep(tmp_path, name="ray", workers=2) == 0
    for preset in PRESETS:
        for seed in SEEDS:
            run = tmp_path / preset / f"seed{seed}"
            assert RunDir(run).is_finished(), (run / "log.txt").read_text()


BAD = {
    "unknown backend": (dict(name="dask"), "valid backends: local, ray"),
    "no workers": (dict(workers=0), r"--workers must be in \[1, 1024\]"),
    "address without ray": (dict(address="auto"), "ray backend"),
    "unknown preset": (dict(presets=["halfcheetah-greedy", "cheetah-vr"]), "valid presets"),
    "bad override": (dict(overrides={**TINY, "model.members": "five"}), "expected int"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_fails_before_anything_runs(case, tmp_path):
    kwargs, message = BAD[case]
    arguments = dict(presets=PRESETS, overrides={**TINY}) | kwargs
    backend = {key: arguments.pop(key) for key in ("name", "workers", "address") if key in arguments}
    with pytest.raises(ConfigError, match=message):
        run_sweep(SweepRequest(seeds=SEEDS, out=tmp_path / "out", budget=BUDGET, **arguments), Backend(**backend))
    assert not (tmp_path / "out").exists()


def test_run_directory_of_another_config_is_refused_untouched(tmp_path):
    other = RunDir(tmp_path / "halfcheetah-vr" / "seed1")
    other.prepare(tiny_config("halfcheetah-vr", 1).to_dict() | {"budget": 900}, resume=False)
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match="another config.*budget"):
        tiny_sweep(tmp_path)
    assert snapshot(tmp_path) == before


def test_worker_env_shares_gpus_limits_threads_and_keeps_user_settings():
    env = worker_env(1, {"OMP_NUM_THREADS": "4", "XLA_FLAGS": "--xla_dump_to=/tmp/x"})
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "OMP_NUM_THREADS" not in env and env["MKL_NUM_THREADS"] == "1"
    assert env["XLA_FLAGS"] == f"--xla_dump_to=/tmp/x {SINGLE_THREAD_XLA_FLAG}"
    assert "XLA_FLAGS" not in worker_env(4, {}) and worker_env(4, {})["OPENBLAS_NUM_THREADS"] == "4"
