"""Would compiling a run's initial networks as one program keep them bit for bit?

    python benchmarks/init_in_one_program.py

A run's start draws its ensemble (and learned heads, where it has them), its policy and both
optimisers' states op by op, each operation compiled alone (about forty small programs of a
run's first seconds). This draws them both ways — op by op, and as one ``jax.jit`` program — for
task sizes of the paper's tasks and a few network sizes and seeds, and prints the cases whose
arrays differ in any byte. Any difference means one program would be a change of behaviour (new
runs would not repeat the runs made before it), not a free speed-up.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np

from rp1.dynamics import ensemble_init, with_heads
from rp1.dynamics.fit import init_model_opt_state
from rp1.policy.networks import policy_init
from rp1.policy.ppo import make_policy_optimizer

TASK_SIZES = [(17, 6), (27, 8), (8, 2), (11, 3), (3, 1)]  # (obs_dim, act_dim)
MODELS = [((200, 200), 5), ((200, 200, 200, 200), 5), ((16, 16), 3)]  # (hidden, members)
SEEDS = [0, 1, 12345]


def networks(key, obs_dim, act_dim, members, hidden, heads):
    """The initial networks and optimiser states as a run's start draws them."""
    key, k_model, k_policy = jax.random.split(key, 3)
    model = ensemble_init(k_model, obs_dim, act_dim, members, hidden)
    if heads:
        model = with_heads(model, jax.random.fold_in(k_model, 1))
    policy = policy_init(k_policy, obs_dim, act_dim)
    return key, model, init_model_opt_state(model), policy, make_policy_optimizer().init(policy)


def same_bytes(a, b) -> bool:
    leaves_a, leaves_b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(leaves_a) == len(leaves_b) and all(
        np.asarray(x).dtype == np.asarray(y).dtype
        and np.asarray(x).tobytes() == np.asarray(y).tobytes()
        for x, y in zip(leaves_a, leaves_b, strict=True)
    )


def main() -> None:
    one_program = jax.jit(networks, static_argnums=(1, 2, 3, 4, 5))
    cases = list(itertools.product(TASK_SIZES, MODELS, (False, True), SEEDS))
    differing = 0
    for (obs_dim, act_dim), (hidden, members), heads, seed in cases:
        args = (obs_dim, act_dim, members, hidden, heads)
        key = jax.random.PRNGKey(seed)
        if not same_bytes(networks(key, *args), one_program(key, *args)):
            differing += 1
            print(
                f"differ: obs {obs_dim}, act {act_dim}, hidden {hidden}, M {members}, heads {heads}, seed {seed}"
            )
    print(f"{differing} of {len(cases)} cases differ in some byte ({jax.devices()[0].device_kind})")


if __name__ == "__main__":
    main()
