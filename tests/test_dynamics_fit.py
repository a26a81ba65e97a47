"""Fitting the ensemble: learning, early stopping, compiles, G, the NaN path (algorithm.md §3, §6)."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import count_traces, host_reads
from rp1.core.normalizer import normalize
from rp1.dynamics import (
    Ensemble,
    FitSettings,
    NonFiniteLossError,
    TransitionStore,
    ensemble_init,
    fit,
    init_model_opt_state,
    member_losses,
    model_error,
    predict_all,
    refresh_delta_normalizer,
    refresh_reward_normalizer,
    update_input_normalizers,
    with_heads,
)
from rp1.dynamics.fit import CHECK_EVERY, DEALINGS, STOP_RULES

FIT_MODULE = importlib.import_module("rp1.dynamics.fit")  # rp1.dynamics.fit is the function

OBS, ACT, STEPS = 4, 2, 50
HIDDEN = (64, 64)


def linear_episodes(rng: np.random.Generator, n: int, noise: float) -> list[dict[str, np.ndarray]]:
    """``n`` rollouts of a fixed linear system ``s' = s + sA + aB + noise`` from random states."""
    system = np.random.default_rng(123)
    a_mat, b_mat = system.normal(size=(OBS, OBS)) * 0.1, system.normal(size=(ACT, OBS)) * 0.3
    episodes = []
    for _ in range(n):
        s, a = rng.normal(size=(STEPS, OBS)), rng.uniform(-1, 1, (STEPS, ACT))
        s_next = s + s @ a_mat + a @ b_mat + noise * rng.normal(size=(STEPS, OBS))
        episodes.append({"obs": s, "act": a, "rew": np.zeros(STEPS), "next_obs": s_next})
    return episodes


def linear_store(episodes: int, noise: float = 0.01, seed: int = 0) -> TransitionStore:
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase(linear_episodes(np.random.default_rng(seed), episodes, noise))
    return store


def model_for(store: TransitionStore, seed: int = 0) -> Ensemble:
    """A fresh ensemble with normalisers set from the store's data, as the outer loop does."""
    t = store.transitions()
    model = ensemble_init(jax.random.key(seed), OBS, ACT, members=5, hidden=HIDDEN)
    model = update_input_normalizers(model, t.obs, t.act)
    return refresh_delta_normalizer(model, t.obs, t.next_obs)


def run_fit(store: TransitionStore, model: Ensemble | None = None, **kwargs):
    model = model_for(store) if model is None else model
    settings = FitSettings(**{"batch_size": 256, **kwargs})
    return fit(
        model,
        init_model_opt_state(model),
        store.train_set(np.random.default_rng(0)),
        store.val_set(),
        jax.random.key(1),
        settings,
    )


@pytest.fixture(scope="module")
def small_store() -> TransitionStore:
    return linear_store(60)  # 2,000 training and 1,000 validation transitions


@pytest.mark.slow
def test_learns_a_linear_system_far_better_than_no_change_and_members_differ(small_store):
    model, _, result = run_fit(small_store, max_epochs=40)
    val = small_store.val
    no_change = float(
        np.mean((normalize(model.obs_norm, val.obs) - normalize(model.obs_norm, val.next_obs)) ** 2)
    )
    assert result.val_loss < no_change / 30
    assert result.val_loss == pytest.approx(float(result.member_val_losses.min()))
    predictions = predict_all(model, val.obs[:100], val.act[:100])
    assert predictions.shape == (5, 100, OBS)
    assert float(jnp.std(predictions, axis=0).min()) > 0


def test_early_stopping_restores_each_members_best_weights(small_store):
    model, _, result = run_fit(small_store, max_epochs=60)
    np.testing.assert_allclose(result.member_val_losses, result.val_history.min(0), rtol=1e-6)
    np.testing.assert_allclose(
        member_losses(model, small_store.val_set()), result.member_val_losses, rtol=1e-5
    )
    assert result.val_history.shape == (1 + 60 // 5, 5)


def test_stops_well_before_the_cap_on_an_easy_problem():
    store = linear_store(30, noise=0.3)
    _, _, result = run_fit(store, max_epochs=2000)
    assert result.epochs < 400 and result.epochs % 5 == 0
    stale = result.val_history[-5:]
    assert np.all(stale >= result.val_history[:-5].min(0))


@pytest.mark.slow
def test_stop_on_dynamics_ends_a_fit_with_heads_by_the_dynamics_history_alone():
    """``stop_on="dynamics"`` stops after ``patience`` checks in which no member's dynamics
    improved, whatever the heads do; ``"any"`` runs the same compiled steps (the same dynamics
    history) and never stops earlier."""
    episodes = linear_episodes(np.random.default_rng(0), 30, noise=0.3)
    for e in episodes:
        e["rew"] = np.sin(3 * e["next_obs"][:, 0]) * np.cos(2 * e["act"][:, 0])
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase(episodes)
    model = with_heads(model_for(store), jax.random.key(2), (32,))
    model = refresh_reward_normalizer(model, store.transitions().rew)
    patience, cap = 3, 300
    results = {
        rule: run_fit(store, model, stop_on=STOP_RULES[rule], patience=patience, max_epochs=cap)[2]
        for rule in ("dynamics", "any")
    }
    history = results["dynamics"].val_history
    best, stale = history[0], 0
    for losses in history[1:]:
        assert stale < patience  # the fit went on only while the rule allowed it
        stale = 0 if np.any(losses < best) else stale + 1
        best = np.minimum(best, losses)
    assert (
        stale == patience and results["dynamics"].epochs == CHECK_EVERY * (len(history) - 1) < cap
    )
    assert results["any"].epochs >= results["dynamics"].epochs
    np.testing.assert_array_equal(results["any"].val_history[: len(history)], history)
    assert np.isfinite(results["dynamics"].head_val_losses).all()


def test_never_runs_past_the_epoch_cap_and_zero_epochs_changes_nothing(small_store):
    model = model_for(small_store)
    _, opt_state, result = run_fit(small_store, model, max_epochs=7, patience=100)
    assert result.epochs == 7 and len(result.val_history) == 3
    # 2,000 training rows in a 2,048-row bucket: 8 minibatches of 256, all non-empty, per epoch.
    assert np.all(np.asarray(opt_state[0].count) == 7 * 8)
    same, _, result = run_fit(small_store, model, max_epochs=0)
    assert result.epochs == 0
    jax.tree_util.tree_map(np.testing.assert_array_equal, same.params, model.params)


def test_adam_state_skips_empty_minibatches_and_carries_over():
    store = linear_store(18)  # 600 training rows in a 1,024-row bucket
    model = model_for(store)
    train, val = store.train_set(np.random.default_rng(0)), store.val_set()
    opt_state = init_model_opt_state(model)
    for _ in range(2):
        model, opt_state, _ = fit(
            model,
            opt_state,
            train,
            val,
            jax.random.key(2),
            FitSettings(batch_size=128, max_epochs=5, patience=100),
        )
    # ⌈600/128⌉ = 5 non-empty minibatches of the 8 the bucket holds, per epoch, over 2 × 5 epochs.
    assert np.all(np.asarray(opt_state[0].count) == 2 * 5 * 5)


def test_padding_rows_do_not_affect_the_fit(small_store):
    model = model_for(small_store)
    train, val = small_store.train_set(np.random.default_rng(0)), small_store.val_set()
    garbage = train._replace(obs=train.obs.copy(), next_obs=train.next_obs.copy())
    garbage.obs[int(train.n_valid) :] = 1e3
    garbage.next_obs[int(train.n_valid) :] = -1e3
    results = [
        fit(
            model,
            init_model_opt_state(model),
            t,
            val,
            jax.random.key(3),
            FitSettings(batch_size=256, max_epochs=5),
        )
        for t in (train, garbage)
    ]
    jax.tree_util.tree_map(
        np.testing.assert_array_equal, results[0][0].params, results[1][0].params
    )


def count_fit_traces(monkeypatch) -> list[int]:
    """Every trace of the fit's compiled loop from here on (:func:`helpers.count_traces`)."""
    return count_traces(monkeypatch, FIT_MODULE, "fit_loop", static_argnames=("statics",))


@pytest.mark.slow
def test_compiles_the_fit_once_per_size_bucket(monkeypatch):
    traces = count_fit_traces(monkeypatch)
    stores = [linear_store(n, seed=n) for n in (40, 100, 180, 200)]  # 2k, 5k, 9k, 10k transitions
    model = model_for(stores[0])
    opt_state = init_model_opt_state(model)
    buckets = set()
    for store in stores:
        train, val = store.train_set(np.random.default_rng(0)), store.val_set()
        buckets.add((train.obs.shape[0], val.obs.shape[0]))
        model, opt_state, _ = fit(
            model,
            opt_state,
            train,
            val,
            jax.random.key(0),
            FitSettings(batch_size=512, max_epochs=5),
        )
    assert len(buckets) == 3  # the last store shares the third one's buckets
    assert len(traces) == len(buckets)


def test_a_new_learning_rate_reuses_the_compiled_epochs(monkeypatch, small_store):
    """The learning rate is traced: fits at two learning rates trace the fit's loop once, and
    the second fit trains at its own learning rate (from the same start, other weights)."""
    traces = count_fit_traces(monkeypatch)
    fitted = {lr: run_fit(small_store, lr=lr, max_epochs=5)[0] for lr in (1e-3, 3e-4)}
    assert len(traces) == 1
    moved = [
        np.abs(np.asarray(fitted[1e-3].params[0][0]) - np.asarray(fitted[lr].params[0][0])).max()
        for lr in (1e-3, 3e-4)
    ]
    assert moved[0] == 0.0 < moved[1]  # the second fit trained at its own learning rate


def test_model_error_matches_its_definition():
    store = linear_store(6, noise=0.1)
    model = model_for(store)
    t = store.transitions()
    mean, std = np.asarray(model.obs_norm.mean), np.asarray(model.obs_norm.std)
    # the model's norm(s'), unclipped
    predicted = (np.asarray(predict_all(model, t.obs, t.act)) - mean) / std
    target = np.clip((t.next_obs - mean) / std, -3, 3)
    mse = np.mean((predicted - target) ** 2, axis=(1, 2))
    assert model_error(model, t.obs, t.act, t.next_obs) == pytest.approx(
        np.sqrt(np.mean(mse**2)), rel=1e-5
    )


def test_model_error_is_zero_for_an_exact_model_and_grows_with_noise():
    rng = np.random.default_rng(0)
    obs, act = rng.normal(size=(300, OBS)), rng.normal(size=(300, ACT))
    model = ensemble_init(jax.random.key(0), OBS, ACT, members=5, hidden=(8,))
    model = update_input_normalizers(model, obs, act)
    # Zero weights everywhere: every member predicts norm(s') = norm(s) + μ_Δ, with μ_Δ = 0.5 here.
    model = model.replace(
        params=jax.tree_util.tree_map(jnp.zeros_like, model.params),
        delta_norm=model.delta_norm.replace(mean=jnp.full((OBS,), 0.5)),
    )
    next_obs = obs + 0.5 * np.asarray(model.obs_norm.std)
    inside = np.all(np.abs(np.asarray(normalize(model.obs_norm, obs))) < 2.4, axis=1)  # no clipping
    obs, act, next_obs = obs[inside], act[inside], next_obs[inside]
    errors = [
        model_error(model, obs, act, next_obs + s * rng.normal(size=next_obs.shape))
        for s in (0, 0.1, 0.5)
    ]
    assert errors[0] < 1e-10
    assert errors[0] < errors[1] < errors[2]


def test_a_fit_reads_from_the_device_once(monkeypatch, small_store):
    """Its epochs, checks and stop rule are one compiled loop: the host reads the outcome once,
    however many checks it made."""
    reads = host_reads(monkeypatch)
    _, _, result = run_fit(small_store, max_epochs=30, patience=100)
    assert reads == ["device_get"] and result.epochs == 30 and len(result.val_history) == 7


def test_non_finite_predictions_raise_naming_member_and_epoch(small_store):
    model = model_for(small_store)
    broken = model.replace(
        params=jax.tree_util.tree_map(lambda p: p.at[3].set(jnp.nan), model.params)
    )
    with pytest.raises(NonFiniteLossError, match=r"member 3 .* at epoch 0"):
        run_fit(small_store, broken, max_epochs=5)


def test_non_finite_training_data_raises_naming_member_and_epoch(small_store):
    model = model_for(small_store)
    train = small_store.train_set(np.random.default_rng(0))
    assert not train.obs.flags.writeable  # the store's own arrays
    train = train._replace(obs=train.obs.copy())
    train.obs[5, 0] = np.nan
    with pytest.raises(
        FloatingPointError, match=r"member 0 has a non-finite training loss .* at epoch 1"
    ):
        fit(
            model,
            init_model_opt_state(model),
            train,
            small_store.val_set(),
            jax.random.key(0),
            FitSettings(max_epochs=5),
        )


def test_rejects_empty_validation_set():
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase(
        linear_episodes(np.random.default_rng(0), 2, 0.0), min_val=0
    )  # ⌊2/3⌋ = 0
    with pytest.raises(ValueError, match="validation set is empty"):
        run_fit(store, max_epochs=5)


# --- the round-robin dealing (the authors' ensemble training) -------------------------------


def member(tree, j: int):
    """Member ``j``'s slice of a tree stacked over members."""
    return jax.tree_util.tree_map(lambda x: x[j], tree)


def test_round_robin_gives_each_member_the_gradient_of_its_own_minibatch(small_store):
    """In a round, member ``j`` steps on minibatch ``round · M + j − first`` alone; members before
    ``first`` get no minibatch in the epoch's first round and step with a zero gradient (from a
    fresh Adam state: no change)."""
    model = model_for(small_store)
    train = jax.device_put(small_store.train_set(np.random.default_rng(0)))
    weights, opt = FIT_MODULE.model_weights(model), init_model_opt_state(model)
    optimizer = FIT_MODULE.make_model_optimizer()
    batches = jnp.arange(8 * 256).reshape(8, 256)[::-1]  # minibatch k: rows of block 7 − k
    first = 2
    (new, _), (_, rows) = FIT_MODULE._round_update(
        optimizer,
        model,
        train,
        FIT_MODULE.Deal(batches, jnp.int32(8), jnp.int32(first)),
        (weights, opt),
        0,
    )
    assert rows.tolist() == [0, 0, 256, 256, 256]
    for j in range(5):
        if j < first:
            jax.tree_util.tree_map(
                np.testing.assert_array_equal, member(new, j), member(weights, j)
            )
            continue
        alone, _, _ = FIT_MODULE._member_step(
            optimizer, model, train, member(weights, j), member(opt, j), batches[j - first], True
        )
        other, _, _ = FIT_MODULE._member_step(
            optimizer, model, train, member(weights, j), member(opt, j), batches[j], True
        )
        got, want, wrong = (np.asarray(w.dynamics[0][0]) for w in (member(new, j), alone, other))
        # Adam's first step moves a weight by up to lr = 1e-3, g / (|g| + ε) of it: where |g| is
        # near ε the last bits of g move it, so the steps are compared as a whole
        assert np.linalg.norm(got - want) < 0.05 * np.linalg.norm(got - wrong)


def test_round_robin_steps_once_per_round_and_carries_the_member_over_epochs(small_store):
    """2,000 rows in minibatches of 256: 8 per epoch for 5 members. Epoch 1 steps once (minibatches
    0–4; 5–7 dropped with their incomplete round) and deals to member 3 next; epoch 2 steps twice
    (members 3, 4, then a full round). The shuffle dealing steps every member on every minibatch."""
    counts = {
        dealing: np.asarray(
            run_fit(small_store, max_epochs=2, patience=100, dealing=DEALINGS[dealing])[1][0].count
        )
        for dealing in ("round-robin", "shuffle")
    }
    assert counts["round-robin"].tolist() == [3] * 5
    assert counts["shuffle"].tolist() == [16] * 5


@pytest.mark.slow
def test_round_robin_learns_the_linear_system(small_store):
    model, _, result = run_fit(small_store, max_epochs=100, dealing=DEALINGS["round-robin"])
    val = small_store.val
    no_change = float(
        np.mean((normalize(model.obs_norm, val.obs) - normalize(model.obs_norm, val.next_obs)) ** 2)
    )
    assert result.val_loss < no_change / 10
    assert np.isfinite(result.train_losses).all()
