"""Running normalisers against NumPy, and the world model's normaliser updates (algorithm.md §2)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rp1.core.normalizer import (
    VAR_FLOOR,
    denormalize,
    normalize,
    normalizer_fit,
    normalizer_init,
    normalizer_update,
)
from rp1.dynamics import ensemble_init, refresh_delta_normalizer, update_input_normalizers


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
