"""Kept policies: ``rp1 evaluate`` replays the evaluation that made a policy best (bit for bit, as
in metrics.csv, and says so, or why not), ``load_policy`` acts as the run's own policy, a resumed run keeps the same policy
files as an uninterrupted one, and bad input is one line, exit code 2, nothing written."""

from __future__ import annotations

import csv
import json
import re
import shutil
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from flax import serialization

import rp1
from helpers import EVALUATED_CASES as CASES
from helpers import Crash, crash_after_steps, crash_before_checkpoint, rewrite_meta, snapshot
from helpers import run_cli_output as run_cli
from rp1.config import resolve
from rp1.core.errors import ConfigError
from rp1.rundir.sealed import seal, unseal
from rp1.train import run_training


def config(case: str, **extra: str):
    preset, budget, sets = CASES[case]
    return resolve(preset, seed=3, budget=budget, overrides={**sets, **extra})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished tiny run of each case."""
    root = tmp_path_factory.mktemp("runs")
    return {case: run_training(config(case), root / case, progress=False) for case in CASES}


def metrics(run: Path) -> list[dict[str, str]]:
    with open(run / "metrics.csv") as f:
        return list(csv.DictReader(f))


def evaluated(run: Path) -> list[dict[str, str]]:
    """Rows with an evaluation of a trained policy (iteration >= 1), as the best counts them."""
    return [r for r in metrics(run) if r["eval_return"] and int(r["iteration"]) >= 1]


@pytest.mark.parametrize("case", list(CASES))
def test_evaluate_replays_the_best_return_in_metrics_csv(case, runs, capsys):
    run = runs[case]
    best = max(evaluated(run), key=lambda r: float(r["eval_return"]))
    code, out, _ = run_cli(["evaluate", run, "--json"], capsys)
    result = json.loads(out)
    assert code == 0 and result["replayed"] and result["policy"] == "best"
    assert (result["iteration"], result["samples"]) == (
        int(best["iteration"]),
        int(best["samples"]),
    )
    assert result["mean"] == float(best["eval_return"])  # bit for bit: the text metrics.csv holds
    assert result["std"] == float(best["eval_std"])
    assert len(result["returns"]) == 2  # the run's eval_episodes

    code, out, _ = run_cli(["evaluate", run], capsys)  # text: rounded, and that it is the same
    mean, std = float(best["eval_return"]), float(best["eval_std"])
    assert code == 0 and f"mean return {mean:.2f}  std {std:.2f}" in out.splitlines()
    assert SAME in out.splitlines() and f"(evaluation return {mean:.2f})" in out
    assert result["environment_changes"] == []  # made here, by this process


SAME = "as recorded: the evaluation return in metrics.csv, bit for bit"
"""What ``rp1 evaluate`` says of a replay whose return is the recorded one."""


ELSEWHERE = {
    # what the run's environment.json says, and how rp1 evaluate explains the difference
    "on another CPU": (
        {"device": "Another CPU", "cpu_features": "sse sse2"},
        "this machine's environment is not the one that ran it",
    ),
    "here": ({}, "though this machine's environment is the one that ran it"),
    "without a record": (None, "the run has no record of where it ran"),
}


@pytest.mark.parametrize("case", list(ELSEWHERE))
def test_evaluate_says_why_a_replay_differs_from_the_recorded_return(case, runs, tmp_path, capsys):
    """A run whose best policy recorded another return (0.5 more: as if evaluated on another
    machine) and whose record says it ran ``case``: one line says by how much the replay differs
    and why, naming what differs from the record; ``--json`` has the numbers in full."""
    record, why = ELSEWHERE[case]
    run = Path(shutil.copytree(runs["rp1"], tmp_path / "run"))
    rewrite_meta(
        run / "policy" / "best.msgpack", lambda m: {**m, "eval_return": m["eval_return"] + 0.5}
    )
    file = run / "environment.json"
    if record is None:
        file.unlink()
    else:
        entries = json.loads(file.read_text())["environments"]
        entries[-1].update(record)
        file.write_text(json.dumps({"environments": entries}))
    _, out, _ = run_cli(["evaluate", run, "--json"], capsys)
    result = json.loads(out)
    code, out, _ = run_cli(["evaluate", run], capsys)
    (verdict,) = [line for line in out.splitlines() if line.startswith("not the recorded")]
    recorded = result["recorded_return"]
    assert code == 0 and result["mean"] != recorded and result["replayed"]
    assert verdict.startswith(f"not the recorded {recorded:.2f} (off by -0.5)") and why in verdict
    assert f"({file})" in verdict
    if record is None:
        assert result["environment_changes"] is None
    elif record:
        changes = result["environment_changes"]
        assert [c.split()[0] for c in changes] == ["device", "cpu_features"]
        assert changes[0].startswith("device 'Another CPU' -> ") and "; ".join(changes) in verdict
    else:
        assert result["environment_changes"] == []


def test_evaluate_judges_only_a_replay_of_the_whole_evaluation(runs, capsys):
    """Fewer or more episodes than recorded, or other seeds, are not that evaluation: no verdict."""
    for extra in (["--episodes", "1"], ["--episodes", "3"], ["--seed", "5"]):
        code, out, _ = run_cli(["evaluate", runs["rp1"], *extra], capsys)
        assert code == 0 and SAME not in out and "not the recorded" not in out, extra


@pytest.mark.parametrize("case", list(CASES))
def test_evaluate_last_and_more_episodes_and_seeds(case, runs, capsys):
    run = runs[case]
    last = metrics(run)[-1]  # the last step of both cases is evaluated
    _, out, _ = run_cli(["evaluate", run, "--policy", "last", "--json"], capsys)
    assert json.loads(out)["mean"] == float(last["eval_return"])

    # more episodes: the recorded ones first, then more of the same stream or seeds
    _, out, _ = run_cli(["evaluate", run, "--policy", "last", "--episodes", "3", "--json"], capsys)
    three = json.loads(out)
    _, out, _ = run_cli(["evaluate", run, "--policy", "last", "--episodes", "2", "--json"], capsys)
    assert three["returns"][:2] == json.loads(out)["returns"] and len(three["returns"]) == 3

    # --seed S: episode k reset with seed S + k, whatever the batch
    _, out, _ = run_cli(["evaluate", run, "--episodes", "3", "--seed", "40", "--json"], capsys)
    seeded = json.loads(out)
    _, out, _ = run_cli(["evaluate", run, "--episodes", "1", "--seed", "42", "--json"], capsys)
    assert seeded["reset_seeds"] == [40, 41, 42] and not seeded["replayed"]
    assert seeded["returns"][2] == json.loads(out)["returns"][0]


@pytest.mark.parametrize("case", list(CASES))
def test_load_policy_acts_as_the_runs_own_policy(case, tmp_path, monkeypatch):
    """The actions the run's evaluations took (recorded as they ran) are what the loaded best
    policy gives: bit for bit on the batch shape the run used, to float precision one by one."""
    import rp1.realenv.snapshots

    calls = []  # per evaluation: [(obs [slots, obs_dim], action [slots, act_dim]), ...]
    evaluate = rp1.realenv.snapshots.evaluate

    def recording(real, act_fn, count, seeds=None):
        steps = []
        calls.append(steps)

        def act(obs, episode, t):
            action, logp = act_fn(obs, episode, t)
            steps.append((obs.copy(), np.asarray(action).copy()))
            return action, logp

        return evaluate(real, act, count, seeds)

    monkeypatch.setattr(rp1.realenv.snapshots, "evaluate", recording)
    # no grid: every evaluation recorded is then a metrics row's
    run = run_training(config(case, **{"eval.every": "0"}), tmp_path / "run", progress=False)
    monkeypatch.undo()

    rows = [r for r in metrics(run) if r["eval_return"]]
    assert len(calls) == len(rows)
    best = max(evaluated(run), key=lambda r: float(r["eval_return"]))
    policy = rp1.load_policy(run)  # exported by the package
    assert (policy.task, policy.iteration, policy.samples, policy.eval_return) == (
        "halfcheetah",
        int(best["iteration"]),
        int(best["samples"]),
        float(best["eval_return"]),
    )
    low, high = (
        np.asarray(policy.action_low, np.float32),
        np.asarray(policy.action_high, np.float32),
    )
    steps = calls[rows.index(best)]
    for obs, action in steps[::17]:
        np.testing.assert_array_equal(policy(obs), np.clip(action, low, high))
        single = policy(obs[0])
        assert single.shape == (policy.act_dim,)
        # One observation takes another matrix kernel than the batch; on a GPU, whose float32
        # matrix products round as TF32 by default, the two agree to about 1e-3 (H200, measured).
        np.testing.assert_allclose(single, np.clip(action[0], low, high), rtol=2e-3, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("crash", ["in a step", "before the checkpoint"])
def test_resumed_run_keeps_the_uninterrupted_runs_policy_files(case, crash, tmp_path, monkeypatch):
    """Killed inside a step, or after a step's policy files were written but before its
    checkpoint: the resumed run ends with the uninterrupted run's policy files, byte for byte."""

    cfg = config(case)
    reference = run_training(cfg, tmp_path / "reference", progress=False)
    if crash == "in a step":
        crash_after_steps(monkeypatch, 2)
    else:
        crash_before_checkpoint(monkeypatch, 2)
    with pytest.raises(Crash):
        run_training(cfg, tmp_path / "resumed", progress=False)
    monkeypatch.undo()
    run_training(cfg, tmp_path / "resumed", resume=True, progress=False)
    for which in ("best", "last"):
        name = f"policy/{which}.msgpack"
        assert (tmp_path / "resumed" / name).read_bytes() == (reference / name).read_bytes(), which


def test_overwrite_deletes_the_policy_files(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["rp1"], run)
    from rp1.rundir.files import RunDir

    RunDir(run).prepare(config("rp1").to_dict(), overwrite=True)
    assert not (run / "policy").exists()


# --- runs of an earlier rp1 (no policy files) -----------------------------------------------------


def as_an_earlier_rp1_left_it(run: Path) -> Path:
    """``run`` without what an rp1 before policy files did not write: its policy files, its
    ``environment.json`` and the schema its ``config.json`` names."""
    shutil.rmtree(run / "policy")
    (run / "environment.json").unlink()
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "schema"}))
    return run


@pytest.fixture
def old_runs(runs, tmp_path):
    """The tiny runs as an rp1 before policy files would have left them."""
    return {
        case: as_an_earlier_rp1_left_it(Path(shutil.copytree(run, tmp_path / case)))
        for case, run in runs.items()
    }


def test_earlier_rp1_run_best_is_lost_last_comes_from_the_checkpoint(old_runs, capsys):
    code, _, err = run_cli(["evaluate", old_runs["rp1"]], capsys)
    assert code == 2 and len(err) == 1 and "earlier rp1" in err[0] and "--policy last" in err[0]
    assert "(config schema " in err[0]

    # model-free: the checkpoint holds the last evaluated policy: its evaluation is replayed exactly
    code, out, _ = run_cli(
        ["evaluate", old_runs["modelfree"], "--policy", "last", "--json"], capsys
    )
    result = json.loads(out)
    assert (
        code == 0
        and result["replayed"]
        and result["mean"] == float(metrics(old_runs["modelfree"])[-1]["eval_return"])
    )
    # model-based: the checkpoint's normaliser has absorbed the last phase: evaluated, not a replay
    code, out, _ = run_cli(["evaluate", old_runs["rp1"], "--policy", "last", "--json"], capsys)
    result = json.loads(out)
    assert code == 0 and not result["replayed"] and result["recorded_return"] is None

    shutil.rmtree(old_runs["rp1"] / "checkpoint")
    code, _, err = run_cli(["evaluate", old_runs["rp1"], "--policy", "last"], capsys)
    assert code == 2 and len(err) == 1 and "needs a checkpoint" in err[0]


def test_a_run_of_an_rp1_before_policy_files_kept_none(runs, tmp_path, capsys):
    """A config of a schema before the first rp1 that kept policy files: its best is lost."""
    from rp1.config.migrations import ADDED
    from rp1.rundir.policy_files import FIRST_KEEPING_SCHEMA

    run = as_an_earlier_rp1_left_it(Path(shutil.copytree(runs["rp1"], tmp_path / "run")))
    config = json.loads((run / "config.json").read_text())
    for added in ADDED:  # the keys an rp1 of the schema before did not write
        if added.schema >= FIRST_KEEPING_SCHEMA:
            *sections, key = added.key.split(".")
            inner = config
            for section in sections:
                inner = inner[section]
            del inner[key]
    (run / "config.json").write_text(json.dumps(config))
    shutil.rmtree(run / "checkpoint")  # of the newer config: it would not be this run's
    code, _, err = run_cli(["evaluate", run], capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0] == (
        f"rp1: error: {run} has no policy files: it was made by an earlier rp1 (config schema "
        f"{FIRST_KEEPING_SCHEMA - 1}), which kept none, so its best policy is lost"
    )


def test_resuming_an_earlier_rp1_run_keeps_policies_from_there_on(tmp_path, monkeypatch):
    """A run an earlier rp1 checkpointed, resumed now: the best is the best since the resume."""
    cfg = config("rp1")
    run = tmp_path / "run"
    crash_after_steps(monkeypatch, 2)
    with pytest.raises(Crash):
        run_training(cfg, run, progress=False)
    monkeypatch.undo()
    shutil.rmtree(run / "policy")  # as an earlier rp1 left it
    run_training(cfg, run, resume=True, progress=False)
    policy = rp1.load_policy(run)
    later = [r for r in evaluated(run) if int(r["iteration"]) >= 2]
    assert policy.kept_since == 2
    assert policy.eval_return == max(float(r["eval_return"]) for r in later)
    (run / "policy" / "best.msgpack").unlink()  # what it wrote is counted from the resume on
    with pytest.raises(ConfigError, match=f"holds {len(later)} evaluations? of trained policies"):
        rp1.load_policy(run)
    with pytest.raises(ConfigError, match=r"since it kept policies \(iteration 2\)"):
        rp1.load_policy(run)


# --- bad input ----------------------------------------------------------------------------------


BAD = {
    "unknown policy": (["--policy", "worst"], 2, "'worst' is not one of 'best', 'last'"),
    "no episodes": (["--episodes", "0"], 2, "--episodes must be in [1, 10,000]"),
    "negative seed": (["--seed", "-1"], 2, "--seed must be in [0, "),
    "video suffix": (["--video-file", "{tmp}/v.avi"], 2, "must end in .mp4 or .gif"),
    "video under a file": (["--video-file", "{tmp}/file/v.mp4"], 2, "file is not a directory"),
    "video is a directory": (["--video-file", "{tmp}"], 2, "is a directory"),
    "odd mp4 size": (
        ["--video-file", "{tmp}/v.mp4", "--size", "321x240"],
        2,
        "even width and height",
    ),
    "bad size": (["--video-file", "{tmp}/v.mp4", "--size", "big"], 2, "WIDTHxHEIGHT"),
}


NEEDS_VIDEO_EXTRA = {"odd mp4 size"}  # its size is checked after the packages an .mp4 needs
VIDEO_EXTRA = pytest.mark.skipif(
    find_spec("imageio_ffmpeg") is None,
    reason='the video extra: pip install "ready-policy-one[video]"',
)


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=VIDEO_EXTRA) if c in NEEDS_VIDEO_EXTRA else c for c in BAD]
)
def test_bad_input_one_line_exit_2_nothing_written(case, runs, tmp_path, capsys):
    extra, exit_code, message = BAD[case]
    (tmp_path / "file").write_text("not a directory")
    before, around = snapshot(runs["rp1"]), snapshot(tmp_path)
    args = ["evaluate", runs["rp1"], *(a.replace("{tmp}", str(tmp_path)) for a in extra)]
    code, out, err = run_cli(args, capsys)
    assert code == exit_code and out == ""
    assert len(err) == 1 and err[0].startswith("rp1: error:") and message in err[0], err
    assert snapshot(runs["rp1"]) == before and snapshot(tmp_path) == around


def test_no_run_there(tmp_path, capsys):
    code, _, err = run_cli(["evaluate", tmp_path / "none"], capsys)
    assert code == 2 and len(err) == 1 and "no run directory" in err[0]
    code, _, err = run_cli(["evaluate", tmp_path], capsys)
    assert code == 2 and len(err) == 1 and "no config.json" in err[0]


def test_a_deleted_best_policy_is_named_with_the_evaluations_that_wrote_it(runs, tmp_path, capsys):
    """Issue 73 (6): not "no trained policy has been evaluated" when metrics.csv holds some."""
    run = Path(shutil.copytree(runs["rp1"], tmp_path / "run"))
    best = run / "policy" / "best.msgpack"
    best.unlink()
    code, _, err = run_cli(["evaluate", run], capsys)
    one_line(code, err, f"{best} is missing, though the run wrote one: its metrics.csv holds ")
    n = len(evaluated(run))
    assert f"holds {n} evaluations of trained policies; it was deleted" in err[0]
    assert err[0].endswith("or --policy last evaluates its last policy")


def test_no_best_yet_where_no_trained_policy_was_evaluated(runs, tmp_path, capsys):
    """A run stopped after its untrained policy's evaluation has written no best yet."""
    run = Path(shutil.copytree(runs["rp1"], tmp_path / "run"))
    (run / "policy" / "best.msgpack").unlink()
    lines = (run / "metrics.csv").read_text().splitlines(keepends=True)
    (run / "metrics.csv").write_text("".join(lines[:2]))  # the header, iteration 0
    code, _, err = run_cli(["evaluate", run], capsys)
    one_line(code, err, f"{run} holds no best policy yet: no trained policy has been evaluated")


def test_a_deleted_policy_folder_of_a_run_that_kept_one_is_not_an_earlier_rp1s(
    runs, tmp_path, capsys
):
    """A run of this rp1 (its environment.json, its config's schema) without its policy folder:
    the files it wrote are named missing, not "an earlier rp1, which kept none"; its checkpoint
    still serves the last policy."""
    run = Path(shutil.copytree(runs["rp1"], tmp_path / "run"))
    shutil.rmtree(run / "policy")
    code, _, err = run_cli(["evaluate", run], capsys)
    one_line(code, err, f"{run / 'policy' / 'best.msgpack'} is missing, though the run wrote one")
    assert "its environment.json says an rp1 that keeps policy files made it" in err[0]
    assert "earlier rp1" not in err[0] and "--policy last" in err[0]
    (run / "environment.json").unlink()
    code, _, err = run_cli(["evaluate", run], capsys)
    one_line(code, err, "the schema its config.json names says an rp1 that keeps policy files")
    code, out, _ = run_cli(["evaluate", run, "--policy", "last", "--json"], capsys)
    assert code == 0 and json.loads(out)["policy"] == "last (checkpoint)"


def one_line(code: int, err: list[str], fragment: str) -> None:
    """``err`` is one line ``rp1: error: …`` holding ``fragment``, exit code 2."""
    assert code == 2 and len(err) == 1, (code, err)
    assert err[0].startswith("rp1: error: ") and fragment in err[0], err


def test_corrupt_policy_file(runs, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(runs["rp1"], run)
    (run / "policy" / "best.msgpack").write_bytes(b"\x00not msgpack")
    code, _, err = run_cli(["evaluate", run], capsys)
    assert code == 2 and len(err) == 1 and "not an rp1 policy file" in err[0]


# --- damaged and crafted policy files -------------------------------------------------------------


def flip_a_bit(data: bytes) -> bytes:
    """``data`` with one bit of its last kilobyte flipped (inside a sealed file's body)."""
    at = len(data) - 1000
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


def resealed(change):
    """A damage that unseals a policy file, applies ``change(payload, meta)`` and seals it again
    (the checksum then matches: only the checks of the content can find it)."""

    def damage(data: bytes) -> bytes:
        payload, sealed = unseal(data, Path("best.msgpack"), "policy file")
        assert sealed
        meta = json.loads(payload["meta"])
        change(payload, meta)
        payload["meta"] = json.dumps(meta)
        return seal(payload)

    return damage


def first_actor_weight(payload: dict) -> np.ndarray:
    return payload["policy"]["actor"]["0"]["0"]


CRAFTED = {
    "a flipped bit": (flip_a_bit, "does not match its SHA-256 checksum"),
    "obs_dim 2e9": (
        resealed(lambda p, m: m.update(obs_dim=2 * 10**9)),
        "expected float32[2000000000",
    ),
    "horizon 1e9": (resealed(lambda p, m: m.update(horizon=10**9)), "horizon = 1000000000"),
    "horizon -5": (resealed(lambda p, m: m.update(horizon=-5)), "horizon = -5"),
    "1e9 replay episodes": (
        resealed(lambda p, m: m["replay"].update(episodes=10**9)),
        "episodes = 1000000000",
    ),
    "an 18x5 actor weight": (
        resealed(
            lambda p, m: p["policy"]["actor"]["0"].update({"0": np.zeros((18, 5), np.float32)})
        ),
        "float32[18, 5]",
    ),
    "a NaN weight": (
        resealed(
            lambda p, m: p["policy"]["actor"]["0"].update(
                {
                    "0": np.where(
                        np.eye(*first_actor_weight(p).shape, dtype=bool), np.nan, 0.0
                    ).astype(np.float32)
                }
            )
        ),
        "holds inf or NaN",
    ),
    "a float64 weight": (
        resealed(
            lambda p, m: p["policy"]["actor"]["0"].update(
                {"0": first_actor_weight(p).astype(np.float64)}
            )
        ),
        "float64",
    ),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_damaged_or_crafted_policy_file_is_one_line_naming_it_at_load(case, runs, tmp_path, capsys):
    """``rp1 evaluate``: one line naming the file and what is wrong, exit code 2, nothing written
    and nothing of the sizes it names allocated; ``rp1.load_policy`` raises ConfigError at load."""
    damage, message = CRAFTED[case]
    run = Path(shutil.copytree(runs["rp1"], tmp_path / "run"))
    best = run / "policy" / "best.msgpack"
    best.write_bytes(damage(best.read_bytes()))
    before = snapshot(run)
    code, out, err = run_cli(["evaluate", run], capsys)
    assert code == 2 and out == "" and len(err) == 1, (code, err)
    assert err[0].startswith(f"rp1: error: policy file {best}") and message in err[0], err
    assert snapshot(run) == before
    with pytest.raises(ConfigError, match=re.escape(str(best))):
        rp1.load_policy(run)


def test_policy_file_without_a_checksum_still_loads_and_replays(runs, tmp_path, capsys):
    """A policy file of an rp1 before checksums (its payload at the top level) is read as it is."""
    run = Path(shutil.copytree(runs["rp1"], tmp_path / "run"))
    best = run / "policy" / "best.msgpack"
    payload, sealed = unseal(best.read_bytes(), best, "policy file")
    best.write_bytes(serialization.msgpack_serialize(payload))
    code, out, _ = run_cli(["evaluate", run, "--json"], capsys)
    assert code == 0 and sealed
    assert json.loads(out)["mean"] == max(float(r["eval_return"]) for r in evaluated(run))
