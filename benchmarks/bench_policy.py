"""Time the policy's inner loops at paper scale (algorithm.md §4) on HalfCheetah shapes.

Pieces, each one compiled call, timed after warm-up (``block_until_ready``, median of repeats):

- ``imagine``: 500 rollouts × 100 steps through 5 members of [1024, 1024] (50,000 imagined steps);
- ``ppo_update``: one update on that batch (10 full-batch Adam steps);
- ``imagine+update``: both in one jitted function;
- ``member_returns``: the stop rule's check (the deterministic policy in each member, 100 steps);
- ``train_step``: one whole update as ``train_policy`` runs it (imagine + update + check).

``--heads``: the model's learned reward and termination heads supply ``r_j`` and termination
(``model.reward=learned``, ``model.done=learned``) instead of HalfCheetah's exact functions.

Usage::

    python benchmarks/bench_policy.py [--repeats 5] [--rollouts 500] [--hidden 1024] [--heads]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import jax
import jax.numpy as jnp
from timing import report

from rp1 import envs
from rp1.dynamics import ensemble_init, with_heads
from rp1.imagination import (
    PolicyTraining,
    TrainState,
    imagine,
    make_imagination,
    make_train_step,
    member_returns,
    stop_rule_init,
)
from rp1.policy import make_policy_optimizer, policy_init, ppo_update

TRAIN_STEP = "train_step (imagine+update+check)"
"""The piece that is one whole PPO update of ``train_policy``."""


def policy_pieces(
    rollouts: int, hidden: int, members: int, *, heads: bool = False
) -> tuple[dict[str, Callable], str]:
    """The pieces (module docstring) on HalfCheetah with ``rollouts`` start states and ``members``
    members of ``[hidden, hidden]``, ready to time, and the workload in words."""
    source = "learned" if heads else "known"
    _, task = envs.make("halfcheetah")
    horizon = task.horizon
    k_model, k_policy, k_obs, k_run = jax.random.split(jax.random.key(0), 4)
    model = ensemble_init(k_model, task.obs_dim, task.act_dim, members, (hidden, hidden))
    if heads:
        model = with_heads(model, jax.random.fold_in(k_model, 1))
    policy = policy_init(k_policy, task.obs_dim, task.act_dim)
    opt_state = make_policy_optimizer().init(policy)
    start = 0.1 * jax.random.normal(k_obs, (rollouts, task.obs_dim))
    lam = jnp.float32(0.2)
    imagination = make_imagination(task, reward=source, done=source)
    # first_check 0: the stop rule's check runs in every update, as from update 11 on in a run
    step = make_train_step(
        PolicyTraining(imagination, batch_steps=rollouts * horizon, first_check=0)
    )

    @jax.jit
    def imagine_and_update(policy, opt_state, key):
        traj, _ = imagine(imagination, model, policy, start, key, lam)
        return ppo_update(policy, opt_state, traj, model.obs_norm)

    traj, _ = imagine(imagination, model, policy, start, k_run, lam)
    state = TrainState(
        policy, opt_state, stop_rule_init(policy, members), k_run, jnp.zeros((), jnp.int32)
    )
    pieces = {
        "imagine": lambda: imagine(imagination, model, policy, start, k_run, lam),
        "ppo_update": lambda: ppo_update(policy, opt_state, traj, model.obs_norm),
        "imagine+update": lambda: imagine_and_update(policy, opt_state, k_run),
        "member_returns": lambda: member_returns(imagination, model, policy, start),
        TRAIN_STEP: lambda: step(state, model, start, lam),
    }
    workload = (
        f"{rollouts} rollouts × {horizon} steps, {members} members of "
        f"[{hidden}, {hidden}], reward and termination {source}"
    )
    return pieces, workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rollouts", type=int, default=500)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--heads", action="store_true", help="learned reward and termination")
    args = parser.parse_args()
    pieces, workload = policy_pieces(args.rollouts, args.hidden, args.members, heads=args.heads)
    report(pieces, args.repeats, workload)


if __name__ == "__main__":
    main()
