"""A long run's memory stays flat. A new run (statistics=masked) compiles its normalisers' refresh
once per size bucket; a run of statistics=eager runs eager operations on data whose size changes
every iteration, which compile per size, and rp1 releases those executables
(rp1.core.executables.releasing) without changing a bit of what they compute."""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np
import pytest

from rp1.core.executables import compilations, held, releasing


def rss_mib() -> float:
    """This process's resident memory in MiB (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def statistics(x: np.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Eager operations on ``x [N, d]`` as the normalisers run them: each compiles per ``N``."""
    centred = jnp.clip((x - jnp.ones(x.shape[1])) / 2.0, -3.0, 3.0)
    return centred.mean(0), centred.var(0)


def bits(arrays: tuple[jnp.ndarray, ...]) -> list[bytes]:
    return [np.asarray(a).tobytes() for a in arrays]


def test_releasing_computes_the_same_bits_and_keeps_no_executable():
    rng = np.random.default_rng(0)
    released = releasing(statistics)
    for rows in (1237, 1238, 2049):  # sizes nothing else in the test session uses
        x = rng.normal(size=(rows, 7)).astype(np.float32)
        before, compiled = held(), compilations()
        ours = released(x)
        assert compilations() > compiled  # it compiled for this size...
        assert held() <= before  # ...and kept none of it
        assert bits(ours) == bits(statistics(x))  # the plain call, which keeps its executables


def test_releasing_compiles_nothing_when_nothing_is_new():
    x = np.ones((1500, 3), np.float32)
    released = releasing(statistics)
    statistics(x)  # compiled and kept by the plain call
    before, compiled = held(), compilations()
    released(x)
    assert (held(), compilations()) == (before, compiled)


@pytest.mark.slow
def test_a_long_run_keeps_its_memory_and_executables_flat():
    """60 tiny iterations of a new run (the data grows by ~175 rows each): after warm-up, resident
    memory and the executables held stop growing. Eager statistics without the release kept six
    more executables every iteration, ~8 MiB; the bound is the measured cost of one kept
    executable. The second half's 30 iterations show that growth as 120 did (with
    ``statistics=eager`` and nothing released, the executables held grow by 176)."""
    from rp1.config import resolve
    from rp1.train import make_agent

    cfg = resolve(
        "halfcheetah-quick",
        seed=0,
        budget=10**6,
        overrides={
            "horizon": "50",
            "collect.phase_cap": "200",
            "model.hidden": "16,16",
            "model.max_epochs": "3",
            "policy.batch_steps": "400",
            "policy.max_updates": "2",
            "eval_episodes": "1",
        },
    )
    agent = make_agent(cfg)
    state = agent.initial_state()
    memory, kept = [], []
    try:
        for _ in range(60):
            state, _ = agent.step(state)
            memory.append(rss_mib())
            kept.append(held())
    finally:
        agent.close()
    # what one executable kept for a one-off size costs here: 20 kept on purpose
    start = rss_mib()
    for rows in range(3001, 3021):
        statistics(np.ones((rows, 17), np.float32))
    per_executable = (rss_mib() - start) / (20 * 5)  # subtract, divide, clip, mean, var
    half = len(memory) // 2
    # bucket changes of the fit (at most two in the second half) compile a few functions each
    assert kept[-1] - kept[half] <= 12, kept[half:]
    growth = np.diff(memory[half:])
    assert np.median(growth) < per_executable, (np.median(growth), per_executable, memory[half:])
