"""PCA residual, phase early stopping (algorithm.md §5) and the λ bandit (algorithm.md §6)."""

from __future__ import annotations

import numpy as np
import pytest

from rp1.acquisition import ExpWeights, PhaseEarlyStop, pca_residual
from rp1.acquisition.bandit import BASELINES, WEIGHTINGS


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


def test_residual_standardises_with_one_scalar_mean_and_std():
    """Old rows (±1, 0, 6): the mean of all their entries is 2, so the standardised rows
    (−1, −2, 4) and (−3, −2, 4) (over their std) span e₁ and (0, −1, 2): both singular values
    count. The new row (0, 1, 6) becomes (−2, −1, 4), energy 21, of which 4 along e₁ and
    9²/5 along (0, −1, 2)/√5: r = (21 − 4 − 81/5) / 21 = 4/105. (Per-column standardising would
    leave e₁ alone and make r = 1.)"""
    old = np.array([[1.0, 0, 6], [-1, 0, 6], [1, 0, 6], [-1, 0, 6]])
    assert pca_residual(old, np.array([[0.0, 1, 6]])) == pytest.approx(4 / 105, rel=1e-9)


def test_residual_edge_cases_by_hand():
    """Old rows all alike span nothing: any other row is all new (r = 1). New rows at the old
    rows' mean carry no energy: nothing new (r = 0)."""
    assert pca_residual(np.ones((3, 2)), np.array([[2.0, 1.0]])) == 1.0
    old = np.array([[1.0, 3.0], [3.0, 1.0]])  # scalar mean 2
    assert pca_residual(old, np.full((2, 2), 2.0)) == 0.0


def test_share_decides_how_many_directions_count():
    """Old rows ±3e₁ and ±e₂: singular values in the ratio 3 : 1, so e₁ alone holds 3/4 of their
    sum. The new row e₂ is all new when the subspace keeps 70 % (e₁ only), nothing new at 99 %;
    the early stopper passes its share on."""
    old = np.array([[3.0, 0], [-3, 0], [0, 1], [0, -1]])
    new = np.array([[0.0, 1.0]])
    assert pca_residual(old, new, share=0.7) == pytest.approx(1.0)
    assert pca_residual(old, new) == pytest.approx(0.0, abs=1e-12)
    for share, stops in ((0.7, False), (0.99, True)):
        stopper = PhaseEarlyStop(alpha=0.5, share=share)
        stopper.add(old)
        assert stopper.add(new) is stops


def test_early_stop_needs_the_residual_strictly_below_alpha():
    rng = np.random.default_rng(5)
    # 10 rows in 40 dimensions: the second episode lies mostly outside the first's span, so r is
    # far from 0 on every device (a residual of ~0 would make α = r turn stopping off).
    first, second = rng.normal(size=(10, 40)), rng.normal(size=(10, 40))
    r = pca_residual(first, second)
    assert r > 0.1
    stopper = PhaseEarlyStop(alpha=r)  # r < α is false at α = r
    stopper.add(first)
    assert stopper.add(second) is False and stopper.last_residual == r


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
    assert bandit.update(1.0) == 0.0  # no previous feedback: ĝ = 0; no arm played, nothing changes
    assert np.all(bandit.scores == 0)
    bandit.choose(0.3)
    bandit.update(2.0, norm=0.5)
    changed = np.flatnonzero(bandit.scores)
    assert changed.tolist() == [3]
    # ĝ = (2 − mean of the previous [1]) / 0.5 = 2; the arm was chosen, not drawn: p = 1
    assert bandit.scores[3] == pytest.approx(0.2 * 2)


# (arm played, feedback, norm) of a scripted run with arms (0, 0.5), lr 1, decay 0.5, window 2.
SCRIPT = ((0.0, 2.0, 1.0), (0.5, 4.0, 2.0), (0.5, 1.0, 1.0), (0.0, 3.0, 1.0))
# ĝ by hand, per baseline (the window's mean without / with the current G), with and without a
# first feedback G0 = 10 recorded before any arm is played (the initial phase, lam.first_feedback):
SCRIPT_G_HAT = {
    # previous: [] -> 0; [2] -> (4 − 2)/2 = 1; [2, 4] -> (1 − 3)/1 = −2; [4, 1] -> (3 − 2.5)/1 = 0.5
    ("previous", None): [0.0, 1.0, -2.0, 0.5],
    # including: [2] -> 0; [2, 4] -> (4 − 3)/2 = 0.5; [4, 1] -> (1 − 2.5)/1 = −1.5; [1, 3] -> 1
    ("including", None): [0.0, 0.5, -1.5, 1.0],
    # previous: [10] -> (2 − 10)/1 = −8; [10, 2] -> (4 − 6)/2 = −1; then the window has lost G0
    ("previous", 10.0): [-8.0, -1.0, -2.0, 0.5],
    # including: [10, 2] -> (2 − 6)/1 = −4; [2, 4] -> 0.5; …
    ("including", 10.0): [-4.0, 0.5, -1.5, 1.0],
}


def scripted_bandit(baseline: str, weighting: str = "probability") -> ExpWeights:
    """The bandit of :data:`SCRIPT` (no exploration) with the named baseline and weighting."""
    return ExpWeights(
        arms=(0.0, 0.5),
        lr=1.0,
        eps=0.0,
        decay=0.5,
        window=2,
        weighting=WEIGHTINGS[weighting],
        baseline=BASELINES[baseline],
        seed=0,
    )


@pytest.mark.parametrize(("baseline", "first"), list(SCRIPT_G_HAT))
def test_bandit_g_hat_over_a_scripted_run_matches_hand_computed_values(baseline, first):
    bandit = scripted_bandit(baseline)
    if first is not None:
        assert bandit.update(first) == 0.0  # nothing before it; no arm played: only recorded
        assert np.all(bandit.scores == 0)
    g_hats = []
    for arm, feedback, norm in SCRIPT:
        bandit.choose(arm)
        g_hats.append(bandit.update(feedback, norm=norm))
    assert g_hats == pytest.approx(SCRIPT_G_HAT[baseline, first])


@pytest.mark.parametrize(
    ("baseline", "weighting", "expected"),
    [
        # ĝ (previous) 0, 1, −2, 0.5; chosen arms have p = 1: arm 1: 0 + 1 = 1, then 0.5·1 − 2 =
        # −1.5; arm 0: 0, then 0.5·0 + 0.5 = 0.5
        ("previous", "probability", [0.5, -1.5]),
        # decay first, divide by exp(decayed score): arm 1: 1, then 0.5 − 2 / exp(0.5)
        ("previous", "exp-score", [0.5, 0.5 - 2.0 / np.exp(0.5)]),
        # ĝ (including) 0, 0.5, −1.5, 1: arm 1: 0.5, then 0.25 − 1.5 = −1.25; arm 0: 0 + 1 = 1
        ("including", "probability", [1.0, -1.25]),
        ("including", "exp-score", [1.0, 0.25 - 1.5 / np.exp(0.25)]),
    ],
)
def test_bandit_scripted_scores_match_hand_computed_values(baseline, weighting, expected):
    bandit = scripted_bandit(baseline, weighting)
    for arm, feedback, norm in SCRIPT:
        bandit.choose(arm)
        bandit.update(feedback, norm=norm)
    np.testing.assert_allclose(bandit.scores, expected, rtol=1e-12)


def test_bandit_window_keeps_the_last_previous_feedbacks():
    """Window 3: the mean is of the 3 feedbacks before the current one, the oldest dropped."""
    bandit = ExpWeights(window=3, seed=0)
    for g in (100.0, 1.0, 2.0, 3.0):
        bandit.update(g)
    assert bandit.update(4.0, norm=2.0) == pytest.approx((4.0 - 2.0) / 2.0)  # mean(1, 2, 3)


def test_bandit_credits_a_drawn_arm_with_its_probability():
    bandit = ExpWeights(arms=(0.0, 0.5), lr=0.2, eps=0.2, decay=0.9, seed=3)
    # softmax (0.25, 0.75) -> p = 0.8·softmax + 0.1 = (0.3, 0.7)
    bandit.scores[:] = [
        0.0,
        np.log(3.0),
    ]
    bandit.update(1.0)  # window [1]
    drawn = bandit.arms.index(bandit.sample())
    bandit.update(3.0, norm=0.5)  # ĝ = (3 − 1) / 0.5 = 4
    p = (0.3, 0.7)[drawn]
    before = (0.0, np.log(3.0))[drawn]
    assert bandit.scores[drawn] == pytest.approx(0.9 * before + 0.2 * 4.0 / p)
    assert bandit.scores[1 - drawn] == (0.0, np.log(3.0))[1 - drawn]


def test_bandit_metrics_are_its_probabilities_after_known_updates():
    """Arms 0 and 0.5, lr 0.2, ε 0.2, decay 0.9. G = 1 before any play is only recorded; λ = 0
    chosen (p = 1), then G = 3 with norm 0.5: ĝ = (3 − 1) / 0.5 = 4, score 0.2·4 = 0.8. Then λ = 0.5
    chosen, G = 1, norm 1: ĝ = 1 − mean(1, 3) = −1, its score 0.2·(−1) = −0.2 (only the arm
    played decays: the other keeps 0.8).
    Probabilities 0.8·softmax(scores) + 0.1 per arm, by column p_lambda_<λ>."""
    bandit = ExpWeights(arms=(0.0, 0.5), lr=0.2, eps=0.2, decay=0.9, seed=0)
    assert bandit.metrics() == {"p_lambda_0.0": 0.5, "p_lambda_0.5": 0.5}
    bandit.update(1.0)
    bandit.choose(0.0)
    bandit.update(3.0, norm=0.5)
    first = 0.8 * np.exp(0.8) / (np.exp(0.8) + 1) + 0.1
    assert bandit.metrics() == pytest.approx(
        {"p_lambda_0.0": first, "p_lambda_0.5": 1 - first}, rel=1e-12
    )
    bandit.choose(0.5)
    bandit.update(1.0)
    second = 0.8 * np.exp(0.8) / (np.exp(0.8) + np.exp(-0.2)) + 0.1
    assert bandit.metrics() == pytest.approx(
        {"p_lambda_0.0": second, "p_lambda_0.5": 1 - second}, rel=1e-12
    )


def test_bandit_shifts_mass_to_rewarding_arm():
    bandit = ExpWeights(seed=0)
    good = 4
    for _ in range(50):
        lam = bandit.sample()
        bandit.update(1.0 if bandit.arms.index(lam) == good else 0.0, norm=1.0)
    p = bandit.probabilities
    assert p[good] > max(np.delete(p, good))
    assert p[good] > 1 / 6 + 0.1


def test_bandit_draws_arms_with_their_probabilities():
    """Probabilities 0.9 and 0.1 (ε = 0, scores log 9 and 0): 2,000 draws land on the first arm
    90 % of the time (± 3 %, about 4.5 standard deviations)."""
    bandit = ExpWeights(arms=(0.0, 0.5), eps=0.0, seed=0)
    bandit.scores[:] = [np.log(9.0), 0.0]
    np.testing.assert_allclose(bandit.probabilities, [0.9, 0.1])
    share = np.mean([bandit.sample() == 0.0 for _ in range(2000)])
    assert 0.87 < share < 0.93


def test_bandit_draws_follow_its_seed():
    def draws(seed):
        bandit = ExpWeights(seed=seed)
        return [bandit.sample() for _ in range(30)]

    assert draws(1) == draws(1) and draws(1) != draws(2)


def test_bandit_update_divides_by_one_by_default():
    bandit = ExpWeights(seed=0)
    bandit.update(1.0)
    assert bandit.update(3.0) == 2.0  # (3 − mean(1)) / 1


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


def test_bandit_rejects_no_arms():
    with pytest.raises(ValueError, match="arms must hold at least one value"):
        ExpWeights(arms=())
    assert ExpWeights(arms=(0.3,), seed=0).sample() == 0.3  # one arm, and ε at its bounds, are fine
    assert ExpWeights(eps=1.0).eps == 1.0 and ExpWeights(eps=0.0).eps == 0.0
