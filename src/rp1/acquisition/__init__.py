"""Active data acquisition: the PCA early stopper and the λ bandit, usable on their own."""

from rp1.acquisition.bandit import ExpWeights
from rp1.acquisition.pca import PhaseEarlyStop, pca_residual, principal_basis

__all__ = ["ExpWeights", "PhaseEarlyStop", "pca_residual", "principal_basis"]
