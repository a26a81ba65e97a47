"""The world model: normalisers, the ensemble, its data store and its fitting (SPEC §2–§3)."""

from rp1.dynamics.ensemble import (
    Ensemble,
    ensemble_init,
    model_inputs,
    next_normalized_states,
    predict_all,
    predict_member,
    predict_normalized_deltas,
    predict_random_member,
)
from rp1.dynamics.fit import (
    FitResult,
    NonFiniteLossError,
    fit,
    init_model_opt_state,
    make_model_optimizer,
    refresh_delta_normalizer,
    update_input_normalizers,
)
from rp1.dynamics.losses import member_losses, model_error
from rp1.dynamics.normalizer import (
    Normalizer,
    denormalize,
    normalize,
    normalizer_fit,
    normalizer_init,
    normalizer_update,
)
from rp1.dynamics.store import (
    MAX_TRAIN_SAMPLES,
    Dataset,
    Transitions,
    TransitionStore,
    bucket_capacity,
    padded_dataset,
)

__all__ = [
    "MAX_TRAIN_SAMPLES",
    "Dataset",
    "Ensemble",
    "FitResult",
    "NonFiniteLossError",
    "Normalizer",
    "TransitionStore",
    "Transitions",
    "bucket_capacity",
    "denormalize",
    "ensemble_init",
    "fit",
    "init_model_opt_state",
    "make_model_optimizer",
    "member_losses",
    "model_error",
    "model_inputs",
    "next_normalized_states",
    "normalize",
    "normalizer_fit",
    "normalizer_init",
    "normalizer_update",
    "padded_dataset",
    "predict_all",
    "predict_member",
    "predict_normalized_deltas",
    "predict_random_member",
    "refresh_delta_normalizer",
    "update_input_normalizers",
]
