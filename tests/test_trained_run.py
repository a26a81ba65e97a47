"""The trained runs shipped in the repository (``trained/``: README's first command's
``halfcheetah-first-seed0``, and a 10⁵ RP1 run per task of the replication, docs/trained-runs.md) work
from a fresh clone: each holds a run's result files and its two policies and nothing else, no
committed report reads it, and ``rp1 evaluate`` replays its best policy's recorded evaluation (to
the bit where this machine's environment is the one that made it; CPUs differ in the last bits of
XLA's and MuJoCo's arithmetic, so elsewhere only the protocol), as docs/trained-runs.md shows it."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (
    ROOT,
    SETTINGS_VARIABLES,
    environment_differences,
    made_in_env,
    subprocess_env,
)

SHIPPED = ROOT / "trained" / "halfcheetah-first-seed0"
"""README's first command's run, which the examples use."""
SHIPPED_RUNS = sorted(path for path in (ROOT / "trained").iterdir() if path.is_dir())
SHIPPED_FILES = {
    "config.json",
    "metrics.csv",
    "evaluations.csv",
    "environment.json",
    "finished",
    "learning_curve.png",
    "policy/best.msgpack",
    "policy/last.msgpack",
}
"""What a shipped run keeps of its directory: no checkpoint, lock or video."""
each_run = pytest.mark.parametrize("run", SHIPPED_RUNS, ids=lambda path: path.name)


def best_row(run: Path = SHIPPED) -> dict[str, str]:
    """The row of a shipped run's metrics.csv whose evaluation of a trained policy (iteration
    ≥ 1) is the best, the first of equals."""
    with (run / "metrics.csv").open(newline="") as f:
        rows = [row for row in csv.DictReader(f) if int(row["iteration"]) >= 1]
    return max(rows, key=lambda row: float(row["eval_return"]))


BUDGETS = {
    "halfcheetah-first-seed0": 10_000,
    "halfcheetah-rp1-seed11": 100_000,
    "hopper-rp1-seed18": 100_000,
}
"""Each shipped run's budget: README's first command's 10,000 samples, the replication's 10⁵."""


def test_the_shipped_runs_are_the_first_commands_and_one_10e5_rp1_run_per_replicated_task():
    assert [run.name for run in SHIPPED_RUNS] == sorted(BUDGETS)


@each_run
def test_a_shipped_run_is_its_results_and_policies_only(run):
    files = {str(path.relative_to(run)) for path in run.rglob("*") if path.is_file()}
    assert files == SHIPPED_FILES
    assert sum((run / name).stat().st_size for name in files) < 500_000


@each_run
def test_no_committed_report_reads_a_shipped_run(run):
    from results_page import REPORTS

    roots = [root for roots in REPORTS.values() for root in roots.split()]
    assert [root for root in roots if run.is_relative_to(ROOT / root)] == []


@each_run
def test_its_best_policy_is_the_best_evaluation_its_metrics_record(run):
    import rp1

    config = json.loads((run / "config.json").read_text())
    assert run.name == f"{config['preset']}-seed{config['seed']}"  # named by what it ran
    assert config["budget"] == BUDGETS[run.name]
    policy = rp1.load_policy(run)
    row = best_row(run)
    assert (policy.iteration, policy.samples) == (int(row["iteration"]), int(row["samples"]))
    assert policy.eval_return == float(row["eval_return"])


def evaluate_as_made(run: Path, *args: str) -> tuple[subprocess.CompletedProcess, bool]:
    """``rp1 evaluate RUN ARGS`` (``run`` absolute or relative to the repository, as given) in a
    process with the XLA and OpenBLAS settings the run recorded, exit code 0; and whether this machine's environment, with those settings, is the one that
    made the run (where it is, the replay is the recorded evaluation to the bit)."""
    from rp1.rundir.provenance import environment

    made_in = json.loads((ROOT / run / "environment.json").read_text())["environments"][-1]
    done = subprocess.run(
        [sys.executable, "-m", "rp1", "evaluate", str(run), *args],
        env={**subprocess_env(), **made_in_env(made_in)},
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    there = {**environment(), **{field: made_in[field] for field in SETTINGS_VARIABLES}}
    return done, not environment_differences(made_in, there)


@pytest.mark.slow
@each_run
def test_rp1_evaluate_replays_its_recorded_evaluation(run):
    """In a process with the XLA and OpenBLAS settings the run recorded, so that where the CPU is
    the one that made it the replay is the recorded evaluation to the bit."""
    done, as_made = evaluate_as_made(run, "--json")
    result = json.loads(done.stdout)
    config = json.loads((run / "config.json").read_text())
    assert result["replayed"] and result["policy"] == "best"
    assert result["episodes"] == len(result["returns"]) == config["eval_episodes"]
    assert all(r is not None and math.isfinite(r) for r in result["returns"])
    assert result["recorded_return"] == float(best_row(run)["eval_return"])
    if as_made:
        assert result["mean"] == result["recorded_return"]


def test_a_policy_prints_as_a_summary_not_its_weights():
    import rp1

    policy = rp1.load_policy(SHIPPED)
    shown = str(policy)
    assert shown == repr(policy) and len(shown) < 400  # its weights: tens of thousands
    row = best_row()
    for part in (
        "task='halfcheetah'",
        f"obs_dim={policy.obs_dim}, act_dim={policy.act_dim}, hidden=(32, 32)",
        "preset='halfcheetah-first', seed=0, which='best'",
        f"iteration={row['iteration']}, samples={row['samples']}",
        str(SHIPPED / "policy" / "best.msgpack"),
    ):
        assert part in shown, (part, shown)


def test_its_best_policy_deleted_rp1_evaluate_names_the_file_and_the_evaluations_that_wrote_it(
    tmp_path, capsys
):
    """Issue 73 (6): a copy of the shipped run without ``policy/best.msgpack`` is one line naming
    the file and that metrics.csv holds evaluations of trained policies, not "no trained policy
    has been evaluated"."""
    from helpers import run_cli_output

    run = Path(shutil.copytree(SHIPPED, tmp_path / "run"))
    best = run / "policy" / "best.msgpack"
    best.unlink()
    code, out, err = run_cli_output(["evaluate", run], capsys)
    assert (code, out, len(err)) == (2, "", 1), err
    with (SHIPPED / "metrics.csv").open(newline="") as f:
        trained = [row for row in csv.DictReader(f) if int(row["iteration"]) >= 1]
    assert err[0] == (
        f"rp1: error: {best} is missing, though the run wrote one: its metrics.csv holds "
        f"{len(trained)} evaluations of trained policies; it was deleted, or left behind when the "
        "run was copied: restore it from a copy that has it (rp1 export copies it), or --policy "
        "last evaluates its last policy"
    )


PAGE = ROOT / "docs" / "trained-runs.md"


def shown_outputs(page: Path = PAGE) -> list[tuple[str, list[str]]]:
    """Each ``$ rp1 evaluate trained/…`` line of ``page``'s text blocks, with the output lines
    shown after it (up to the next ``$`` line or the block's end)."""
    shown: list[tuple[str, list[str]]] = []
    in_text = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_text = line == "```text" and not in_text
        elif in_text and line.startswith("$ rp1 evaluate trained/"):
            shown.append((line[2:], []))
        elif in_text and shown and not line.startswith("$ "):
            shown[-1][1].append(line)
    return shown


SHOWN = shown_outputs()
"""docs/trained-runs.md's ``rp1 evaluate`` commands, each with the output it shows."""


def test_the_page_shows_an_evaluation_of_each_shipped_run():
    shown = {command.split()[2] for command, _ in SHOWN}
    assert shown == {f"trained/{run.name}" for run in SHIPPED_RUNS}


@pytest.mark.slow
@pytest.mark.parametrize(("command", "lines"), SHOWN, ids=[c.split()[2] for c, _ in SHOWN])
def test_the_pages_evaluate_outputs_are_what_rp1_evaluate_prints(command, lines):
    """docs/trained-runs.md shows what ``rp1 evaluate`` prints for a shipped run: its first line
    (the policy, from the run's files) everywhere, every line shown where this machine's
    environment is the one that made the run (elsewhere the replay's last bits may differ)."""
    done, as_made = evaluate_as_made(Path(command.split()[2]), *command.split()[3:])
    printed = done.stdout.splitlines()
    assert lines and printed[0] == lines[0]
    if as_made:
        assert printed[: len(lines)] == lines
