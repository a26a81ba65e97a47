"""ME-TRPO's stop rule and policy training in the model (algorithm.md §4)."""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import count_traces, host_reads
from policy_toys import POINT_MASS, point_mass_predict, toy_model
from rp1.core.errors import ConfigError
from rp1.imagination import (
    PolicyTraining,
    TrainState,
    improved,
    make_imagination,
    make_train_step,
    policy_training,
    restore_best,
    stop_rule_init,
    stop_rule_update,
    train_policy,
)
from rp1.policy import Policy, PPOSettings, make_policy_optimizer, policy_init, ppo_summary

T, F = True, False


def marker(i: int) -> Policy:
    """A stand-in policy that records which check produced it."""
    return Policy(actor=jnp.asarray(float(i)), critic=jnp.asarray(-float(i)))


@pytest.mark.parametrize(
    ("wins", "members", "expected"),
    [(4, 5, True), (5, 5, True), (3, 5, False), (7, 10, False), (8, 10, True), (0, 5, False)],
)
def test_improved_needs_more_than_70_percent_of_members(wins, members, expected):
    best = jnp.zeros(members)
    returns = jnp.where(jnp.arange(members) < wins, 1.0, -1.0)
    assert bool(improved(best, returns)) is expected


def test_improved_requires_strictly_beating_the_best():
    assert not bool(improved(jnp.ones(5), jnp.ones(5)))


@pytest.mark.parametrize(
    ("flags", "stop_at", "best"),
    [
        ([T, F, T, T, F, F, F, F, F, T, T], 8, 3),  # 5 failures after the improvement at check 3
        ([T, F, F, F, F, F, T], 5, 0),  # the earliest possible stop: the 6th check
        ([F, F, F, F, F, F, F, T, F, F, F, F, F], 12, 7),  # leading failures never stop training
        # only 4 failures after the last improvement
        (
            [T, T, T, F, F, F, F, T, F, F, F, F],
            None,
            7,
        ),
    ],
)
def test_stop_rule_on_scripted_improvement_flags(flags, stop_at, best):
    """Feed the flags as train_policy would (stopping at the first stop) and check where it stops
    and which check's weights it restores."""
    rule = stop_rule_init(marker(-1), members=3)
    stopped_at = None
    for i, flag in enumerate(flags):
        rule = stop_rule_update(rule, jnp.asarray(flag), jnp.full(3, float(i)), marker(i))
        if bool(rule.stop):
            stopped_at = i
            break
    assert stopped_at == stop_at
    restored = restore_best(rule, marker(99))
    assert float(restored.actor) == best and float(restored.critic) == -best


def test_stop_rule_bests_become_the_elementwise_max_only_on_improvement():
    rule = stop_rule_init(marker(0), members=3)
    rule = stop_rule_update(rule, jnp.asarray(True), jnp.array([1.0, 5.0, 2.0]), marker(1))
    np.testing.assert_array_equal(rule.best_returns, [1.0, 5.0, 2.0])
    rule = stop_rule_update(rule, jnp.asarray(False), jnp.array([9.0, 9.0, 0.0]), marker(2))
    np.testing.assert_array_equal(rule.best_returns, [1.0, 5.0, 2.0])
    rule = stop_rule_update(rule, jnp.asarray(True), jnp.array([3.0, 4.0, 3.0]), marker(3))
    np.testing.assert_array_equal(rule.best_returns, [3.0, 5.0, 3.0])
    assert float(rule.best_policy.actor) == 3.0
    assert int(rule.checks) == 3


def test_restore_best_without_checks_keeps_the_current_policy():
    rule = stop_rule_init(marker(0), members=3)
    assert float(restore_best(rule, marker(5)).actor) == 5.0


MODEL = toy_model([0.5, 1.0, 1.5], 1)
START = jnp.zeros((32, 1))
FIRST_CHECK = 3
SHORT, LONG = FIRST_CHECK + 2, 60
"""The tests' two caps on updates (each compiles its loop once): past the first checks, and long
enough for the stop rule to end a run."""


def fresh(learning_rate):
    policy = policy_init(jax.random.key(0), 1, 1)
    return policy, make_policy_optimizer(learning_rate).init(policy)


TRAINING = PolicyTraining(
    make_imagination(POINT_MASS, predict=point_mass_predict),
    batch_steps=START.shape[0] * POINT_MASS.horizon,
    first_check=FIRST_CHECK,
)
STEP = make_train_step(TRAINING)


def train(policy, opt_state, **kw):
    return train_policy(
        replace(TRAINING, **kw), MODEL, policy, opt_state, START, jax.random.key(1), 0.0
    )


@pytest.fixture
def threefry_partitionable():
    """JAX's random numbers as jax >= 0.5 draws them by default (``jax_threefry_partitionable``):
    the toy run below plateaus within 60 updates on them; on jax 0.4's default ones it still
    improves at update 60."""
    with jax.threefry_partitionable(True):
        yield


@pytest.mark.fusion_emitters
def test_train_policy_stops_by_the_rule_and_restores_the_best_update(threefry_partitionable):
    """Replay the same updates with the train step to find the last improving one; train_policy must
    stop 5 checks later and return exactly that update's weights."""
    policy, opt_state = fresh(1e-2)
    state = TrainState(
        policy, opt_state, stop_rule_init(policy, 3), jax.random.key(1), jnp.zeros((), jnp.int32)
    )
    history = []
    for _ in range(LONG):
        state, _ = STEP(state, MODEL, START, 0.0)
        history.append((state.policy, bool(state.updates >= FIRST_CHECK and state.rule.recent[-1])))
        if bool(state.rule.stop):
            break
    assert bool(state.rule.stop), "the toy run should plateau and stop within 60 updates"
    last_best = max(i for i, (_, flag) in enumerate(history) if flag)
    assert last_best < len(history) - 1  # the restored weights are not simply the last ones

    best, opt_state, info = train(policy, opt_state, max_updates=LONG)
    assert info.stopped and info.updates == len(history) == last_best + 6
    for got, want in zip(
        jax.tree_util.tree_leaves(best),
        jax.tree_util.tree_leaves(history[last_best][0]),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)
    assert int(opt_state.inner_state[0].count) == 10 * info.updates  # continues, not restored
    assert np.isfinite(
        [info.model_return, info.imagined_return, info.bonus, info.ppo["ppo_loss_last"]]
    ).all()

    # the reference's no-op restore
    last, _, info = train(*fresh(1e-2), max_updates=LONG, restore_best=False)
    assert info.stopped and info.updates == len(history)
    for got, want in zip(
        jax.tree_util.tree_leaves(last), jax.tree_util.tree_leaves(history[-1][0]), strict=True
    ):
        np.testing.assert_array_equal(got, want)


@pytest.mark.fusion_emitters
def test_train_policy_without_restore_keeps_the_last_weights():
    """``restore_best=False`` (``policy.restore_best=false``): the policy after the last update,
    replayed with the train step; with restore, the weights of the last improving check."""
    policy, opt_state = fresh(1e-2)
    state = TrainState(
        policy, opt_state, stop_rule_init(policy, 3), jax.random.key(1), jnp.zeros((), jnp.int32)
    )
    for _ in range(SHORT):
        state, _ = STEP(state, MODEL, START, 0.0)
    last, _, _ = train(policy, opt_state, max_updates=SHORT, restore_best=False)
    for got, want in zip(
        jax.tree_util.tree_leaves(last), jax.tree_util.tree_leaves(state.policy), strict=True
    ):
        np.testing.assert_array_equal(got, want)
    best, _, _ = train(policy, opt_state, max_updates=SHORT)
    for got, want in zip(
        jax.tree_util.tree_leaves(best),
        jax.tree_util.tree_leaves(restore_best(state.rule, state.policy)),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


def test_train_policy_with_a_frozen_policy_stops_at_the_earliest_point():
    """Learning rate 0: the first check improves (from −inf), the next 5 cannot."""
    policy, opt_state = fresh(0.0)
    best, _, info = train(policy, opt_state, max_updates=LONG)
    assert info.stopped and info.updates == FIRST_CHECK + 5
    assert (info.metrics()["policy_updates"], info.metrics()["policy_stopped_by_rule"]) == (
        FIRST_CHECK + 5,
        1,
    )
    assert jax.tree_util.tree_all(
        jax.tree_util.tree_map(lambda a, b: bool((a == b).all()), best, policy)
    )


def test_train_policy_stops_at_max_updates():
    policy, opt_state = fresh(0.0)
    _, _, info = train(policy, opt_state, max_updates=SHORT)
    assert info.updates == SHORT and not info.stopped
    assert (info.metrics()["policy_updates"], info.metrics()["policy_stopped_by_rule"]) == (
        SHORT,
        0,
    )


@pytest.mark.fusion_emitters
def test_train_policy_summarises_every_updates_ppo_diagnostics():
    """The PPO diagnostics of train_policy are those of its updates, replayed with the train step
    (mean over the updates and the last one's, :func:`ppo_summary`); a learning policy moves away
    from the behaviour policy within an update (KL > 0), a frozen one never does."""
    policy, opt_state = fresh(1e-2)
    state = TrainState(
        policy, opt_state, stop_rule_init(policy, 3), jax.random.key(1), jnp.zeros((), jnp.int32)
    )
    updates = []
    for _ in range(SHORT):
        state, metrics = STEP(state, MODEL, START, 0.0)
        updates.append(metrics.ppo)
    _, _, info = train(policy, opt_state, max_updates=SHORT)
    stacked = jax.tree_util.tree_map(lambda *u: jnp.stack(u), *updates)
    assert info.ppo == ppo_summary(stacked) and info.metrics().items() >= info.ppo.items()
    assert info.ppo["ppo_approx_kl_mean"] > 0 and info.ppo["ppo_entropy_last"] == pytest.approx(
        np.log(0.5) + 0.5 * np.log(2 * np.pi * np.e)
    )
    _, _, frozen = train(*fresh(0.0), max_updates=SHORT)
    assert (
        abs(frozen.ppo["ppo_approx_kl_mean"]) < 1e-6 and frozen.ppo["ppo_clip_fraction_mean"] == 0.0
    )


def test_policy_training_reads_from_the_device_once(monkeypatch):
    """A phase of updates is one compiled loop, the stop rule decided on the device: the host
    reads its outcome once, at the end, however many updates it made."""
    policy, opt_state = fresh(1e-2)
    reads = host_reads(monkeypatch)
    _, _, info = train(policy, opt_state, max_updates=SHORT)
    assert reads == ["device_get"] and info.updates == SHORT
    reads.clear()
    _, _, info = train(*fresh(0.0), max_updates=LONG)  # the stop rule ends it
    assert reads == ["device_get"] and info.stopped
    float(jnp.ones(()))  # the recorder sees an implicit read
    assert reads == ["device_get", "implicit"]


def test_traced_settings_do_not_recompile_the_loop(monkeypatch):
    """The updates' loop is compiled for its PolicyStepSettings (imagination, PPO) and max_updates
    alone: changing restore_best, first_check or the action std reuses it; PPO's epochs and
    max_updates (the length of its record) recompile."""
    traces = count_traces(monkeypatch, policy_training, "train_updates", static_argnums=(0, 1))
    train(*fresh(1e-2), max_updates=2)
    assert len(traces) == 1
    train(*fresh(1e-2), max_updates=2, restore_best=False, first_check=1, action_std=0.3)
    assert len(traces) == 1
    train(*fresh(1e-2), max_updates=2, ppo=PPOSettings(epochs=2))
    assert len(traces) == 2
    train(*fresh(1e-2), max_updates=4)
    assert len(traces) == 3


def test_train_policy_rejects_too_few_start_states():
    policy, opt_state = fresh(3e-4)
    with pytest.raises(ConfigError, match="start observations"):
        train(policy, opt_state, batch_steps=10 * START.shape[0] * POINT_MASS.horizon)
