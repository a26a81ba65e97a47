"""The numbers docs/algorithm.md fixes, written here as that page writes them: the methods of §8 as every preset
resolves them, the hyperparameters of §1–§7 and §9 in the paper-scale config, and the defaults of
the library pieces that run without a config (so that a piece lifted out of rp1 behaves as in a
run). A changed default or method entry fails here, whatever else still passes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rp1 import envs
from rp1.acquisition import ExpWeights, PhaseEarlyStop
from rp1.acquisition.bandit import BASELINES, WEIGHTINGS
from rp1.config import resolve
from rp1.core.normalizer import normalizer_fit, normalizer_init
from rp1.dynamics import FitSettings, ensemble_init
from rp1.imagination import PolicyTraining, make_imagination, stop_rule_init
from rp1.policy import PPOSettings, make_policy_optimizer, policy_init
from rp1.policy.networks import DEFAULT_ACTION_STD
from rp1.policy.ppo import ADVANTAGES

TASKS = ("halfcheetah", "ant", "hopper", "swimmer")

# algorithm.md §8: method -> (λ mode, fixed λ, early-stopping α, bonus, phase cap). "adaptive" methods start
# at λ = 0 (§6); the bonus of a method whose λ stays 0 is never used. "matched": the task's matched
# length (§8: HalfCheetah 300, Ant ≈ 300, Hopper 600, Swimmer 600).
METHODS = {
    "rp1": ("adaptive", 0.0, 0.0005, "reward", 3000),
    "greedy": ("fixed", 0.0, 0.0, "reward", 3000),
    "vr": ("fixed", 0.5, 0.0, "reward", 3000),
    "rp1-noadapt": ("fixed", 0.0, 0.0005, "reward", 3000),
    "rp1-nopca": ("adaptive", 0.0, 0.0, "reward", 3000),
    "rp1-statevar": ("adaptive", 0.0, 0.0005, "state", 3000),
    "greedy-matched": ("fixed", 0.0, 0.0, "reward", "matched"),
    "rp1-nopca-matched": ("adaptive", 0.0, 0.0, "reward", "matched"),
    "rp1-fixed05": ("fixed", 0.5, 0.0005, "reward", 3000),  # rp1's λ = 0.5 control
}
MATCHED = {"halfcheetah": 300, "ant": 294, "hopper": 600, "swimmer": 600}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("method", list(METHODS))
def test_every_preset_is_its_method_of_spec_section_8(task, method):
    cfg = resolve(f"{task}-{method}")
    mode, value, alpha, bonus, cap = METHODS[method]
    assert (cfg.task, cfg.method, cfg.scale) == (task, method, "paper")
    assert (cfg.lam.mode, cfg.lam.value, cfg.collect.alpha) == (mode, value, alpha)
    assert cfg.collect.phase_cap == (MATCHED[task] if cap == "matched" else cap)
    if mode == "fixed" and value == 0.0:
        return  # no bonus is ever added
    assert cfg.bonus == bonus


@pytest.mark.parametrize("task", TASKS)
def test_modelfree_preset_is_ppo_with_the_papers_policy_settings(task):
    cfg = resolve(f"{task}-modelfree")
    assert (cfg.method, cfg.budget) == ("modelfree", 1_000_000)  # §8: 10⁶ (5·10⁶, 10⁷ by --budget)
    p = cfg.policy
    assert (p.lr, p.hidden, p.epochs, p.batch_steps, p.action_std) == (
        3e-4,
        (32, 32),
        10,
        50_000,
        0.5,
    )


def test_paper_scale_config_holds_the_spec_hyperparameters():
    cfg = resolve("halfcheetah-rp1")
    assert (cfg.budget, cfg.eval_episodes, cfg.seed) == (100_000, 10, 0)  # §8, §7
    m = cfg.model  # §3, §9
    assert (m.members, m.hidden, m.lr, m.batch_size) == (5, (1024, 1024), 1e-3, 1024)
    assert (m.check_every, m.patience, m.max_epochs, m.max_train_samples) == (5, 5, 2000, 200_000)
    assert (m.reward, m.done) == ("auto", "auto")  # the paper's tasks: both known
    p = cfg.policy  # §4, §9
    assert (p.hidden, p.action_std, p.lr, p.epochs) == ((32, 32), 0.5, 3e-4, 10)
    assert (p.batch_steps, p.max_updates, p.first_check) == (50_000, 200, 11)
    assert (p.advantage, p.restore_best) == ("fixed", True)
    c = cfg.collect  # §5
    assert (c.phase_cap, c.alpha, c.noise_max, c.share) == (3000, 0.0005, 3.0, 0.99)
    lam = cfg.lam  # §6
    assert lam.arms == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
    assert (lam.lr, lam.eps, lam.decay, lam.window) == (0.2, 0.2, 0.9, 5)
    assert (lam.weighting, lam.baseline, lam.first_feedback, lam.g_normalizers) == (
        "probability",
        "previous",
        "exclude",
        "all",
    )


def test_small_scale_changes_the_sizes_readme_names_and_nothing_else():
    quick, paper = resolve("hopper-quick"), resolve("hopper-rp1")
    assert (quick.scale, quick.budget, quick.model.members) == ("small", 10_000, 5)
    assert (quick.model.hidden, quick.model.batch_size, quick.model.max_epochs) == (
        (200, 200),
        256,
        200,
    )
    assert (quick.policy.batch_steps, quick.policy.max_updates) == (5_000, 60)
    assert (quick.lam, quick.collect, quick.bonus) == (paper.lam, paper.collect, paper.bonus)


def test_ppo_defaults_are_the_papers():
    """§4, §9: γ 0.99, clip ε 0.2, value 0.5, entropy 0.01, 10 epochs, Adam lr 3e-4 β (0.9, 0.999),
    action std 0.5, 2 × 32 hidden units."""
    s = PPOSettings()
    assert (s.gamma, s.clip_eps, s.value_coef, s.entropy_coef, s.epochs, s.advantage) == (
        0.99,
        0.2,
        0.5,
        0.01,
        10,
        ADVANTAGES["fixed"],
    )
    policy = policy_init(jax.random.key(0), 3, 2)
    hyper = make_policy_optimizer().init(policy).hyperparams
    assert [float(hyper[k]) for k in ("learning_rate", "b1", "b2")] == pytest.approx(
        [3e-4, 0.9, 0.999], rel=1e-6
    )
    assert DEFAULT_ACTION_STD == 0.5
    shapes = [w.shape for w, _ in policy.actor]
    assert shapes == [(3, 32), (32, 32), (32, 2)] and [w.shape for w, _ in policy.critic][-1] == (
        32,
        1,
    )


def test_stop_rule_and_policy_training_defaults_are_me_trpos():
    """§4: at most 200 updates, checks from update 11, 6 checks in the window, 50,000-step
    batches, std 0.5 while imagining (the 70 % share: test_policy_train)."""
    _, task = envs.make("hopper")
    training = PolicyTraining(make_imagination(task))
    assert (
        training.max_updates,
        training.first_check,
        training.batch_steps,
        training.action_std,
    ) == (200, 11, 50_000, 0.5)
    assert training.rollouts == 50_000 // 200
    assert stop_rule_init(policy_init(jax.random.key(0), 2, 1), members=5).recent.shape == (6,)


def test_world_model_defaults_are_the_papers():
    """§2, §3: 5 members of 2 × 1024, Adam lr 1e-3, minibatch 1024, checks every 5 epochs,
    patience 5, at most 2000 epochs; normalisers clip at ±3 and floor the variance at 1e-4."""
    s = FitSettings()
    assert (s.lr, s.batch_size, s.check_every, s.patience, s.max_epochs) == (1e-3, 1024, 5, 5, 2000)
    model = jax.eval_shape(lambda: ensemble_init(jax.random.key(0), 3, 2))
    kernels = [w.shape for w, _ in model.params]
    assert kernels == [(5, 5, 1024), (5, 1024, 1024), (5, 1024, 3)]
    assert model.obs_norm.clip == model.act_norm.clip == 3.0
    constant = normalizer_fit(normalizer_init(1), np.ones((4, 1)))
    np.testing.assert_allclose(constant.std, [0.01], rtol=1e-6)  # sqrt(1e-4)


def test_bandit_and_early_stopping_defaults_are_the_papers():
    """§5, §6: arms 0…0.5, η 0.2, ε 0.2, decay 0.9, a window of 5, credit divided by p, Ĝ's
    mean over previous feedbacks only; the principal subspace keeps 99 % of the singular values."""
    bandit = ExpWeights()
    assert bandit.arms == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
    assert (bandit.lr, bandit.eps, bandit.decay, bandit.history.maxlen) == (0.2, 0.2, 0.9, 5)
    assert (bandit.weighting, bandit.baseline) == (WEIGHTINGS["probability"], BASELINES["previous"])
    np.testing.assert_allclose(bandit.probabilities, np.full(6, 1 / 6))
    assert PhaseEarlyStop(alpha=0.0005).share == 0.99


def test_imagination_defaults_to_the_reward_variance_bonus():
    _, task = envs.make("hopper")
    imagination = make_imagination(task)
    assert imagination.horizon == 200
    rewards = jnp.array([[1.0], [2.0], [6.0]])  # sqrt(((1 − 3)² + (2 − 3)² + (6 − 3)²) / 2)
    np.testing.assert_allclose(
        imagination.bonus(rewards, jnp.zeros((3, 1, 1))), [np.sqrt(7.0)], rtol=1e-6
    )


def test_settings_take_each_config_value_by_its_name():
    """check_every and patience are both 5 by default: set apart, each reaches its own setting."""
    from rp1.agents.settings import collect_settings, fit_settings, lambda_bandit

    sets = {
        "model.check_every": "3",
        "model.patience": "7",
        "lam.eps": "0.3",
        "lam.decay": "0.8",
        "collect.noise_max": "2.5",
    }
    cfg = resolve("hopper-rp1", overrides=sets)
    fit = fit_settings(cfg)
    assert (fit.check_every, fit.patience, fit.lr, fit.batch_size) == (3, 7, 1e-3, 1024)
    bandit = lambda_bandit(cfg, np.random.default_rng(0))
    assert (bandit.eps, bandit.decay, tuple(bandit.arms)) == (
        0.3,
        0.8,
        (0.0, 0.1, 0.2, 0.3, 0.4, 0.5),
    )
    collecting = collect_settings(cfg)
    assert (collecting.cap, collecting.alpha, collecting.noise_max, collecting.share) == (
        3000,
        0.0005,
        2.5,
        0.99,
    )
