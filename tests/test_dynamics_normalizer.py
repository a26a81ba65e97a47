"""Running normalisers against NumPy, over all rows and over masked ones, and the world model's
normaliser updates and refreshes (algorithm.md §2)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rp1.config.defaults import EAGER, MASKED, STATISTICS
from rp1.core.executables import compilations, held
from rp1.core.normalizer import (
    VAR_FLOOR,
    denormalize,
    first_rows,
    normalize,
    normalizer_fit,
    normalizer_init,
    normalizer_update,
)
from rp1.core.transitions import Transitions
from rp1.dynamics import (
    ensemble_init,
    refresh_delta_normalizer,
    update_input_normalizers,
    with_heads,
)
from rp1.dynamics.refreshes import REFRESHES


def random_data(seed: int = 0, rows: int = 500, dim: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(
        loc=rng.normal(size=dim) * 3, scale=rng.uniform(0.5, 2, size=dim), size=(rows, dim)
    )


def test_fit_matches_numpy_mean_and_std():
    x = random_data()
    n = normalizer_fit(normalizer_init(4), x)
    np.testing.assert_allclose(n.mean, x.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(n.std, x.std(0), rtol=1e-5)
    assert float(n.count) == 500


@pytest.mark.parametrize("sizes", [[1, 499], [100, 0, 250, 150], [7] * 70 + [10]])
def test_batched_updates_match_numpy_on_all_rows(sizes):
    x = random_data(1)
    n = normalizer_init(4)
    for chunk in np.split(x, np.cumsum(sizes)[:-1]):
        n = normalizer_update(n, chunk)
    np.testing.assert_allclose(n.mean, x.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(n.std, x.std(0), rtol=1e-4)


def test_variance_is_floored():
    n = normalizer_fit(normalizer_init(2), np.array([[1.0, 0.0], [1.0, 2.0]]))
    np.testing.assert_allclose(n.std, [np.sqrt(VAR_FLOOR), 1.0], rtol=1e-6)


def test_denormalize_inverts_normalize_inside_the_clip_range():
    x = random_data(2)
    n = normalizer_fit(normalizer_init(4, clip=3.0), x)
    z = normalize(n, x)
    inside = np.all(np.abs((x - x.mean(0)) / x.std(0)) < 2.9, axis=1)
    np.testing.assert_allclose(denormalize(n, z)[inside], x[inside], rtol=1e-5, atol=1e-5)
    far = x.mean(0) + 10 * x.std(0)
    np.testing.assert_allclose(normalize(n, far), 3.0)


def test_update_input_normalizers_follows_states_and_actions():
    model = ensemble_init(jax.random.key(0), 4, 2, members=2, hidden=(8,))
    obs, act = random_data(3), random_data(4, dim=2)
    model = update_input_normalizers(model, obs[:200], act[:200])
    model = update_input_normalizers(model, obs[200:], act[200:])
    np.testing.assert_allclose(model.obs_norm.mean, obs.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model.act_norm.std, act.std(0), rtol=1e-4)
    assert model.obs_norm.clip == 3.0 and model.act_norm.clip == 3.0


def test_refresh_delta_normalizer_uses_normalized_state_differences():
    model = ensemble_init(jax.random.key(0), 4, 2, members=2, hidden=(8,))
    obs = random_data(5)
    next_obs = obs + random_data(6) * 0.1
    model = update_input_normalizers(model, obs, np.zeros((500, 2)))
    model = refresh_delta_normalizer(model, obs, next_obs)
    mean, std = obs.mean(0), obs.std(0)
    deltas = np.clip((next_obs - mean) / std, -3, 3) - np.clip((obs - mean) / std, -3, 3)
    np.testing.assert_allclose(model.delta_norm.mean, deltas.mean(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model.delta_norm.std, deltas.std(0), rtol=1e-3)
    assert float(model.delta_norm.count) == 500 and jnp.isinf(model.delta_norm.clip)


# --- masked statistics (statistics=masked) ----------------------------------------------------


@pytest.mark.parametrize("rows", [1, 37, 500])
def test_a_masked_update_reads_only_the_selected_rows(rows):
    """The statistics of the rows a mask selects, whatever the other rows hold, as the update over
    those rows alone gives them up to the order of summation."""
    x = random_data(7, rows=512)
    garbage = np.where(np.arange(512)[:, None] < rows, x, 1e6)
    start = normalizer_update(normalizer_init(4, clip=3.0), random_data(8, rows=50))
    masked = normalizer_update(start, garbage, first_rows(512, rows))
    plain = normalizer_update(start, x[:rows])
    np.testing.assert_allclose(masked.mean, plain.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(masked.var, plain.var, rtol=1e-4, atol=1e-6)
    assert float(masked.count) == 50 + rows and masked.clip == 3.0
    scattered = np.random.default_rng(0).random(512) < 0.3
    masked = normalizer_fit(start, garbage, scattered & first_rows(512, rows))
    plain = normalizer_fit(start, garbage[scattered & (np.arange(512) < rows)])
    np.testing.assert_allclose(masked.mean, plain.mean, rtol=1e-5, atol=1e-6)
    assert float(masked.count) == float(plain.count)


def test_a_mask_that_selects_nothing_leaves_the_statistics_as_they_are():
    start = normalizer_fit(normalizer_init(4), random_data(9, rows=20))
    masked = normalizer_update(start, random_data(10, rows=8), np.zeros(8, bool))
    assert all(
        np.array_equal(a, b)
        for a, b in zip(
            jax.tree_util.tree_leaves(masked), jax.tree_util.tree_leaves(start), strict=True
        )
    )
    empty = normalizer_fit(start, random_data(10, rows=8), np.zeros(8, bool))
    assert float(empty.count) == 0 and np.all(np.isfinite(empty.mean)) and np.all(empty.var == 1)


def stored(seed: int, rows: int) -> Transitions:
    rng = np.random.default_rng(seed)
    obs = random_data(seed, rows=rows).astype(np.float32)
    return Transitions(
        obs,
        rng.normal(size=(rows, 2)).astype(np.float32),
        rng.normal(size=rows).astype(np.float32),
        (obs + 0.1 * rng.normal(size=obs.shape)).astype(np.float32),
        np.zeros(rows, bool),
    )


def test_masked_and_eager_refreshes_compute_the_same_statistics():
    """statistics=masked and statistics=eager refresh every normaliser (inputs, delta, reward) to
    the same values but for the order of summation."""
    model = with_heads(
        ensemble_init(jax.random.key(0), 4, 2, members=2, hidden=(8,)), jax.random.key(1)
    )
    t = stored(11, 700)
    finals = random_data(12, rows=3)
    results = {}
    for name, refresh in REFRESHES.items():
        updated = refresh.inputs(model, np.concatenate([t.obs, finals]), t.act)
        results[name] = refresh.outputs(updated, t)
    for masked, eager in zip(
        jax.tree_util.tree_leaves(results[MASKED]),
        jax.tree_util.tree_leaves(results[EAGER]),
        strict=True,
    ):
        np.testing.assert_allclose(masked, eager, rtol=1e-4, atol=1e-6)
    assert (
        float(results[MASKED].obs_norm.count) == 703
        and float(results[MASKED].delta_norm.count) == 700
    )
    assert set(REFRESHES) == set(STATISTICS)


def test_eager_refreshes_keep_nothing_compiled_for_a_new_row_count():
    """statistics=eager compiles its refresh of all stored data for every row count and releases
    what it compiled (rp1.core.executables.releasing): the executables held stay as they were."""
    model = ensemble_init(jax.random.key(3), 4, 2, members=2, hidden=(8,))
    refresh = REFRESHES[EAGER]
    refresh.outputs(model, stored(1, 1301))
    before = held()
    for rows in (1302, 1303, 1777):  # row counts nothing else in the session uses
        compiled = compilations()
        refresh.outputs(model, stored(rows, rows))
        assert compilations() > compiled and held() <= before


def test_masked_refreshes_compile_once_per_bucket():
    """Stored data that grows inside its size bucket reuses the compiled refreshes; the next
    bucket compiles them once more."""
    model = ensemble_init(jax.random.key(2), 4, 2, members=2, hidden=(8,))
    refresh = REFRESHES[MASKED]

    def refreshed(rows: int) -> None:
        t = stored(rows, rows)
        jax.block_until_ready(refresh.outputs(refresh.inputs(model, t.obs, t.act), t))

    refreshed(1001)  # what else the test session compiled does not count
    before = compilations()
    for rows in (1002, 1003, 1024, 900, 1):
        refreshed(rows)
    assert compilations() == before
    refreshed(1025)
    assert compilations() > before
