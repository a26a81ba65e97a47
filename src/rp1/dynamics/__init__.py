"""The world model: the ensemble (with optional learned reward / termination heads),
its data store and its fitting (algorithm.md §2–§3)."""

from rp1.dynamics.ensemble import (
    Ensemble,
    ensemble_init,
    model_inputs,
    next_normalized_states,
    predict_all,
    predict_normalized_deltas,
)
from rp1.dynamics.fit import (
    FitResult,
    FitSettings,
    FitState,
    NonFiniteLossError,
    fit,
    init_model_opt_state,
    make_model_optimizer,
    model_weights,
    refresh_delta_normalizer,
    update_input_normalizers,
)
from rp1.dynamics.heads import (
    head_row_errors,
    predict_heads,
    refresh_reward_normalizer,
    with_heads,
)
from rp1.dynamics.losses import member_losses, model_error
from rp1.dynamics.parts import ModelParts
from rp1.dynamics.store import (
    MAX_TRAIN_SAMPLES,
    Dataset,
    TransitionStore,
    bucket_capacity,
    padded_dataset,
    transitions_dataset,
)

__all__ = [
    "MAX_TRAIN_SAMPLES",
    "Dataset",
    "Ensemble",
    "FitResult",
    "FitSettings",
    "FitState",
    "ModelParts",
    "NonFiniteLossError",
    "TransitionStore",
    "bucket_capacity",
    "ensemble_init",
    "fit",
    "head_row_errors",
    "init_model_opt_state",
    "make_model_optimizer",
    "member_losses",
    "model_error",
    "model_inputs",
    "model_weights",
    "next_normalized_states",
    "padded_dataset",
    "predict_all",
    "predict_heads",
    "predict_normalized_deltas",
    "refresh_delta_normalizer",
    "refresh_reward_normalizer",
    "transitions_dataset",
    "update_input_normalizers",
    "with_heads",
]
