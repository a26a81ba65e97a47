"""The paper's defaults (algorithm.md §9) as plain values: the one place each is written.

The config's fields (:mod:`rp1.config.schema`) read them, and so do the library's functions whose
own defaults they are (so that a piece lifted out of rp1 behaves as in a run: ``ExpWeights()``,
``fit(…)``, ``train_policy(…)``): :mod:`rp1.dynamics`, :mod:`rp1.policy`,
:mod:`rp1.imagination` and :mod:`rp1.acquisition` import them from here, never the other way
round. A switch (a setting that selects behaviour) is a ``Literal`` of names here; the module that
implements it maps each name to its function (``STOP_RULES``, ``DEALINGS``, ``ADVANTAGES``,
``WEIGHTINGS``, …), and :mod:`rp1.agents.settings` hands the selected function on.

This module imports nothing of rp1 (nor JAX): reading a config costs no more than reading it.
"""

from __future__ import annotations

import typing
from typing import Literal

# --- the world model and its fit (algorithm.md §3; rp1.dynamics) ----------------------------------

MEMBERS = 5  # algorithm.md §3
HIDDEN = (1024, 1024)  # algorithm.md §3: every member's hidden layer widths
HEAD_HIDDEN = (200, 200)  # the learned reward / termination heads
MODEL_LEARNING_RATE = 1e-3  # algorithm.md §3
BATCH_SIZE = 1024
CHECK_EVERY = 5  # epochs between validations
PATIENCE = 5  # checks without improvement before stopping
MAX_EPOCHS = 2000
MAX_TRAIN_SAMPLES = 200_000  # algorithm.md §3: the fit subsamples beyond this many training rows
MIN_VAL_ROLLOUTS = 1  # see rp1.dynamics.store.validation_rollouts; 0 is the literal ⌊n/3⌋ rule
StopOn = Literal["any", "dynamics"]
"""What counts as an improvement for early stopping (``model.stop_on``,
:data:`rp1.dynamics.fit.STOP_RULES`)."""
STOP_ON: StopOn = "any"
STOP_ONS: tuple[StopOn, ...] = typing.get_args(StopOn)
Dealing = Literal["shuffle", "round-robin"]
"""How an epoch's minibatches reach the members (``model.dealing``,
:data:`rp1.dynamics.fit.DEALINGS`)."""
SHUFFLE: Dealing = "shuffle"
ROUND_ROBIN: Dealing = "round-robin"
DEALING_NAMES: tuple[Dealing, ...] = typing.get_args(Dealing)

# --- the policy and PPO (algorithm.md §4; rp1.policy, rp1.imagination) ----------------------------

POLICY_HIDDEN = (32, 32)  # algorithm.md §4, actor and critic alike
DEFAULT_ACTION_STD = 0.5
PPO_LEARNING_RATE = 3e-4
EPOCHS = 10
Advantage = Literal["fixed", "per-epoch"]
"""When ``A = R̂ − V(s)`` is computed (``policy.advantage``): once per update or every epoch."""
ADVANTAGE: Advantage = "fixed"
ADVANTAGE_NAMES: tuple[Advantage, ...] = typing.get_args(Advantage)
MAX_UPDATES = 200
FIRST_CHECK = 11
BATCH_STEPS = 50_000
BONUS = "reward"  # RP1's bonus; "state" is the ablation
BONUS_NAMES = ("reward", "state")
"""The built-in bonuses (:data:`rp1.imagination.rollouts.BONUSES`); any other bonus is a function
``package.module:function``."""

# --- collection (algorithm.md §5; rp1.acquisition.pca) ---------------------------------------------

SHARE = 0.99  # algorithm.md §5: the principal subspace keeps this share of the singular values

# --- the λ bandit (algorithm.md §6; rp1.acquisition.bandit) -----------------------------------------

ARMS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)  # algorithm.md §6: the λ values
BANDIT_LEARNING_RATE = 0.2
EPS = 0.2  # share of uniform exploration
DECAY = 0.9  # of the scores, per update
WINDOW = 5  # feedbacks in the running mean
Weighting = Literal["probability", "exp-score"]
"""What an arm's credit is divided by (``lam.weighting``, :data:`rp1.acquisition.bandit.WEIGHTINGS`)."""
WEIGHTING: Weighting = "probability"
WEIGHTING_NAMES: tuple[Weighting, ...] = typing.get_args(Weighting)
Baseline = Literal["previous", "including"]
"""What ĝ's running mean covers (``lam.baseline``, :data:`rp1.acquisition.bandit.BASELINES`)."""
BASELINE: Baseline = "previous"
BASELINE_NAMES: tuple[Baseline, ...] = typing.get_args(Baseline)
FirstFeedback = Literal["exclude", "include"]
"""Whether the initial random phase's G enters the window (``lam.first_feedback``,
:data:`rp1.acquisition.bandit.FIRST_FEEDBACKS`)."""
FIRST_FEEDBACK_NAMES: tuple[FirstFeedback, ...] = typing.get_args(FirstFeedback)
GNormalizers = Literal["all", "inputs"]
"""Which normalisers are refreshed when a phase's G is measured (``lam.g_normalizers``,
:data:`rp1.acquisition.bandit.G_MODELS`)."""
G_NORMALIZER_NAMES: tuple[GNormalizers, ...] = typing.get_args(GNormalizers)

# --- normalisers' statistics (rp1.core.normalizer, rp1.dynamics.refreshes) --------------------------

Statistics = Literal["masked", "eager"]
"""How a run computes statistics over data whose row count changes (the ``statistics`` key): over
the data padded to a size bucket with the count traced, compiled once per bucket (``masked``), or
over the data as it is, compiled per row count (``eager``, rp1 before config schema 10)."""
MASKED: Statistics = "masked"
EAGER: Statistics = "eager"
STATISTICS: tuple[Statistics, ...] = typing.get_args(Statistics)
"""The values of ``statistics``; each agent maps them to its own refreshes."""
