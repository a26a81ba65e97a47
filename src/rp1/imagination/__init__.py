"""Imagination: rollouts of the policy in the ensemble with the exploration bonus
(:mod:`~rp1.imagination.rollouts`), and training the policy on them with ME-TRPO's stop rule
(:mod:`~rp1.imagination.train`) (SPEC §4). Built on ``rp1.dynamics`` and ``rp1.policy``."""

from rp1.imagination.rollouts import (
    BONUSES,
    ImagineStats,
    RolloutState,
    Trajectory,
    advance,
    bonus_function,
    clip_action,
    imagine,
    member_count,
    member_returns,
    outcomes,
    predict_each_member,
    reward_variance_bonus,
    state_variance_bonus,
)
from rp1.imagination.train import (
    StepMetrics,
    StopRule,
    TrainInfo,
    TrainState,
    improved,
    restore_best,
    stop_rule_init,
    stop_rule_update,
    train_policy,
    train_step,
)

__all__ = [
    "BONUSES",
    "ImagineStats",
    "RolloutState",
    "StepMetrics",
    "StopRule",
    "TrainInfo",
    "TrainState",
    "Trajectory",
    "advance",
    "bonus_function",
    "clip_action",
    "imagine",
    "improved",
    "member_count",
    "member_returns",
    "outcomes",
    "predict_each_member",
    "restore_best",
    "reward_variance_bonus",
    "state_variance_bonus",
    "stop_rule_init",
    "stop_rule_update",
    "train_policy",
    "train_step",
]
