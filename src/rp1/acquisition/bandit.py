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
appendix; ``ĝ = 0`` while there is none), or with ``baseline="including"`` the mean of the last
``window`` feedbacks including the current one (the authors' code).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

ARMS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)  # algorithm.md §6: the λ values
LEARNING_RATE = 0.2
EPS = 0.2  # share of uniform exploration
DECAY = 0.9  # of the scores, per update
WINDOW = 5  # feedbacks in the running mean
WEIGHTINGS = ("probability", "exp-score")
WEIGHTING = WEIGHTINGS[0]
BASELINES = ("previous", "including")  # what ĝ's running mean covers: the paper's, the reference's
BASELINE = BASELINES[0]


class ExpWeights:
    """EXP3-style bandit over fixed arms with ε-uniform mixing and score decay.

    ``probabilities = (1 − ε)·softmax(scores) + ε/k``. ``update(feedback, norm)`` normalises the
    feedback against a running mean, ``ĝ = (feedback − mean) / norm``, and updates only the arm
    last played. The mean (``baseline``):

    - ``"previous"`` (algorithm.md §6, the paper): of the up to ``window`` feedbacks before this one;
      ``ĝ = 0`` when there is none;
    - ``"including"`` (the authors' code): of the last ``window`` feedbacks, this one included.

    The arm's credit (``weighting``):

    - ``weighting="probability"`` (algorithm.md §6): ``score ← decay·score + lr·ĝ / p``, with ``p`` the arm's
      probability when it was drawn, or 1 for an arm played by :meth:`choose` (not drawn);
    - ``weighting="exp-score"`` (the authors' reference code): ``score ← decay·score``, then
      ``score ← score + lr·ĝ / max(exp(score), 1e-4)`` with the decayed score.

    ``seed`` is anything :func:`numpy.random.default_rng` takes (an int, a ``SeedSequence``, or a
    ``Generator``, used as it is).
    """

    def __init__(
        self,
        arms: Sequence[float] = ARMS,
        lr: float = LEARNING_RATE,
        eps: float = EPS,
        decay: float = DECAY,
        seed: int | np.random.SeedSequence | np.random.Generator | None = None,
        window: int = WINDOW,
        weighting: str = WEIGHTING,
        baseline: str = BASELINE,
    ):
        if len(arms) < 1:
            raise ValueError(f"arms must hold at least one value, got {tuple(arms)}")
        for name, value in (("eps", eps), ("decay", decay)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        for name, choice, allowed in (
            ("weighting", weighting, WEIGHTINGS),
            ("baseline", baseline, BASELINES),
        ):
            if choice not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {choice!r}")
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
        """:attr:`probabilities` by metrics column, ``p_lambda_<arm>`` with the arm's λ as Python
        writes the float (``p_lambda_0.0``, ``p_lambda_0.1``, …)."""
        return {
            f"p_lambda_{arm!r}": float(p)
            for arm, p in zip(self.arms, self.probabilities, strict=True)
        }

    def sample(self) -> float:
        """Draw an arm (ε uniformly, else by softmax of the scores) and return its λ."""
        return self._play(int(self.rng.choice(len(self.arms), p=self.probabilities)))

    def choose(self, arm_value: float) -> float:
        """Play a given arm without drawing (λ = 0 in the first outer iteration); it was played
        with certainty, so its credit is divided by p = 1."""
        return self._play(self.arms.index(float(arm_value)), 1.0)

    def _play(self, index: int, prob: float | None = None) -> float:
        self.played = index
        self.played_prob = float(self.probabilities[index]) if prob is None else prob
        return self.arms[index]

    def update(self, feedback: float, norm: float = 1.0) -> float:
        """Record ``feedback``; credit the arm last played, if any. Returns the normalised ``ĝ``."""
        feedback = float(feedback)
        if self.baseline == "including":
            self.history.append(feedback)
        g_hat = (feedback - float(np.mean(self.history))) / float(norm) if self.history else 0.0
        if self.baseline == "previous":
            self.history.append(feedback)
        if self.played is not None:
            i = self.played
            decayed = self.decay * self.scores[i]
            assert self.played_prob is not None  # set with played (_play)
            weight = (
                self.played_prob if self.weighting == "probability" else max(np.exp(decayed), 1e-4)
            )
            self.scores[i] = decayed + self.lr * g_hat / weight
            self.played = self.played_prob = None
        return g_hat

    def state_dict(self) -> dict:
        """Everything needed to continue identically (JSON-serialisable)."""
        return {
            "scores": self.scores.tolist(),
            "history": list(self.history),
            "rng": self.rng.bit_generator.state,
            "played": self.played,
            "played_prob": self.played_prob,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict`."""
        self.scores = np.asarray(state["scores"], np.float64)
        self.history.clear()
        self.history.extend(state["history"])
        self.rng.bit_generator.state = state["rng"]
        self.played, self.played_prob = state["played"], state["played_prob"]
