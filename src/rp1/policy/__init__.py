"""The policy: actor-critic networks and PPO (algorithm.md §4). Training it inside the model is
:func:`rp1.imagination.train_policy`."""

from rp1.policy.networks import (
    Policy,
    act_mean,
    act_sample,
    device_actor,
    gaussian_entropy,
    gaussian_log_prob,
    host_actor,
    policy_init,
    value,
)
from rp1.policy.ppo import (
    PPOBatch,
    PPOMetrics,
    PPOSettings,
    discounted_returns,
    explained_variance,
    make_batch,
    make_policy_optimizer,
    normalize_returns,
    ppo_loss,
    ppo_summary,
    ppo_update,
)

__all__ = [
    "PPOBatch",
    "PPOMetrics",
    "PPOSettings",
    "Policy",
    "act_mean",
    "act_sample",
    "device_actor",
    "discounted_returns",
    "explained_variance",
    "gaussian_entropy",
    "gaussian_log_prob",
    "host_actor",
    "make_batch",
    "make_policy_optimizer",
    "normalize_returns",
    "policy_init",
    "ppo_loss",
    "ppo_summary",
    "ppo_update",
    "value",
]
