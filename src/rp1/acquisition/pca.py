"""The PCA residual of new data against old data, and the phase early-stopping rule (algorithm.md §5).

A new episode adds nothing new when its rows ``[s, a]`` lie in the principal subspace of the rows
collected earlier in the phase; then collecting more of the same is wasted samples.

Example::

    stopper = PhaseEarlyStop(alpha=5e-4)
    for episode_rows in episodes:            # each [T, obs_dim + act_dim]
        if stopper.add(episode_rows):
            break                            # the last episode was nothing new
"""

from __future__ import annotations

import numpy as np

from rp1.config.defaults import SHARE


def principal_basis(old_rows: np.ndarray, share: float = SHARE) -> tuple[np.ndarray, float, float]:
    """Top left singular vectors of the standardised old rows, transposed.

    ``old_rows [n, d]`` are standardised with the scalar mean and std of all their entries; ``U``
    keeps the ``k`` smallest number of singular vectors whose singular values make up at least
    ``share`` of their sum. Returns ``(U [d, k], mean, std)``.
    """
    old = np.asarray(old_rows, np.float64)
    mean = float(old.mean())
    std = float(old.std()) or 1.0
    u, s, _ = np.linalg.svd(((old - mean) / std).T, full_matrices=False)
    total = s.sum()
    if total <= 0:
        return u[:, :0], mean, std
    k = int(np.searchsorted(np.cumsum(s) / total, share - 1e-12) + 1)
    return u[:, : min(k, len(s))], mean, std


def pca_residual(old_rows: np.ndarray, new_rows: np.ndarray, share: float = SHARE) -> float:
    """Share of the new rows' energy outside the old rows' principal subspace (algorithm.md §5).

    `r = (tr(VᵀV) − tr(P VᵀV P)) / tr(VᵀV)` with `P = U Uᵀ`, `U [d, k]` the top left singular
    vectors of the old rows standardised with the scalar mean and std of all their entries,
    keeping the fewest whose singular values make up `share` of their sum, and `V [m, d]` the
    new rows standardised with the same mean and std.

    Args:
        old_rows: The rows `[s, a]` seen before, `[n, d]`.
        new_rows: The new rows, `[m, d]`.
        share: The share of the singular values the principal subspace keeps; default 0.99.

    Returns:
        `r` in [0, 1]: 0, nothing new; 1, entirely new directions.
    """
    basis, mean, std = principal_basis(old_rows, share)
    v = (np.asarray(new_rows, np.float64) - mean) / std
    energy = float((v * v).sum())
    if energy <= 0:
        return 0.0
    inside = float(((v @ basis) ** 2).sum())
    return float(np.clip((energy - inside) / energy, 0.0, 1.0))


class PhaseEarlyStop:
    """Algorithm 2's rule: stop a phase once an episode's residual falls below `alpha`.

    `add(rows)` takes one episode's `[T, d]` rows and returns whether to stop now. The first
    episode never stops the phase; `alpha <= 0` never stops (early stopping off).

    Args:
        alpha: The threshold α of the residual ([`pca_residual`][rp1.acquisition.pca.pca_residual]);
            the paper's is 5e-4.
        share: As for [`pca_residual`][rp1.acquisition.pca.pca_residual]; default 0.99.
    """

    def __init__(self, alpha: float, share: float = SHARE):
        self.alpha = alpha
        self.share = share
        self.rows: list[np.ndarray] = []
        self.residuals: list[float] = []

    def add(self, rows: np.ndarray) -> bool:
        """Record an episode and say whether the phase stops.

        Args:
            rows: The episode's rows `[s, a]`, `[T, d]`.

        Returns:
            Whether its residual against the phase's earlier episodes is below `alpha`.
        """
        stop = False
        if self.rows and self.alpha > 0:
            residual = pca_residual(np.concatenate(self.rows), rows, self.share)
            self.residuals.append(residual)
            stop = residual < self.alpha
        self.rows.append(np.asarray(rows))
        return stop

    @property
    def last_residual(self) -> float | None:
        """The most recent residual, or `None` if none was computed."""
        return self.residuals[-1] if self.residuals else None
