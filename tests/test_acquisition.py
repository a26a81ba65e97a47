"""PCA residual, phase early stopping (SPEC §5) and the λ bandit (SPEC §6)."""

from __future__ import annotations

import numpy as np
import pytest

from rp1.acquisition import ExpWeights, PhaseEarlyStop, pca_residual


def _subspace_data(rng, n, d=12, k=3):
    basis, _ = np.linalg.qr(rng.normal(size=(d, d)))
    inside, outside = basis[:, :k], basis[:, k:]
    z = rng.normal(size=(n, k))
    old = np.concatenate([z, -z]) @ inside.T  # ± pairs: scalar mean exactly 0
    return old, inside, outside


def test_residual_zero_inside_subspace():
    rng = np.random.default_rng(0)
    old, inside, _ = _subspace_data(rng, 200)
    new = rng.normal(size=(50, inside.shape[1])) @ inside.T
    assert pca_residual(old, new) == pytest.approx(0.0, abs=0.02)


def test_residual_one_for_orthogonal_rows():
    rng = np.random.default_rng(1)
    old, _, outside = _subspace_data(rng, 200)
    new = rng.normal(size=(50, outside.shape[1])) @ outside.T
    assert pca_residual(old, new) == pytest.approx(1.0, abs=1e-6)


def test_residual_in_unit_interval_on_random_data():
    rng = np.random.default_rng(2)
    for _ in range(20):
        old = rng.normal(size=(rng.integers(2, 60), 8)) * rng.uniform(0.1, 10)
        new = rng.normal(size=(rng.integers(1, 30), 8)) + rng.normal()
        assert 0.0 <= pca_residual(old, new) <= 1.0


def test_early_stop_after_two_identical_episodes_and_never_first():
    rng = np.random.default_rng(3)
    episode = rng.normal(size=(100, 6))
    stopper = PhaseEarlyStop(alpha=5e-4)
    assert stopper.add(episode) is False
    assert stopper.add(episode + 1e-6 * rng.normal(size=episode.shape)) is True
    assert stopper.last_residual < 5e-4


def test_early_stop_off_and_distinct_episodes_continue():
    rng = np.random.default_rng(4)
    off = PhaseEarlyStop(alpha=0.0)
    assert not any(off.add(rng.normal(size=(20, 40))) for _ in range(5))
    on = PhaseEarlyStop(alpha=5e-4)
    # each episode spans new directions (20 rows in 40 dims): never "nothing new"
    assert not any(on.add(rng.normal(size=(20, 40))) for _ in range(2))


def test_bandit_update_touches_only_played_arm():
    bandit = ExpWeights(seed=0)
    bandit.update(1.0)  # baseline: no arm played, nothing changes
    assert np.all(bandit.scores == 0)
    bandit.choose(0.3)
    bandit.update(2.0, norm=0.5)
    changed = np.flatnonzero(bandit.scores)
    assert changed.tolist() == [3]
    # ĝ = (2 − mean(1, 2)) / 0.5 = 1; the arm was chosen, not drawn: p = 1, score = 0.2·1 / 1
    assert bandit.scores[3] == pytest.approx(0.2)


# (arm played, feedback, norm) of a scripted run with arms (0, 0.5), lr 1, decay 0.5, window 2.
SCRIPT = ((0.0, 2.0, 1.0), (0.5, 4.0, 2.0), (0.5, 1.0, 1.0), (0.0, 3.0, 1.0))
# ĝ by hand: window [2] -> 0; [2, 4] -> (4 − 3)/2 = 0.5; [4, 1] -> (1 − 2.5)/1 = −1.5; [1, 3] -> 1
SCRIPT_G_HAT = [0.0, 0.5, -1.5, 1.0]


@pytest.mark.parametrize(
    "weighting, expected",
    [
        # chosen arms have p = 1: arm 1: 0 + 0.5 = 0.5, then 0.5·0.5 − 1.5 = −1.25; arm 0: 0 + 1 = 1
        ("probability", [1.0, -1.25]),
        # decay first, divide by exp(decayed score): arm 1: 0.5, then 0.25 − 1.5 / exp(0.25)
        ("exp-score", [1.0, 0.25 - 1.5 / np.exp(0.25)]),
    ],
)
def test_bandit_scripted_updates_match_hand_computed_values(weighting, expected):
    bandit = ExpWeights(arms=(0.0, 0.5), lr=1.0, eps=0.0, decay=0.5, window=2, weighting=weighting, seed=0)
    g_hats = []
    for arm, feedback, norm in SCRIPT:
        bandit.choose(arm)
        g_hats.append(bandit.update(feedback, norm=norm))
    assert g_hats == pytest.approx(SCRIPT_G_HAT)
    np.testing.assert_allclose(bandit.scores, expected, rtol=1e-12)


def test_bandit_credits_a_drawn_arm_with_its_probability():
    bandit = ExpWeights(arms=(0.0, 0.5), lr=0.2, eps=0.2, decay=0.9, seed=3)
    bandit.scores[:] = [0.0, np.log(3.0)]  # softmax (0.25, 0.75) -> p = 0.8·softmax + 0.1 = (0.3, 0.7)
    bandit.update(1.0)  # window [1]
    drawn = bandit.arms.index(bandit.sample())
    bandit.update(3.0, norm=0.5)  # ĝ = (3 − 2) / 0.5 = 2
    p = (0.3, 0.7)[drawn]
    before = (0.0, np.log(3.0))[drawn]
    assert bandit.scores[drawn] == pytest.approx(0.9 * before + 0.2 * 2.0 / p)
    assert bandit.scores[1 - drawn] == (0.0, np.log(3.0))[1 - drawn]


def test_bandit_shifts_mass_to_rewarding_arm():
    bandit = ExpWeights(seed=0)
    good = 4
    for _ in range(50):
        lam = bandit.sample()
        bandit.update(1.0 if bandit.arms.index(lam) == good else 0.0, norm=1.0)
    p = bandit.probabilities
    assert p[good] > max(np.delete(p, good))
    assert p[good] > 1 / 6 + 0.1


def test_bandit_mixing_floor_and_normalisation():
    bandit = ExpWeights(eps=0.2, seed=0)
    bandit.scores[:] = [50.0, -50, -50, -50, -50, -50]
    p = bandit.probabilities
    assert p.sum() == pytest.approx(1.0)
    assert p.min() >= 0.2 / 6 - 1e-12


def test_bandit_state_round_trip():
    a = ExpWeights(seed=5)
    for g in range(7):
        a.sample()
        a.update(float(g), norm=2.0)
    a.sample()
    b = ExpWeights(seed=99)
    b.load_state_dict(a.state_dict())
    assert [a.sample() for _ in range(20)] == [b.sample() for _ in range(20)]
    np.testing.assert_array_equal(a.scores, b.scores)


def test_bandit_rejects_bad_arguments():
    with pytest.raises(ValueError):
        ExpWeights(eps=1.5)
    with pytest.raises(ValueError):
        ExpWeights(weighting="other")
