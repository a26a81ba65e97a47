"""Config schema versions. Every key has a migration entry; a run written by an earlier
rp1 reads with the values that reproduce its behaviour, resumes and finishes as that rp1 would have
(the fixture ``fixtures/before_stop_on``, made by rp1 at 3fab089); a run of a newer rp1 is refused;
``rp1 report`` reads every schema side by side. A field added to a (toy) schema, declared
with its range, is checked by validation and asks for its migration entry with no other edit."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from helpers import (
    environment_differences,
    made_in_env,
    metrics_without_timing,
    run_cli,
    run_cli_output,
    snapshot,
)
from rp1.config import Config, resolve, validate
from rp1.config.migrations import ADDED, BASE_KEYS, SCHEMA, NewerSchema, migrate, written_schema
from rp1.config.schema import ranged
from rp1.core.errors import ConfigError
from rp1.report.runs_table import load_runs
from rp1.report.tables.files import write_table_frames
from rp1.report.tables.results import table_frames
from rp1.report.tables.specs import TABLES
from rp1.report.write import report_tasks
from rp1.rundir.files import (
    BEST,
    CONFIG,
    EVALUATIONS,
    FINISHED,
    FIRST_TRAINED,
    METRICS,
    RUN_POLICIES,
    TIMING_COLUMNS,
    RunDir,
    config_hash,
)
from rp1.rundir.policy_files import policy_path, read_policy

SCHEMA3 = Path(__file__).resolve().parent / "fixtures" / "schema3_runs"
"""Hopper's runs of the five-seed laptop-scale report (schema 3, written by rp1 at b0a757d) and
the hopper rows of the tables that rp1 then made of them."""
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "before_stop_on"
FIXTURE_SETS = {  # the fixture's config (fixtures/before_stop_on/make.py)
    "model.hidden": "8,8", "model.members": "2", "model.max_epochs": "100", "model.patience": "2", "model.lr": "0.02",
    "model.batch_size": "64", "model.reward": "learned", "model.head_hidden": "8",
    "policy.hidden": "16,16", "policy.batch_steps": "300", "policy.max_updates": "13", "policy.first_check": "2",
    "collect.phase_cap": "100", "eval_episodes": "2", "horizon": "50",
}  # fmt: skip
OLD_VALUES = {
    "lam.baseline": "including",
    "lam.g_normalizers": "inputs",
    "eval.every": "0",
    "statistics": "eager",
}  # 3fab089's, unlike today's defaults (no evaluation grid, statistics compiled per row count)
MADE_IN = json.loads((FIXTURE / "made_in.json").read_text())
"""An environment in which the fixture's metrics are written (fixtures/before_stop_on/make.py)."""


def dotted(config: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(dotted(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def current() -> dict:
    return resolve("halfcheetah-rp1").to_dict()


# --- the table ---------------------------------------------------------------------------------


def keys_of(schema: int) -> frozenset[str]:
    """Every key (dotted) of a config of ``schema``: the first config's and those added up to it."""
    return BASE_KEYS | {entry.key for entry in ADDED if entry.schema <= schema}


def entry_problems(config: Config) -> list[str]:
    """The keys of ``config`` (of :class:`Config` or a schema that adds to it) without an entry in
    rp1.config.migrations, and the entries for keys it does not have, one line each."""
    keys = set(dotted(config.to_dict())) - {"schema"}
    missing = [
        f"{key}: no entry in rp1.config.migrations.ADDED (add one, and raise SCHEMA)"
        for key in sorted(keys - keys_of(SCHEMA))
    ]
    return missing + [
        f"{key}: an entry of rp1.config.migrations for a key the config does not have"
        for key in sorted(keys_of(SCHEMA) - keys)
    ]


def test_every_config_key_has_a_migration_entry():
    assert entry_problems(Config(preset="p", task="halfcheetah", method="rp1")) == []
    assert not BASE_KEYS & {e.key for e in ADDED} and len({e.key for e in ADDED}) == len(ADDED)
    assert [e.schema for e in ADDED] == sorted(e.schema for e in ADDED) and ADDED[
        -1
    ].schema == SCHEMA


KEYS_PER_SCHEMA = {1: 34, 2: 38, 3: 40, 4: 41, 5: 44, 6: 45, 7: 49, 8: 50, 9: 51, 10: 52}
"""How many keys each schema had when it was released: a new key goes to a new schema (SCHEMA + 1),
which needs no line here."""


def test_released_schemas_keep_their_keys():
    assert {schema: len(keys_of(schema)) for schema in KEYS_PER_SCHEMA} == KEYS_PER_SCHEMA
    assert max(KEYS_PER_SCHEMA) <= SCHEMA


@dataclass(frozen=True)
class ToySection:
    """A section a later rp1 might add: one field, declared with its range and nothing else."""

    burst: int = ranged(4, at_least=1, at_most=64)


@dataclass(frozen=True)
class ToyConfig(Config):
    """Today's schema and the toy section."""

    toy: ToySection = field(default_factory=ToySection)


def test_a_field_added_to_a_schema_is_validated_and_needs_its_migration_entry_with_no_other_edit():
    toy = ToyConfig(preset="halfcheetah-rp1", task="halfcheetah", method="rp1")
    assert validate(toy) is toy
    with pytest.raises(ConfigError, match=r"^toy\.burst must be >= 1, got 0$"):
        validate(replace(toy, toy=ToySection(burst=0)))
    with pytest.raises(ConfigError, match=r"^toy\.burst must be <= 64 \(rp1's limit\), got 65$"):
        validate(replace(toy, toy=ToySection(burst=65)))
    assert dotted(toy.to_dict())["toy.burst"] == 4  # in config.json as a value, without its range
    assert entry_problems(toy) == [
        "toy.burst: no entry in rp1.config.migrations.ADDED (add one, and raise SCHEMA)"
    ]


def test_a_config_without_a_version_has_the_schema_of_its_keys():
    laptop = json.loads((SCHEMA3 / "runs" / "hopper-quick" / "seed0" / CONFIG).read_text())
    fixture = json.loads((FIXTURE / "run" / CONFIG).read_text())
    today = {k: v for k, v in current().items() if k != "schema"}
    assert (written_schema(laptop), written_schema(fixture), written_schema(today)) == (
        3,
        5,
        SCHEMA,
    )
    assert written_schema({**today, "schema": 9}) == 9
    with pytest.raises(ConfigError, match="schema must be a positive integer"):
        written_schema({**today, "schema": "7"})


def test_migration_fills_missing_keys_with_the_old_behaviour_and_keeps_present_ones():
    laptop = json.loads((SCHEMA3 / "runs" / "hopper-quick" / "seed0" / CONFIG).read_text())
    read = dotted(migrate(laptop))
    assert read["schema"] == SCHEMA and {
        k: v for k, v in read.items() if k in dotted(laptop)
    } == dotted(laptop)
    assert {k: read[k] for k in set(read) - set(dotted(laptop)) - {"schema"}} == {
        "horizon": 0, "model.reward": "auto", "model.done": "auto", "model.head_hidden": [200, 200],
        "model.stop_on": "any", "lam.baseline": "including", "lam.g_normalizers": "inputs",
        "policy.advantage": "fixed", "policy.restore_best": True,
        **{e.key: e.before for e in ADDED if e.schema > 7},  # the keys of later schemas: their entries' values
    }  # fmt: skip
    # a run of today's code written before versions were recorded keeps its values
    today = current()
    del today["schema"]
    assert migrate(today) == current()
    # a key that a config of an earlier schema lacks, while having later ones, is filled alone
    partial = {**today, "model": {k: v for k, v in today["model"].items() if k != "stop_on"}}
    assert migrate(partial) == current()


def test_report_reads_every_schema_side_by_side(tmp_path):
    """Runs of schema 3 (before nine keys existed) give the tables rp1 made of them then."""
    metrics = load_runs(SCHEMA3 / "runs").metrics
    out = tmp_path / "report"
    out.mkdir()
    for spec in [
        spec for spec in TABLES if spec.name in ("table1", "table2", "table3")
    ]:  # the tables rp1 made then
        for path in write_table_frames(table_frames(metrics, spec, report_tasks(metrics)), out):
            if path.name == f"{spec.name}.csv":  # the cells of the paper's metric
                assert path.read_text() == (SCHEMA3 / path.name).read_text(), path.name


# --- newer and unresumable schemas -------------------------------------------------------------


def newer_run(run_dir: Path) -> dict:
    config = {**current(), "schema": SCHEMA + 1}
    run_dir.mkdir(parents=True)
    (run_dir / CONFIG).write_text(json.dumps(config))
    (run_dir / METRICS).write_text("iteration,samples,eval_return\n0,0,1.0\n")
    return config


def test_a_run_of_a_newer_schema_is_refused_with_both_versions(tmp_path, capsys):
    newer_run(tmp_path / "run")
    before = snapshot(tmp_path / "run")
    for flag in ([], ["--resume"]):
        code, err = run_cli(
            [
                "train",
                "--preset",
                "halfcheetah-rp1",
                "--out",
                str(tmp_path / "run"),
                "--quiet",
                *flag,
            ],
            capsys,
        )
        assert code == 2 and len(err) == 1, err
        assert (
            f"config schema {SCHEMA + 1}" in err[0]
            and f"up to {SCHEMA}" in err[0]
            and str(tmp_path / "run") in err[0]
        )
    assert snapshot(tmp_path / "run") == before
    with pytest.raises(NewerSchema, match=f"schema {SCHEMA + 1}"):
        RunDir(tmp_path / "run").read_config()


def test_a_checkpoint_of_a_newer_schema_is_refused(tmp_path):
    run = RunDir(tmp_path / "run")
    run.prepare({**current(), "schema": SCHEMA + 1})
    run.save_checkpoint({})
    with pytest.raises(NewerSchema, match=f"checkpoint .* schema {SCHEMA + 1}"):
        run.load_checkpoint(current())


def test_report_leaves_a_run_of_a_newer_schema_out_with_a_note(tmp_path):
    newer_run(tmp_path / "runs" / "newer")
    shutil.copytree(SCHEMA3 / "runs" / "hopper-quick" / "seed0", tmp_path / "runs" / "old")
    loaded = load_runs(tmp_path / "runs")
    assert set(loaded.metrics["run"]) == {"old"}
    assert any(f"schema {SCHEMA + 1}" in note and "left out" in note for note in loaded.notes), (
        loaded.notes
    )


def test_a_checkpoint_of_an_older_layout_is_not_resumed(tmp_path):
    """Schema 4 (no learned heads yet) and older: refused before the checkpoint is read."""
    old = {
        k: v for k, v in current().items() if k not in ("schema", "horizon")
    }  # schema 3: before horizon
    run = RunDir(tmp_path / "run")
    run.prepare(old)
    (tmp_path / "run" / "checkpoint").mkdir()
    (tmp_path / "run" / "checkpoint" / "state.msgpack").write_bytes(b"an older layout")
    before = snapshot(tmp_path / "run")
    with pytest.raises(
        ConfigError,
        match=r"config.json was written by an rp1 of config schema 3, whose checkpoints .* --overwrite",
    ):
        RunDir(tmp_path / "run").prepare(migrate(old), resume=True)
    assert snapshot(tmp_path / "run") == before
    # the checkpoint's own copy of the config is checked too
    streams = {k: v for k, v in old.items() if k != "scale"}  # schema 2: before independent streams
    run = RunDir(tmp_path / "other")
    run.prepare(streams)
    run.save_checkpoint({})
    with pytest.raises(
        ConfigError, match=r"checkpoint .* schema 2, whose checkpoints this rp1 cannot continue"
    ):
        run.load_checkpoint(migrate(streams))


def test_a_run_finished_under_an_old_schema_stays_finished(tmp_path):
    run_dir = shutil.copytree(SCHEMA3 / "runs" / "hopper-greedy" / "seed0", tmp_path / "run")
    stored = json.loads((run_dir / CONFIG).read_text())
    (run_dir / FINISHED).write_text(config_hash(stored) + "\n")  # what the rp1 of schema 3 wrote
    assert RunDir(run_dir).is_finished(migrate(stored))
    with pytest.raises(ConfigError, match="another config"):
        RunDir(run_dir).is_finished({**migrate(stored), "seed": 1})


def test_a_run_written_just_before_schemas_keeps_its_marker_and_policy_files():
    """Its config has every key but no ``"schema"``: the hashes in its ``finished`` marker and
    policy files (rp1.outputs.writer) are those of today's config."""
    today = current()
    assert config_hash({k: v for k, v in today.items() if k != "schema"}) == config_hash(today)


# --- the fixture: a run of rp1 at 3fab089, killed after 3 iterations -------------------------


def fixture_cmd(out: Path, sets: dict[str, str]) -> list[str]:
    items = [arg for k, v in sets.items() for arg in ("--set", f"{k}={v}")]
    return [
        "train",
        "--preset",
        "halfcheetah-rp1",
        "--seed",
        "0",
        "--budget",
        "600",
        "--out",
        str(out),
        "--quiet",
        "--resume",
        *items,
    ]


def rows(path: Path) -> list[dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_a_different_setting_of_a_key_the_run_had_is_still_refused(tmp_path, capsys):
    """Continuing takes the values of the keys its rp1 did not write (the fixture's ``lam.baseline``
    …); a key it wrote is compared as ever."""
    run_dir = shutil.copytree(FIXTURE / "run", tmp_path / "run")
    before = snapshot(run_dir)
    code, err = run_cli(fixture_cmd(run_dir, {**FIXTURE_SETS, "model.patience": "3"}), capsys)
    assert code == 2 and len(err) == 1 and "model.patience: 2 there, 3 now" in err[0], err
    assert snapshot(run_dir) == before


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """The fixture resumed by this rp1 with today's defaults (no ``--set`` for the keys 3fab089 did
    not write), XLA's thread pool and flags and OpenBLAS's kernels those of :data:`MADE_IN`, in a
    process of its own: ``(run directory, completed process)``."""
    run_dir = shutil.copytree(FIXTURE / "run", tmp_path_factory.mktemp("fixture") / "run")
    env = {**os.environ, **made_in_env(MADE_IN)}
    done = subprocess.run(
        [sys.executable, "-m", "rp1", *fixture_cmd(run_dir, FIXTURE_SETS)],
        env=env,
        capture_output=True,
        text=True,
    )
    return run_dir, done


@pytest.mark.slow
def test_the_fixture_resumes_finishes_and_keeps_its_rows(resumed):
    run_dir, done = resumed
    assert done.returncode == 0, done.stderr
    assert RunDir(run_dir).is_finished(
        resolve(
            "halfcheetah-rp1", seed=0, budget=600, overrides={**FIXTURE_SETS, **OLD_VALUES}
        ).to_dict()
    )
    old = rows(FIXTURE / "run" / METRICS)
    assert [
        {k: r[k] for k in old[0]} for r in rows(run_dir / METRICS)[:3]
    ] == old  # timing columns too; columns added since come last
    # a column the old rp1 did not write
    diagnostics = [r["ppo_approx_kl_mean"] for r in rows(run_dir / METRICS)]
    assert diagnostics[:3] == [""] * 3 and all(diagnostics[3:]), diagnostics
    assert [int(r["iteration"]) for r in rows(run_dir / METRICS)] == list(
        range(len(rows(FIXTURE / "uninterrupted.csv")))
    )
    config = dotted(json.loads((run_dir / CONFIG).read_text()))
    assert (
        config["schema"] == SCHEMA
        and config["model.stop_on"] == "any"
        and config["model.reward"] == "learned"
    )
    assert {k: config[k] for k in ("lam.baseline", "lam.g_normalizers", "policy.advantage", "policy.restore_best", "eval.every", "statistics")} == {
        **OLD_VALUES, "policy.advantage": "fixed", "policy.restore_best": True, "eval.every": 0,
    }  # fmt: skip
    environments = json.loads((run_dir / "environment.json").read_text())["environments"]
    assert [e["from_iteration"] for e in environments] == [3]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("rp1: warning:")]
    assert len(warnings) == 1 and "no record of where iterations 0-2 ran" in warnings[0], (
        done.stderr
    )
    notes = [line for line in done.stderr.splitlines() if line.startswith("rp1: note:")]
    items = ", ".join(f"{k}={v}" for k, v in OLD_VALUES.items())
    assert (
        len(notes) == 1
        and "config schema 5" in notes[0]
        and notes[0].endswith(f"continues as it ran, with {items}")
    ), done.stderr


def skip_unless_made_here(run_dir, done, made_in: dict) -> None:
    """After a resume ``done`` (a finished subprocess) of ``run_dir``: it succeeded, and the test
    skips, saying why, unless this machine's environment (the run's last record entry) is the one
    the fixture was made in (``made_in``): bit for bit holds only there."""
    assert done.returncode == 0, done.stderr
    here = json.loads((run_dir / "environment.json").read_text())["environments"][-1]
    differences = environment_differences(made_in, here)
    if differences:
        pytest.skip(
            f"the fixture was made in another environment (made_in.json, here): {differences}"
        )


@pytest.mark.slow
def test_the_fixture_finishes_with_the_old_codes_metrics(resumed):
    """Bit for bit where the environment matches :data:`MADE_IN`: the arithmetic of XLA and
    NumPy's OpenBLAS depends on the CPU's features and XLA's thread count."""
    run_dir, done = resumed
    skip_unless_made_here(run_dir, done, MADE_IN)
    expected = [
        {k: v for k, v in r.items() if k not in TIMING_COLUMNS}
        for r in rows(FIXTURE / "uninterrupted.csv")
    ]
    assert [
        {k: r[k] for k in expected[0]} for r in metrics_without_timing(run_dir)
    ] == expected  # the columns that code wrote


# --- the fixture: runs of rp1 at 6a13e10 (schema 9), killed after iteration 3 and finished ------

BEFORE_STATISTICS = Path(__file__).resolve().parent / "fixtures" / "before_statistics"
"""A run of rp1 at 6a13e10 killed after iteration 3 (``run/``) and the same run uninterrupted
(``finished/``), with their policy files (fixtures/before_statistics/make.py)."""


def before_statistics_make():
    """The fixture's ``make.py`` as a module: its config (``PRESET``, ``SEED``, ``BUDGET``,
    ``OVERRIDES``)."""
    spec = importlib.util.spec_from_file_location(
        "before_statistics_make", BEFORE_STATISTICS / "make.py"
    )
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make


def before_statistics_cmd(out: Path, *flags: str) -> list[str]:
    """``rp1 train`` of the fixture's config in ``out``, with ``flags``."""
    make = before_statistics_make()
    items = [arg for k, v in make.OVERRIDES.items() for arg in ("--set", f"{k}={v}")]
    return [
        "train", "--preset", make.PRESET, "--seed", str(make.SEED), "--budget", str(make.BUDGET),
        "--out", str(out), *flags, *items,
    ]  # fmt: skip


@pytest.mark.slow
def test_a_resume_of_a_finished_older_run_changes_no_file(tmp_path, capsys):
    """``--resume`` of a finished run of an earlier rp1 says it is finished and leaves every file
    as it was (its config not upgraded: the rp1 that made it still reads it), from the CLI and from
    the Python API alike."""
    from rp1.train import run_training

    run_dir = shutil.copytree(BEFORE_STATISTICS / "finished", tmp_path / "run")
    before = snapshot(run_dir)
    code, out, err = run_cli_output(before_statistics_cmd(run_dir, "--resume"), capsys)
    assert code == 0 and err == [] and f"{run_dir} holds this run, finished: nothing to do" in out
    make = before_statistics_make()
    cfg = resolve(make.PRESET, seed=make.SEED, budget=make.BUDGET, overrides=make.OVERRIDES)
    assert run_training(cfg, run_dir, resume=True, progress=False) == run_dir
    assert snapshot(run_dir) == before


@pytest.fixture(scope="module")
def resumed_older(tmp_path_factory):
    """The fixture's killed run resumed by this rp1, XLA's thread pool and flags and OpenBLAS's
    kernels those of its ``made_in.json``, in a process of its own: ``(run directory, completed
    process, made_in.json)``."""
    made_in = json.loads((BEFORE_STATISTICS / "made_in.json").read_text())
    run_dir = shutil.copytree(BEFORE_STATISTICS / "run", tmp_path_factory.mktemp("older") / "run")
    env = {**os.environ, **made_in_env(made_in)}
    done = subprocess.run(
        [sys.executable, "-m", "rp1", *before_statistics_cmd(run_dir, "--resume", "--quiet")],
        env=env,
        capture_output=True,
        text=True,
    )
    return run_dir, done, made_in


@pytest.mark.slow
def test_a_resumed_older_run_keeps_its_policy_files_and_says_it_is_upgraded(resumed_older):
    """The policy files the earlier rp1 kept are still the run's once its config is migrated: the
    resumed run keeps them from iteration 0 on, under the hash of the config as that rp1 wrote it;
    the first line says that rp1 will no longer continue the run."""
    run_dir, done, _ = resumed_older
    assert done.returncode == 0, done.stderr
    first = next(line for line in done.stderr.splitlines() if line.startswith("rp1:"))
    assert first == (
        "rp1: note: the run was started by an earlier rp1 (config schema 9): its config is "
        f"upgraded to schema {SCHEMA}, and that rp1 will no longer continue it; it continues as "
        "it ran, with statistics=eager"
    ), done.stderr
    assert json.loads((run_dir / CONFIG).read_text())["schema"] == SCHEMA
    written = config_hash(json.loads((BEFORE_STATISTICS / "run" / CONFIG).read_text()))
    metrics = [r for r in rows(run_dir / METRICS) if int(r["iteration"]) >= FIRST_TRAINED]
    best_row = max(metrics, key=lambda r: float(r["eval_return"]))
    for which in RUN_POLICIES:
        policy = read_policy(policy_path(run_dir, which), run_dir)
        assert (policy.kept_since, policy.config_hash) == (0, written), which
    best = read_policy(policy_path(run_dir, BEST), run_dir)
    assert (best.iteration, best.eval_return) == (
        int(best_row["iteration"]),
        float(best_row["eval_return"]),
    )


@pytest.mark.slow
def test_a_resumed_older_run_ends_with_the_uninterrupted_runs_files(resumed_older):
    """Bit for bit where the environment matches ``made_in.json``: the metrics, the evaluations
    and both policy files of the uninterrupted run of the earlier rp1."""
    run_dir, done, made_in = resumed_older
    skip_unless_made_here(run_dir, done, made_in)
    finished = BEFORE_STATISTICS / "finished"
    assert metrics_without_timing(run_dir) == metrics_without_timing(finished)
    assert (run_dir / EVALUATIONS).read_bytes() == (finished / EVALUATIONS).read_bytes()
    for which in RUN_POLICIES:
        assert policy_path(run_dir, which).read_bytes() == policy_path(finished, which).read_bytes()
