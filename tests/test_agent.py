"""The outer loop for every model-based method on a tiny config (algorithm.md §7–§8)."""

from __future__ import annotations

import csv
from dataclasses import replace

import jax
import numpy as np
import pytest

from helpers import TINY
from rp1.acquisition.bandit import ARMS
from rp1.agents.model_based import HOST_STREAMS, ModelBasedAgent
from rp1.config import METHOD_TABLE, env_config, resolve
from rp1.core.seeding import generator_from
from rp1.imagination import TrainInfo
from rp1.policy import PPOMetrics
from rp1.realenv import STOP_BUDGET, STOP_CAP
from rp1.rundir.files import METRIC_COLUMNS, TIMING_COLUMNS
from rp1.train import run_training

ALWAYS_FILLED = (
    "iteration",
    "samples",
    "eval_return",
    "model_error",
    "phase_samples",
    "wall_s",
    "phase_stop",
)
PPO_DIAGNOSTICS = tuple(
    f"ppo_{name}_{which}" for name in PPOMetrics._fields for which in ("mean", "last")
)
AFTER_FIRST = (
    "lambda", "model_return", "val_loss", "policy_updates", "model_epochs",
    "val_loss_max", "train_loss", "policy_stopped_by_rule", "imagined_return", *PPO_DIAGNOSTICS,
)  # fmt: skip
BANDIT = tuple(f"p_lambda_{arm!r}" for arm in ARMS)  # adaptive λ only, every row


def read_rows(run):
    with open(run / "metrics.csv") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames[: len(METRIC_COLUMNS)]) == METRIC_COLUMNS
        return list(reader)


def tiny(method: str, budget: int, **extra):
    return resolve(f"halfcheetah-{method}", seed=0, budget=budget, overrides={**TINY, **extra})


@pytest.mark.slow
@pytest.mark.parametrize("method", METHOD_TABLE, ids=lambda method: method.name)
def test_one_iteration_per_method_writes_a_full_row(method, tmp_path):
    # α = 0: whole 300-sample phases, so the row count does not depend on the data (or the CPU)
    run = run_training(
        tiny(method.name, budget=600, **{"collect.alpha": "0"}),
        tmp_path / method.name,
        progress=False,
    )
    rows = read_rows(run)
    assert [int(r["iteration"]) for r in rows] == [0, 1]
    assert [int(r["samples"]) for r in rows] == [0, 300]
    for row in rows:
        assert all(row[c] != "" for c in ALWAYS_FILLED)
        assert np.isfinite(float(row["eval_return"]))
    assert all(rows[1][c] != "" for c in AFTER_FIRST) and all(rows[0][c] == "" for c in AFTER_FIRST)
    assert [int(r["phase_stop"]) for r in rows] == [STOP_CAP, STOP_BUDGET]
    adaptive = method.adaptive
    assert all((c in row) == adaptive for row in rows for c in BANDIT)
    assert not adaptive or all(
        sum(float(row[c]) for c in BANDIT) == pytest.approx(1.0) for row in rows
    )
    assert (run / "finished").exists() and (run / "checkpoint" / "state.msgpack").exists()


def test_a_key_a_component_returns_is_a_column(tmp_path, monkeypatch):
    """A component that returns one more number: metrics.csv has its column from the first row
    with it on (the rows before empty there), after the columns of every other key."""
    metrics = TrainInfo.metrics
    monkeypatch.setattr(
        TrainInfo, "metrics", lambda info: {**metrics(info), "new_diagnostic": 2.5 * info.updates}
    )
    run = run_training(
        tiny("rp1", budget=600, **{"collect.alpha": "0"}), tmp_path / "run", progress=False
    )
    rows = read_rows(run)
    assert list(rows[0])[-1] == "new_diagnostic"
    assert [r["new_diagnostic"] for r in rows] == ["", str(2.5 * int(rows[1]["policy_updates"]))]


@pytest.mark.parametrize("method", METHOD_TABLE, ids=lambda method: method.name)
def test_each_methods_phases_stop_early_by_its_alpha(method):
    """On the scripted task (``scripted_task``: the third episode lies in the span of the first two)
    a method with early stopping (α = 0.0005) ends its first phase after 3 episodes of 4 steps;
    one without fills the 40-sample cap."""
    sets = {**TINY, "collect.phase_cap": "40", "collect.noise_max": "0"}
    cfg = env_config("scripted_task:SCRIPTED", method.name, seed=0, budget=80, overrides=sets)
    agent = ModelBasedAgent(cfg)
    try:
        _, row = agent.step(agent.initial_state())
    finally:
        agent.close()
    early = method.early_stop  # algorithm.md §8: α = 0.0005, or 0
    assert row["phase_samples"] == (12 if early else 40)
    assert (
        (row["residual"] is not None and row["residual"] < 5e-4)
        if early
        else row["residual"] is None
    )


def lambdas(run):
    return [float(r["lambda"]) for r in read_rows(run)[1:]]


@pytest.mark.slow
def test_lambda_schedules(tmp_path):
    greedy = run_training(tiny("greedy", 1500), tmp_path / "g", progress=False)
    vr = run_training(tiny("vr", 1500), tmp_path / "v", progress=False)
    rp1 = run_training(tiny("rp1", 3000, **{"collect.alpha": "0"}), tmp_path / "r", progress=False)
    assert lambdas(greedy) == [0.0] * 4
    assert lambdas(vr) == [0.5] * 4
    lam = lambdas(rp1)
    assert lam[0] == 0.0  # the first outer iteration uses λ = 0
    assert set(lam) <= set(ARMS) and len(set(lam)) > 1
    rows = read_rows(rp1)
    # iteration 0 feeds no Ĝ
    assert rows[0]["g_hat"] == "" and all(r["g_hat"] != "" for r in rows[1:])


def feedback_run(first_g: float, first_feedback: str = "exclude"):
    """λ and the bandit's scores after feeding iterations 0…11 through the agent's feedback path:
    G of iteration 0 is ``first_g``; every later G is ≈ 0.2 with l_val = 0.1."""
    cfg = resolve(
        "halfcheetah-rp1", seed=0, overrides={**TINY, "lam.first_feedback": first_feedback}
    )
    agent = ModelBasedAgent(cfg)
    s = agent.initial_state()
    later = [0.2, 0.25, 0.15, 0.22, 0.18, 0.2, 0.21, 0.19, 0.24, 0.16, 0.2]
    lams, g_hats = [], []
    for k, g in enumerate([first_g] + later):
        s, g_hat = agent.feed_bandit(s, g, None if k == 0 else 0.1)
        s = replace(s, iteration=s.iteration + 1)
        lams.append(s.lam)
        g_hats.append(g_hat)
    return lams, g_hats, s.arrays.bandit.scores.copy()


def test_untrained_models_feedback_does_not_drive_the_bandit():
    """The old failure: G of the initial phase (untrained model) 20× every later G. By default it
    stays out of the window, so the run is exactly the one whose first G was in line with the rest
    (algorithm.md §6); with ``lam.first_feedback=include`` the same G drives played arms' scores far down."""
    lams, g_hats, scores = feedback_run(first_g=4.0)
    ref_lams, ref_g_hats, ref_scores = feedback_run(first_g=0.2)
    assert lams == ref_lams and g_hats == ref_g_hats
    np.testing.assert_array_equal(scores, ref_scores)
    assert lams[0] == 0.0 and g_hats[0] is None
    assert g_hats[1] == 0.0  # Ĝ of iteration 1: the first trained model's G alone in the window
    # |ĝ| <= (0.25 − 0.15) / 0.1 = 1 for the later G: no score can fall below −lr·1/p_min·updates
    assert scores.min() > -0.2 / (0.2 / 6) * 11

    _, included_g_hats, included = feedback_run(first_g=4.0, first_feedback="include")
    assert min(included_g_hats[1:4]) < -10  # (0.2 − mean(4, 0.2, …)) / 0.1
    assert included.min() < scores.min() - 2


def test_every_stream_lives_in_the_state_and_survives_a_checkpoint():
    cfg = resolve("halfcheetah-rp1", seed=7, overrides={**TINY, "collect.alpha": "0"})
    agent = ModelBasedAgent(cfg)
    s = agent.initial_state()
    assert set(s.rngs) == set(HOST_STREAMS)
    draws = {name: generator_from(state).random(4).tolist() for name, state in s.rngs.items()}
    draws["seed"] = np.random.default_rng(7).random(4).tolist()
    assert len({tuple(d) for d in draws.values()}) == len(draws)  # no two streams coincide

    s1, _ = agent.step(s)
    # the environments drew their resets from the state's streams: evaluation and collection
    for name in ("env", "eval_env", "noise"):  # the bandit draws from iteration 1 on
        assert s1.rngs[name] != s.rngs[name], name
    s2, _ = agent.step(s1)
    assert s2.rngs["bandit"] != s1.rngs["bandit"]
    again = ModelBasedAgent(cfg)
    r = again.restore(agent.checkpoint(s2))
    assert r.rngs == s2.rngs
    agent.close()
    again.close()


def test_step_returns_a_new_state_and_leaves_its_input_as_it_was():
    """The same state stepped twice gives the same row and state: stepping changed nothing in it
    (generators, bandit, store, rows), and the environments drew from each copy's generators."""
    cfg = resolve("halfcheetah-rp1", seed=3, budget=900, overrides={**TINY, "collect.alpha": "0"})
    agent = ModelBasedAgent(cfg)
    s0, _ = agent.step(agent.initial_state())
    before = agent.checkpoint(s0)
    s1, row1 = agent.step(s0)
    s2, row2 = agent.step(s0)
    assert (
        agent.checkpoint(s0)["meta"] == before["meta"]
        and s0.store.n_train + s0.store.n_val == 300
        and len(s0.rows) == 1
    )
    untimed = lambda row: {k: v for k, v in row.items() if k not in TIMING_COLUMNS}  # noqa: E731
    assert untimed(row1) == untimed(row2) and s1.rows[-1] is row1 and len(s1.rows) == 2
    assert (
        s1.store.n_train + s1.store.n_val == s2.store.n_train + s2.store.n_val == 600
        and s1.iteration == s2.iteration == 2
    )
    for a, b in zip(
        jax.tree_util.tree_leaves(s1.learner), jax.tree_util.tree_leaves(s2.learner), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    agent.close()


@pytest.mark.slow
def test_small_scale_greedy_collects_full_phases():
    """Scale changes sizes only: Greedy (no early stopping) still collects 3,000-sample phases."""
    cfg = resolve("halfcheetah-greedy", seed=0, scale="small", overrides={"eval_episodes": "1"})
    assert (
        cfg.scale == "small" and cfg.model.hidden == (200, 200) and cfg.policy.batch_steps == 5_000
    )
    agent = ModelBasedAgent(cfg)
    s, row = agent.step(agent.initial_state())
    assert row["phase_samples"] == 3_000 and s.samples == 3_000


def test_quick_preset_is_rp1_at_small_scale_and_scale_comes_before_set():
    from dataclasses import replace

    quick = resolve("hopper-quick")
    assert quick == replace(
        resolve("hopper-rp1", scale="small", budget=10_000), preset="hopper-quick"
    )
    assert resolve("hopper-quick", scale="paper").model.hidden == (1024, 1024)
    assert resolve(
        "hopper-rp1", scale="small", overrides={"model.hidden": "64,64"}
    ).model.hidden == (64, 64)


def test_first_preset_is_the_10e5_columns_small_rp1_run_with_the_quick_budget():
    """``<task>-first`` is the config of the 10⁵ column's runs (``<task>-rp1 --scale small --set
    model.dealing=round-robin``) but for its budget and name: the quick preset, round-robin."""
    from dataclasses import replace

    column = resolve(
        "halfcheetah-rp1", scale="small", budget=10_000, overrides={"model.dealing": "round-robin"}
    )
    assert resolve("halfcheetah-first") == replace(column, preset="halfcheetah-first")
    quick = resolve("halfcheetah-quick")
    assert resolve(
        "halfcheetah-first", overrides={"model.dealing": quick.model.dealing}
    ) == replace(quick, preset="halfcheetah-first")


def hand_g(obs, act, next_obs, finals, biases, refreshed: bool) -> float:
    """G of algorithm.md §6 in NumPy (float64) for an ensemble whose members output the constant ``y_j =
    biases[j]``, right after the first phase ``obs, act, next_obs`` (all the data there is): the
    state normaliser is the statistics of the phase's states (its final states included); the
    delta normaliser is refreshed from the stored data (``refreshed``) or still the initial one."""
    states = np.concatenate([obs, finals]).astype(np.float64)
    mean, std = states.mean(0), np.sqrt(np.maximum(states.var(0), 1e-4))
    norm = lambda x: np.clip((x - mean) / std, -3, 3)  # noqa: E731
    deltas = norm(next_obs) - norm(obs)
    mu, sigma = (
        (deltas.mean(0), np.sqrt(np.maximum(deltas.var(0), 1e-4))) if refreshed else (0.0, 1.0)
    )
    mse = [np.mean((norm(obs) + b * sigma + mu - norm(next_obs)) ** 2) for b in biases]
    return float(np.sqrt(np.mean(np.square(mse))))


@pytest.mark.parametrize("g_normalizers", ["all", "inputs"])
def test_g_is_measured_with_the_refreshed_delta_normalizer(g_normalizers):
    """algorithm.md §6: G of a phase decodes the members' deltas with the delta normaliser recomputed from
    all stored data, the new phase included (``inputs``: the one from before)."""
    import jax

    cfg = resolve(
        "halfcheetah-rp1",
        seed=0,
        overrides={**TINY, "collect.alpha": "0", "lam.g_normalizers": g_normalizers},
    )
    agent = ModelBasedAgent(cfg)
    s = agent.initial_state()
    biases = np.array([[0.3], [-0.2], [0.05]]) * np.ones(18)  # members differ: G is not one MSE
    params = jax.tree_util.tree_map(np.zeros_like, s.learner.model.params)
    params = (*params[:-1], (params[-1][0], biases.astype(np.float32)))
    learner = s.learner.replace(model=s.learner.model.replace(params=params))
    s = replace(s, arrays=s.arrays.replace(learner=learner))
    s, row = agent.step(s)
    data = s.store.transitions()  # iteration 0: exactly the phase, three whole episodes (α = 0)
    horizon = agent.task.horizon
    assert len(data.obs) == 3 * horizon
    finals = data.next_obs[horizon - 1 :: horizon]  # each episode's last next state
    want = hand_g(
        data.obs, data.act, data.next_obs, finals, biases, refreshed=g_normalizers == "all"
    )
    assert row["model_error"] == pytest.approx(want, rel=1e-4)
    other = hand_g(
        data.obs, data.act, data.next_obs, finals, biases, refreshed=g_normalizers != "all"
    )
    assert abs(other - want) > 1e-2 * want  # the two orders are told apart
    agent.close()
