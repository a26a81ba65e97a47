"""In-process round trip through the real msgpack checkpoint: a run that dies after a few
iterations and is resumed writes exactly the metrics of an uninterrupted run (every column but
the wall-clock ones), for a model-based and a model-free agent."""

from __future__ import annotations

import pytest

from helpers import TINY, Crash, crash_after_steps, metrics_without_timing
from rp1.config import resolve
from rp1.rundir.files import EVALUATIONS
from rp1.train import run_training

CASES = {
    # α = 0 keeps the number of iterations independent of the data: 4 phases of 300 samples
    "rp1": ("halfcheetah-rp1", 1200, {**TINY, "collect.alpha": "0", "eval.every": "200"}),
    "modelfree": (
        "halfcheetah-modelfree",
        3000,
        {**TINY, "policy.batch_steps": "500", "modelfree.envs": "5", "eval.every": "400"},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_resumed_run_equals_uninterrupted_run(case, tmp_path, monkeypatch):
    preset, budget, sets = CASES[case]
    cfg = resolve(preset, seed=3, budget=budget, overrides=sets)
    run_training(cfg, tmp_path / "reference", progress=False)

    crash_after_steps(monkeypatch, 2)
    with pytest.raises(Crash):
        run_training(cfg, tmp_path / "resumed", progress=False)
    monkeypatch.undo()
    assert len(metrics_without_timing(tmp_path / "resumed")) == 2
    run_training(cfg, tmp_path / "resumed", resume=True, progress=False)

    reference = metrics_without_timing(tmp_path / "reference")
    assert len(reference) > 2  # the crash came before the end
    assert metrics_without_timing(tmp_path / "resumed") == reference
    grid = (tmp_path / "reference" / EVALUATIONS).read_text()
    assert grid.count("\n") > 3  # the header and grid points both before and after the crash
    assert (tmp_path / "resumed" / EVALUATIONS).read_text() == grid


@pytest.mark.parametrize("case", list(CASES))
def test_agents_share_one_interface_and_checkpoint_layout(case):
    """Both agents are :class:`rp1.agents.protocol.Agent` s, their states :class:`~rp1.agents.protocol.RunState` s,
    and their checkpoints the one layout of :mod:`rp1.rundir.checkpoints`, with the JAX state whole."""
    import jax

    from rp1.agents.protocol import Agent, RunState
    from rp1.train import make_agent

    preset, _, sets = CASES[case]
    agent = make_agent(resolve(preset, seed=3, overrides=sets))
    try:
        assert isinstance(agent, Agent)
        state = agent.initial_state()
        assert isinstance(state, RunState)
        saved = agent.checkpoint(state)
        assert set(saved) == {"meta", "device", "host"}
        restored = agent.restore(saved)
        same = jax.tree_util.tree_map(
            lambda a, b: bool((a == b).all()), state.learner, restored.learner
        )
        assert all(jax.tree_util.tree_leaves(same))
        # what rp1.train.restore_state reports as a ConfigError
        with pytest.raises((KeyError, ValueError)):
            agent.restore({**saved, "device": {}})
    finally:
        agent.close()
