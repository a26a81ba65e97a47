"""The world model: normalisers, the ensemble, its data store and its fitting (SPEC §2–§3)."""

from rp1.dynamics.ensemble import (
    Ensemble,
    ensemble_init,
    predict_all,
    predict_member,
    predict_random_member,
)
from rp1.dynamics.normalizer import (
    Normalizer,
    denormalize,
    normalize,
    normalizer_fit,
    normalizer_init,
    normalizer_update,
)

__all__ = [
    "Ensemble",
    "Normalizer",
    "denormalize",
    "ensemble_init",
    "normalize",
    "normalizer_fit",
    "normalizer_init",
    "normalizer_update",
    "predict_all",
    "predict_member",
    "predict_random_member",
]
