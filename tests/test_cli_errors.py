"""A command's errors are one line with the right exit code: usage errors and out-of-range options
on every command (2, nothing written), a policy file with bad metadata or of another run (2, a
ConfigError)."""

from __future__ import annotations

import pytest

from helpers import one_error, rewrite_meta, run_cli

# --- options: range-checked, usage errors one line on every command -------------------------------

USAGE = {
    "train: not an integer": (
        ["train", "--preset", "hopper-quick", "--budget", "1e12"],
        "--budget",
    ),
    "train: unknown option": (["train", "--preset", "hopper-quick", "--bogus"], "--bogus"),
    "sweep: missing --out": (["sweep", "--presets", "hopper-quick"], "--out"),
    "evaluate: not an integer": (["evaluate", "RUN", "--episodes", "1e20"], "--episodes"),
    "evaluate: no run": (["evaluate"], "Missing argument 'RUN'"),  # as the help names it
    "report: no root": (["report"], "Missing argument 'ROOT...'"),
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
    "train: phase cap 1e400": (
        ["train", "--preset", "hopper-quick", "--set", "collect.phase_cap=1e400"],
        "collect.phase_cap=1e400: expected int",
    ),
    "train: phase cap of 400 digits": (
        ["train", "--preset", "hopper-quick", "--set", f"collect.phase_cap={10**400}"],
        "collect.phase_cap must be <= 100,000,000",
        "(401 characters)",
    ),
    "train: seed of 400 digits": (
        ["train", "--preset", "hopper-quick", "--seed", str(10**400)],
        "seed must be in [0, 2143289344)",
    ),
    "train: budget of 400 digits": (
        ["train", "--preset", "hopper-quick", "--budget", str(10**400)],
        "budget must be <= 1,000,000,000",
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
    "train: checkpoint interval": (
        ["train", "--preset", "hopper-quick", "--checkpoint-every", "-1"],
        "checkpoint interval",
        "0 or more",
    ),
    "sweep: checkpoint interval": (
        ["sweep", "--presets", "hopper-quick", "--checkpoint-every", "nan"],
        "checkpoint interval",
        "0 or more",
    ),
    "evaluate: seed 2**64": (["evaluate", "RUN", "--seed", str(2**64)], "--seed", "2143289344"),
    "evaluate: episodes": (["evaluate", "RUN", "--episodes", str(10**20)], "--episodes", "10,000"),
    "evaluate: size": (
        ["evaluate", "RUN", "--size", "100000x100000", "--video-file", "OUT/v.mp4"],
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


# --- policy files: metadata checked, a policy of another run refused ------------------------------


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
