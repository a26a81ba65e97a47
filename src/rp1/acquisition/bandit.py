"""Exponential weights over λ values, driven by how much new data surprised the model (algorithm.md §6).

Example::

    bandit = ExpWeights(arms=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5), seed=0)
    lam = bandit.choose(0.0)          # the first outer iteration uses λ = 0 (credited with p = 1)
    ...                               # train with lam, collect data, compute G, fit -> l_val
    bandit.update(g, norm=l_val)      # credits the arm just played
    lam = bandit.sample()

``bandit.update(g0)`` before any arm is played only records ``g0`` in the window (the reference's
treatment of the initial random phase; rp1's agent leaves it out by default, algorithm.md §6).

``ĝ`` subtracts from the feedback the mean of the up to ``window`` *previous* feedbacks (the paper's
appendix; ``ĝ = 0`` while there is none), or with the baseline ``"including"`` the mean of the last
``window`` feedbacks including the current one (the authors' code).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np

from rp1.config.defaults import (  # the defaults of ExpWeights
    ARMS,
    BASELINE,
    DECAY,
    EPS,
    WEIGHTING,
    WINDOW,
    Baseline,
    FirstFeedback,
    GNormalizers,
    Weighting,
)
from rp1.config.defaults import BANDIT_LEARNING_RATE as LEARNING_RATE


def by_probability(played_prob: float, decayed: float) -> float:
    """Weighting ``"probability"`` (algorithm.md §6): the played arm's probability ``p``."""
    return played_prob


def by_exp_score(played_prob: float, decayed: float) -> float:
    """Weighting ``"exp-score"`` (the authors' code): ``max(exp(decayed score), 1e-4)``."""
    return max(np.exp(decayed), 1e-4)


Divisor = Callable[[float, float], float]
"""What the played arm's credit is divided by, from its probability and its decayed score."""
WEIGHTINGS: dict[Weighting, Divisor] = {"probability": by_probability, "exp-score": by_exp_score}
"""The divisor each value of ``lam.weighting`` selects."""


def _mean(history: deque[float]) -> float | None:
    return float(np.mean(history)) if history else None


def previous_mean(history: deque[float], feedback: float) -> float | None:
    """Baseline ``"previous"`` (the paper): the mean of ``history`` (``None`` if empty), then
    ``feedback`` recorded in it."""
    mean = _mean(history)
    history.append(feedback)
    return mean


def including_mean(history: deque[float], feedback: float) -> float | None:
    """Baseline ``"including"`` (the authors' code): ``feedback`` recorded in ``history``, then its
    mean (``None`` if empty)."""
    history.append(feedback)
    return _mean(history)


RunningMean = Callable[[deque[float], float], float | None]
"""ĝ's baseline: records a feedback in the window and returns the mean to subtract (``None``:
``ĝ = 0``)."""
BASELINES: dict[Baseline, RunningMean] = {"previous": previous_mean, "including": including_mean}
"""The running mean each value of ``lam.baseline`` selects."""


class BanditWeights(NamedTuple):
    """What an [`ExpWeights`][rp1.acquisition.bandit.ExpWeights] learns, as arrays of fixed shapes
    (part of a run's arrays, `rp1.agents.model_based.RunArrays`): `scores [k]` (float64),
    `history [window]` (float64, the feedbacks in the window, oldest first, its first `seen` entries
    valid), `seen []` (int64), `played []` (int64, the arm last played and not yet credited, −1:
    none) and `played_prob []` (float64, its probability then; 0 when none). NumPy arrays: the
    bandit's arithmetic is float64, on the host."""

    scores: np.ndarray
    history: np.ndarray
    seen: np.ndarray
    played: np.ndarray
    played_prob: np.ndarray

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], window: int) -> BanditWeights:
        """The weights of an :meth:`ExpWeights.state_dict` (its ``rng`` aside) of a bandit of
        ``window`` feedbacks."""
        history = np.zeros(window)
        seen = len(state["history"])
        history[:seen] = state["history"]
        played, prob = state["played"], state["played_prob"]
        return cls(
            np.asarray(state["scores"], np.float64),
            history,
            np.asarray(seen, np.int64),
            np.asarray(-1 if played is None else played, np.int64),
            np.asarray(0.0 if prob is None else prob, np.float64),
        )


class ExpWeights:
    """EXP3-style bandit over fixed arms with ε-uniform mixing and score decay (algorithm.md §6).

    `probabilities = (1 − ε)·softmax(scores) + ε/k`. `update(feedback, norm)` normalises the
    feedback against a running mean, `ĝ = (feedback − mean) / norm`, and updates only the arm
    last played. The mean (`baseline`):

    - `previous_mean` (algorithm.md §6, the paper): of the up to `window` feedbacks before this
      one; `ĝ = 0` when there is none;
    - `including_mean` (the authors' code): of the last `window` feedbacks, this one included.

    The arm's credit (`weighting`):

    - `by_probability` (algorithm.md §6): `score ← decay·score + lr·ĝ / p`, with `p` the arm's
      probability when it was drawn, or 1 for an arm played by `choose` (not drawn);
    - `by_exp_score` (the authors' reference code): `score ← decay·score`, then
      `score ← score + lr·ĝ / max(exp(score), 1e-4)` with the decayed score.

    The defaults are the paper's; the config's keys `lam.*` choose the others (their ranges are
    the config's).

    Args:
        arms: The λ values, at least one; default `(0.0, 0.1, 0.2, 0.3, 0.4, 0.5)`.
        lr: The learning rate; default 0.2.
        eps: The share of uniform exploration ε; default 0.2.
        decay: The scores' decay per update; default 0.9.
        seed: Anything `numpy.random.default_rng` takes (an int, a `SeedSequence`, or a
            `Generator`, used as it is).
        window: Feedbacks in the running mean; default 5.
        weighting: What the played arm's credit is divided by; default `by_probability`.
        baseline: ĝ's running mean; default `previous_mean`.

    Raises:
        ValueError: If `arms` is empty.
    """

    def __init__(
        self,
        arms: Sequence[float] = ARMS,
        lr: float = LEARNING_RATE,
        eps: float = EPS,
        decay: float = DECAY,
        seed: int | np.random.SeedSequence | np.random.Generator | None = None,
        window: int = WINDOW,
        weighting: Divisor = WEIGHTINGS[WEIGHTING],
        baseline: RunningMean = BASELINES[BASELINE],
    ):
        if len(arms) < 1:
            raise ValueError(f"arms must hold at least one value, got {tuple(arms)}")
        self.arms = tuple(float(a) for a in arms)
        self.lr, self.eps, self.decay, self.weighting, self.baseline = (
            lr,
            eps,
            decay,
            weighting,
            baseline,
        )
        self.scores = np.zeros(len(self.arms))
        self.history: deque[float] = deque(maxlen=window)
        self.rng = np.random.default_rng(seed)
        self.played: int | None = None
        self.played_prob: float | None = None

    @property
    def probabilities(self) -> np.ndarray:
        """Sampling probability of every arm, shape ``[k]``, summing to 1."""
        z = np.exp(self.scores - self.scores.max())
        return (1.0 - self.eps) * z / z.sum() + self.eps / len(self.arms)

    def metrics(self) -> dict[str, float]:
        """The arms' probabilities by `metrics.csv` column.

        Returns:
            `{"p_lambda_<arm>": p}`, the arm's λ as Python writes the float (`p_lambda_0.0`,
                `p_lambda_0.1`, …).
        """
        return {
            f"p_lambda_{arm!r}": float(p)
            for arm, p in zip(self.arms, self.probabilities, strict=True)
        }

    def sample(self) -> float:
        """Draw an arm, ε uniformly, else by softmax of the scores.

        Returns:
            The arm's λ.
        """
        return self._play(int(self.rng.choice(len(self.arms), p=self.probabilities)))

    def choose(self, arm_value: float) -> float:
        """Play a given arm without drawing (λ = 0 in the first outer iteration).

        It was played with certainty, so its credit is divided by p = 1.

        Args:
            arm_value: The arm's λ, one of the arms.

        Returns:
            The arm's λ.

        Raises:
            ValueError: If it is not one of the arms.
        """
        return self._play(self.arms.index(float(arm_value)), 1.0)

    def _play(self, index: int, prob: float | None = None) -> float:
        self.played = index
        self.played_prob = float(self.probabilities[index]) if prob is None else prob
        return self.arms[index]

    def update(self, feedback: float, norm: float = 1.0) -> float:
        """Record a feedback in the window; credit the arm last played, if any.

        Args:
            feedback: The feedback G of the data the played arm's policy collected.
            norm: What ĝ is divided by (rp1: the model's validation loss).

        Returns:
            The normalised feedback ĝ.
        """
        feedback = float(feedback)
        mean = self.baseline(self.history, feedback)
        g_hat = (feedback - mean) / float(norm) if mean is not None else 0.0
        if self.played is not None:
            i = self.played
            decayed = self.decay * self.scores[i]
            assert self.played_prob is not None  # set with played (_play)
            self.scores[i] = decayed + self.lr * g_hat / self.weighting(self.played_prob, decayed)
            self.played = self.played_prob = None
        return g_hat

    @property
    def weights(self) -> BanditWeights:
        """What the bandit has learned, as fresh arrays.

        Returns:
            A `BanditWeights` of copies.
        """
        history = np.zeros(self.history.maxlen or 0)
        history[: len(self.history)] = list(self.history)
        return BanditWeights(
            self.scores.copy(),
            history,
            np.asarray(len(self.history), np.int64),
            np.asarray(-1 if self.played is None else self.played, np.int64),
            np.asarray(self.played_prob or 0.0, np.float64),
        )

    def load_weights(self, weights: BanditWeights) -> None:
        """Continue from `weights` (copied: the bandit never writes into them).

        Args:
            weights: What [`weights`][rp1.acquisition.bandit.ExpWeights.weights] returned.
        """
        self.scores = np.array(weights.scores, np.float64)
        self.history.clear()
        self.history.extend(float(g) for g in weights.history[: int(weights.seen)])
        played = int(weights.played)
        self.played = None if played < 0 else played
        self.played_prob = None if self.played is None else float(weights.played_prob)

    def state_dict(self) -> dict:
        """Everything needed to continue identically.

        Returns:
            A JSON-serialisable dict, for `load_state_dict`.
        """
        return {
            "scores": self.scores.tolist(),
            "history": list(self.history),
            "rng": self.rng.bit_generator.state,
            "played": self.played,
            "played_prob": self.played_prob,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from a saved state.

        Args:
            state: What `state_dict` returned.
        """
        self.scores = np.asarray(state["scores"], np.float64)
        self.history.clear()
        self.history.extend(state["history"])
        self.rng.bit_generator.state = state["rng"]
        self.played, self.played_prob = state["played"], state["played_prob"]


# --- the feedback G: which model measures it, and whether the initial phase's enters the window ---


def leave_out(bandit: ExpWeights, feedback: float) -> None:
    """First feedback ``"exclude"`` (algorithm.md §6): the initial random phase's G is left out."""


def record(bandit: ExpWeights, feedback: float) -> None:
    """First feedback ``"include"`` (the authors' code): the initial random phase's G enters the
    window (no arm played yet: nothing is credited)."""
    bandit.update(feedback)


FIRST_FEEDBACKS: dict[FirstFeedback, Callable[[ExpWeights, float], None]] = {
    "exclude": leave_out,
    "include": record,
}
"""What each value of ``lam.first_feedback`` does with the initial random phase's G."""

Model = TypeVar("Model")


def all_refreshed(inputs: Model, refreshed: Model) -> Model:
    """``"all"`` (algorithm.md §6): G measured with every normaliser refreshed."""
    return refreshed


def inputs_refreshed(inputs: Model, refreshed: Model) -> Model:
    """``"inputs"``: G measured with the input normalisers refreshed, the delta normaliser not yet."""
    return inputs


G_MODELS: dict[GNormalizers, Callable[[Model, Model], Model]] = {
    "all": all_refreshed,
    "inputs": inputs_refreshed,
}
"""The model G is measured with, of ``(inputs refreshed, all refreshed)``, for each value of
``lam.g_normalizers``."""
