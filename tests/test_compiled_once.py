"""Nothing is compiled after warm-up (``statistics=masked``, new runs): a model-based iteration
compiles only when its data crosses into a new size bucket (rp1.dynamics.store.bucket_capacity),
a model-free update never. Counted with JAX's compilation events (rp1.core.executables)."""

from __future__ import annotations

import pytest

from rp1.config import resolve
from rp1.core.executables import compilations
from rp1.dynamics.store import bucket_capacity
from rp1.train import make_agent

TINY = {
    "horizon": "50",
    "collect.phase_cap": "200",
    "model.hidden": "8,8",
    "model.members": "2",
    "model.max_epochs": "4",
    "model.batch_size": "64",
    "policy.hidden": "8,8",
    "policy.batch_steps": "100",
    "policy.max_updates": "3",
    "policy.first_check": "2",
    "eval_episodes": "1",
    "eval.every": "500",
}


@pytest.mark.slow
def test_an_iteration_compiles_only_when_its_data_crosses_into_a_new_bucket():
    """A run's sizes in each iteration: the fit's training and validation sets (from the data
    stored before it), all stored data and the phase's rows (after it). Iterations 0 and 1 warm
    up (the first phase, the first fit and policy training); from then on an iteration that
    brings no new bucket compiles nothing, and the run crosses 1,024 stored rows on the way."""
    cfg = resolve("halfcheetah-rp1", seed=0, budget=1500, overrides=TINY)
    agent = make_agent(cfg)
    state, seen, log = agent.initial_state(), set(), []
    try:
        while state.samples < cfg.budget:
            store = state.store
            sizes = {("train", store.n_train), ("val", store.n_val)} if state.iteration else set()
            before = compilations()
            state, row = agent.step(state)
            store = state.store
            # the phase's states, one more per episode (its final state), and its actions
            sizes |= {("stored", store.n_train + store.n_val), ("phase", row["phase_samples"])}
            buckets = {(what, bucket_capacity(n)) for what, n in sizes}
            log.append((row["iteration"], compilations() - before, sorted(buckets - seen)))
            seen |= buckets
    finally:
        agent.close()
    warm = [(iteration, compiled, new) for iteration, compiled, new in log if iteration >= 2]
    assert all(compiled == 0 for _, compiled, new in warm if not new), log
    assert sum(not new for _, _, new in warm) >= 3 and ("stored", 2048) in seen, log


@pytest.mark.slow
def test_a_model_free_update_compiles_nothing_after_the_first():
    """Its batches keep their shape (whole episodes up to the horizon, the valid steps masked), so
    folding them into the state normaliser compiles once."""
    cfg = resolve(
        "hopper-modelfree",
        seed=0,
        budget=600,
        overrides={
            "horizon": "50",
            "policy.hidden": "8,8",
            "policy.batch_steps": "100",
            "modelfree.envs": "2",
            "modelfree.eval_every": "1",
            "eval_episodes": "1",
            "eval.every": "0",
        },
    )
    agent = make_agent(cfg)
    state, compiled = agent.initial_state(), []
    try:
        while state.samples < cfg.budget:
            before = compilations()
            state, _ = agent.step(state)
            compiled.append(compilations() - before)
    finally:
        agent.close()
    assert len(compiled) >= 4 and compiled[1:] == [0] * (len(compiled) - 1), compiled
