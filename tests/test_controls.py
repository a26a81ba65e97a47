"""The controls beyond the paper: the phase-matched methods and λ fixed at 0.5 as algorithm.md §8's rows, their
matched lengths recomputed from the committed runs, the report's recognition of a run's method
from its config, and the world models' test-set error (a hand computation, the test set rebuilt
byte for byte, and logging it leaving every other metric bit-identical)."""

from __future__ import annotations

import hashlib
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import ROOT, TINY, environment_differences, run_cli_output
from rp1.config import MATCHED_PHASE_LENGTH, METHOD_TABLE, env_config, resolve, run_cell
from rp1.core.normalizer import normalizer_fit
from rp1.dynamics import ensemble_init
from rp1.dynamics.testset import (
    COLUMNS,
    SHIPPED,
    TestSet,
    errors_on_test_set,
    read_test_set,
    write_test_set,
)
from rp1.report.runs_table import load_runs
from rp1.report.stats import median_phase_lengths
from rp1.rundir.files import TIMING_COLUMNS
from rp1.testsets.build import build_test_set
from rp1.train import run_training

LAPTOP_RUNS = ROOT / "docs" / "laptop-scale" / "runs"


@pytest.mark.parametrize("task", sorted(MATCHED_PHASE_LENGTH))
def test_the_controls_resolve_to_their_spec_rows(task):
    """algorithm.md §8: greedy-matched is λ = 0 without early stopping, rp1-nopca-matched the adaptive
    λ with the reward-variance bonus without it, both in phases of the task's matched length;
    rp1-fixed05 is λ fixed at 0.5 with early stopping in 3,000-sample phases."""
    greedy, nopca, fixed = (
        resolve(f"{task}-{m}") for m in ("greedy-matched", "rp1-nopca-matched", "rp1-fixed05")
    )
    length = MATCHED_PHASE_LENGTH[task]
    assert (greedy.lam.mode, greedy.lam.value, greedy.collect.alpha, greedy.collect.phase_cap) == (
        "fixed",
        0.0,
        0.0,
        length,
    )
    assert (nopca.lam.mode, nopca.bonus, nopca.collect.alpha, nopca.collect.phase_cap) == (
        "adaptive",
        "reward",
        0.0,
        length,
    )
    assert (
        fixed.lam.mode,
        fixed.lam.value,
        fixed.bonus,
        fixed.collect.alpha,
        fixed.collect.phase_cap,
    ) == ("fixed", 0.5, "reward", 0.0005, 3000)


def test_the_matched_lengths_are_the_committed_rp1_runs_median_phases():
    """MATCHED_PHASE_LENGTH is recomputed from docs/laptop-scale/runs (iterations ≥ 1 of RP1)."""
    metrics = load_runs(LAPTOP_RUNS).metrics
    assert median_phase_lengths(metrics[metrics["scale"] == "small"]) == {
        t: float(n) for t, n in MATCHED_PHASE_LENGTH.items()
    }


def test_a_matched_method_off_the_papers_tasks_asks_for_a_phase_length(capsys):
    with pytest.raises(
        Exception, match=r"no matched phase length on Pendulum-v1.*--set collect.phase_cap=N"
    ):
        env_config("Pendulum-v1", "greedy-matched")
    assert (
        env_config(
            "Pendulum-v1", "greedy-matched", overrides={"collect.phase_cap": "200"}
        ).collect.phase_cap
        == 200
    )


def test_the_report_pools_a_run_by_the_method_its_config_ran():
    """A run's cell is the method whose defining values its config has: rp1 with λ fixed at 0.5
    by --set is rp1-fixed05, greedy with the matched phase cap greedy-matched; values no method
    has keep their method's name."""

    def config(preset: str, **sets: str) -> dict:
        return resolve(preset, overrides=sets).to_dict()

    assert (
        run_cell(config("hopper-rp1", **{"lam.mode": "fixed", "lam.value": "0.5"})) == "rp1-fixed05"
    )
    assert run_cell(config("hopper-greedy", **{"collect.phase_cap": "600"})) == "greedy-matched"
    assert run_cell(config("hopper-rp1-fixed05")) == "rp1-fixed05"
    # a size is not a method
    assert run_cell(config("hopper-rp1", **{"model.hidden": "8"})) == "rp1"
    assert run_cell(config("hopper-rp1", **{"collect.alpha": "0.001"})) == "rp1"
    assert [m.name for m in METHOD_TABLE if run_cell(config(f"ant-{m.name}")) != m.name] == []


# --- the test set and the error on it ------------------------------------------------------------


def toy_model_and_data():
    """A 2-member ensemble on a 2-D state, 1-D action task with fitted normalisers, and 7 transitions."""
    rng = np.random.default_rng(0)
    obs, act = (
        rng.normal(size=(7, 2)).astype(np.float32),
        rng.normal(size=(7, 1)).astype(np.float32),
    )
    next_obs = (obs + 0.3 * rng.normal(size=(7, 2))).astype(np.float32)
    model = ensemble_init(jax.random.PRNGKey(0), 2, 1, members=2, hidden=(4,))
    model = model.replace(
        obs_norm=normalizer_fit(model.obs_norm, jnp.asarray(obs)),
        act_norm=normalizer_fit(model.act_norm, jnp.asarray(act)),
        delta_norm=normalizer_fit(model.delta_norm, jnp.asarray(next_obs - obs)),
    )
    return model, TestSet(obs, act, next_obs, np.zeros(7, np.int8))


def numpy_member_outputs(model, obs, act):
    """Each member's MLP output ``y [M, N, obs_dim]`` written out in NumPy (ReLU hidden layers)."""

    def norm(n, x, clip):
        std = np.sqrt(np.maximum(np.asarray(n.var), 1e-4))
        return np.clip((x - np.asarray(n.mean)) / std, -clip, clip)

    x = np.concatenate([norm(model.obs_norm, obs, 3.0), norm(model.act_norm, act, 3.0)], -1)
    layers = jax.tree_util.tree_map(np.asarray, model.params)
    outputs = []
    for m in range(2):
        h = x
        for i, (w, b) in enumerate(layers):
            h = h @ w[m] + b[m]
            h = np.maximum(h, 0) if i < len(layers) - 1 else h
        outputs.append(h)
    return np.stack(outputs), norm


def test_the_test_set_errors_equal_a_hand_computation():
    model, data = toy_model_and_data()
    y, norm = numpy_member_outputs(model, data.obs, data.act)
    obs_std, delta_std = (
        np.sqrt(np.maximum(np.asarray(n.var), 1e-4)) for n in (model.obs_norm, model.delta_norm)
    )
    # [M, N, 2]
    predicted_norm = (
        norm(model.obs_norm, data.obs, 3.0) + y * delta_std + np.asarray(model.delta_norm.mean)
    )
    run_mse = ((predicted_norm - norm(model.obs_norm, data.next_obs, 3.0)) ** 2).mean(axis=(1, 2))
    predicted = predicted_norm * obs_std + np.asarray(model.obs_norm.mean)
    scale_mean, scale_std = data.next_obs.mean(0), np.sqrt(np.maximum(data.next_obs.var(0), 1e-4))
    common_mse = (((predicted - data.next_obs) / scale_std) ** 2).mean(axis=(1, 2))
    errors = errors_on_test_set(model, data)
    assert tuple(errors) == COLUMNS
    np.testing.assert_allclose(errors["test_model_error"], np.sqrt(np.mean(run_mse**2)), rtol=1e-5)
    np.testing.assert_allclose(
        errors["test_model_error_common"], np.sqrt(np.mean(common_mse**2)), rtol=1e-5
    )
    assert scale_mean.shape == (2,)


def test_a_test_set_file_is_its_arrays_byte_for_byte(tmp_path):
    _, data = toy_model_and_data()
    write_test_set(tmp_path / "a.npz", data)
    write_test_set(tmp_path / "b.npz", TestSet(*(np.array(x) for x in data)))
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    back = read_test_set(tmp_path / "a.npz")
    assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(back, data, strict=True))


def test_building_a_test_set_twice_gives_the_same_bytes(tmp_path):
    """The builder draws only from its own seeded streams (a short one: 2 episodes, no kept policy)."""
    for name in ("a", "b"):
        write_test_set(tmp_path / f"{name}.npz", build_test_set("swimmer", [], episodes=2))
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    assert len(read_test_set(tmp_path / "a.npz").obs) == 400


@pytest.mark.slow
def test_rp1_testsets_rebuilds_the_shipped_file(tmp_path, capsys):
    """The command that made a shipped test set makes it again byte for byte, where the
    environment is the one that made it (``testsets/made_in.json``; policies act through XLA's
    and MuJoCo's CPU arithmetic)."""
    from rp1.rundir.provenance import environment

    differences = environment_differences(
        json.loads((SHIPPED / "made_in.json").read_text()), environment()
    )
    if differences:
        pytest.skip(f"the test sets were made in another environment (made, here): {differences}")
    code, out, err = run_cli_output(["testsets", "--out", tmp_path, "--tasks", "hopper"], capsys)
    assert code == 0, err
    assert (tmp_path / "hopper.npz").read_bytes() == (SHIPPED / "hopper.npz").read_bytes()
    assert (
        "the shipped file" in out
        and hashlib.sha256((SHIPPED / "hopper.npz").read_bytes()).hexdigest()[:16] in out
    )


def test_every_paper_task_ships_a_test_set_of_a_few_mb():
    total = 0
    for task in MATCHED_PHASE_LENGTH:
        data = read_test_set(SHIPPED / f"{task}.npz")
        total += (SHIPPED / f"{task}.npz").stat().st_size
        assert len(data.obs) == len(data.act) == len(data.next_obs) == len(data.behaviour) > 1000
        assert sorted(set(data.behaviour.tolist())) == [0, 1, 2, 3, 4]
    assert total < 5 * 2**20


def test_logging_the_test_set_error_leaves_every_other_column_bit_identical(tmp_path, monkeypatch):
    """A tiny run with the test set, and the same run without one: the same metrics but the new
    columns (and the wall clock); the test-set error is there after every fit."""
    cfg = resolve("halfcheetah-rp1", seed=0, budget=900, overrides=TINY)
    logged = run_training(cfg, tmp_path / "logged", progress=False)
    monkeypatch.setattr("rp1.agents.model_based.shipped_test_set", lambda task: None)
    plain = run_training(cfg, tmp_path / "plain", progress=False)
    from helpers import read_rows

    def without(rows, columns):
        return [{k: v for k, v in row.items() if k not in columns} for row in rows]

    logged_rows, plain_rows = read_rows(logged), read_rows(plain)
    assert without(logged_rows, (*TIMING_COLUMNS, *COLUMNS)) == without(
        plain_rows, TIMING_COLUMNS + COLUMNS
    )
    assert all(row[c] == "" for row in plain_rows for c in COLUMNS)
    assert all((row[c] != "") == (row["iteration"] != "0") for row in logged_rows for c in COLUMNS)


def test_the_report_compares_world_models_by_their_last_fit_lower_is_better(tmp_path):
    """table_model: per seed, the test-set error of the last fit made by the timestep; t > 0 and
    the claim holding when a's errors are lower; the figure of the errors against samples."""
    import pandas as pd

    from rp1.report import figures
    from rp1.report.claims import claim_table
    from rp1.report.tables.results import table_frames
    from rp1.report.tables.specs import TABLES

    rows = []
    for method, errors in {
        "rp1": [0.2, 0.21, 0.22, 0.23],
        "rp1-noadapt": [0.5, 0.4, 0.41, 0.42],
    }.items():
        for seed, last in enumerate(errors):
            for i, (samples, error) in enumerate([(0, None), (5_000, 0.9), (9_000, last)]):
                rows.append(
                    {"run": f"{method}/{seed}", "task": "hopper", "scale": "small", "method": method, "seed": seed,
                     "samples": samples, "reached": 10_000, "budget": 10_000, "iteration": i, "eval_return": 1.0,
                     "test_model_error_common": error}
                )  # fmt: skip
    metrics = pd.DataFrame(rows)
    spec = next(spec for spec in TABLES if spec.name == "table_model")
    frames = table_frames(metrics, spec, ("hopper",))
    cells = frames.cells.set_index(["samples", "method"])
    assert cells.loc[(10_000, "rp1"), "median"] == pytest.approx(0.215)  # the last fits' errors
    # NaN: no paper value
    assert cells.loc[(10_000, "rp1"), "paper_median"] != cells.loc[(10_000, "rp1"), "paper_median"]
    test = frames.tests.set_index(["samples", "comparison"]).loc[(10_000, "t (RP1 vs λ = 0)")]
    assert test.t > 0 and test.prob_improvement == 1.0 and test.detectable > 0
    claims = claim_table({"table_model": frames}).set_index("claim")
    claim = claims.loc["RP1's models are better than λ = 0's (test-set error)"]
    assert claim["verdict"] == "holds" and claim["metric"] == "test_error"
    # the difference of means a − b as it is (negative: a's error lower); the equivalence margin a
    # tenth of b's mean error
    assert claim["diff"] == pytest.approx(
        np.mean([0.2, 0.21, 0.22, 0.23]) - np.mean([0.5, 0.4, 0.41, 0.42])
    )
    assert claim["diff_low"] <= claim["diff"] <= claim["diff_high"] < 0
    assert claim["margin"] == pytest.approx(0.1 * np.mean([0.5, 0.4, 0.41, 0.42]))
    assert (
        figures.model_error_figure(
            metrics, ("rp1", "rp1-noadapt"), "t", tmp_path / "m.png"
        ).read_bytes()[:4]
        == b"\x89PNG"
    )
