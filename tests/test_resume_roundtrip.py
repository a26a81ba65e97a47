"""In-process round trip through the real msgpack checkpoint: a run that dies after a few
iterations and is resumed writes exactly the metrics of an uninterrupted run (every column but
the wall-clock ones), for a model-based and a model-free agent."""

from __future__ import annotations

import json

import pytest

from helpers import (
    TINY,
    Crash,
    before_each_save,
    before_each_step,
    crash_after_steps,
    metrics_without_timing,
)
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
        assert set(saved) == {"layout", "meta", "device", "appended"}
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


class StepClock:
    """A clock for ``rp1.train`` that advances ``step_s`` seconds with each agent step, so a
    checkpoint interval counts steps whatever the machine's speed."""

    def __init__(self, step_s: float):
        self.now, self.step_s = 0.0, step_s

    def monotonic(self) -> float:
        return self.now

    def advance(self) -> None:
        self.now += self.step_s

    def install(self, monkeypatch) -> None:
        import types

        import rp1.train

        monkeypatch.setattr(rp1.train, "time", types.SimpleNamespace(monotonic=self.monotonic))
        before_each_step(monkeypatch, lambda: self.advance)


def saves_at(monkeypatch) -> list[int]:
    """The number of metrics rows written by each checkpoint save from now on."""
    rows: list[int] = []
    before_each_save(monkeypatch, lambda state: rows.append(len(json.loads(state["meta"])["rows"])))
    return rows


@pytest.mark.slow
def test_checkpoint_interval_saves_less_often_and_resumes_exactly(tmp_path, monkeypatch):
    """With ``checkpoint_every_s``, a checkpoint follows the first step that ends that long after
    the last save, and the last step; a run killed between saves resumes from the last one and
    writes the uninterrupted run's metrics and policy files."""
    from rp1.outputs.writer import RunOptions

    preset, budget, sets = CASES["rp1"]
    cfg = resolve(preset, seed=3, budget=budget, overrides=sets)
    every_other = RunOptions(checkpoint_every_s=15.0)  # steps of 10 s: a save every second step

    with monkeypatch.context() as patch:
        StepClock(10.0).install(patch)
        saved = saves_at(patch)
        run_training(cfg, tmp_path / "reference", progress=False, options=every_other)
    rows = len(metrics_without_timing(tmp_path / "reference"))
    assert rows == 4 and saved == [2, 4]

    with monkeypatch.context() as patch:
        StepClock(10.0).install(patch)
        crash_after_steps(patch, 3)  # the third step's row written, its checkpoint not due
        with pytest.raises(Crash):
            run_training(cfg, tmp_path / "resumed", progress=False, options=every_other)
    assert len(metrics_without_timing(tmp_path / "resumed")) == 3
    with monkeypatch.context() as patch:
        saved = saves_at(patch)
        run_training(cfg, tmp_path / "resumed", resume=True, progress=False)
    assert saved == [3, 4]  # resumed after the second step, saving after each one (the default)

    assert metrics_without_timing(tmp_path / "resumed") == metrics_without_timing(
        tmp_path / "reference"
    )
    for policy in ("best.msgpack", "last.msgpack"):
        reference = (tmp_path / "reference" / "policy" / policy).read_bytes()
        assert (tmp_path / "resumed" / "policy" / policy).read_bytes() == reference


def test_checkpoint_interval_must_not_be_negative():
    from rp1.core.errors import ConfigError
    from rp1.outputs.writer import RunOptions

    cfg = resolve(CASES["rp1"][0], overrides=CASES["rp1"][2])
    RunOptions(checkpoint_every_s=float("inf")).check(cfg)  # only after the last step
    for bad in (-1.0, float("nan")):
        with pytest.raises(ConfigError, match="checkpoint interval"):
            RunOptions(checkpoint_every_s=bad).check(cfg)


@pytest.mark.slow
def test_a_kill_between_a_chunk_and_its_head_resumes_exactly(tmp_path, monkeypatch):
    """Each save writes the store's new rows as a chunk (rp1.rundir.chunks), then the head that
    lists it. Killed after the third save's chunk, before its head: the run resumes from the
    second save's head, writes the chunk of that number again, and ends as the uninterrupted run
    did, with exactly the chunks its head lists."""
    import rp1.rundir.files
    from rp1.rundir.chunks import chunk_name
    from rp1.rundir.files import CHECKPOINT

    preset, budget, sets = CASES["rp1"]
    cfg = resolve(preset, seed=3, budget=budget, overrides=sets)
    run_training(cfg, tmp_path / "reference", progress=False)

    heads: list[int] = []
    write = rp1.rundir.files.write_atomically

    def dying(path, data, what):
        if what == "checkpoint":
            heads.append(1)
            if len(heads) == 3:
                raise Crash
        write(path, data, what)

    with monkeypatch.context() as patch:
        patch.setattr(rp1.rundir.files, "write_atomically", dying)
        with pytest.raises(Crash):
            run_training(cfg, tmp_path / "resumed", progress=False)
    folder = tmp_path / "resumed" / CHECKPOINT.parent
    assert sorted(p.name for p in folder.glob("rows-*")) == [chunk_name(i) for i in range(3)]
    run_training(cfg, tmp_path / "resumed", resume=True, progress=False)

    assert metrics_without_timing(tmp_path / "resumed") == metrics_without_timing(
        tmp_path / "reference"
    )
    for folder in ("reference", "resumed"):
        chunks = sorted(p.name for p in (tmp_path / folder / CHECKPOINT.parent).glob("rows-*"))
        assert chunks == [chunk_name(i) for i in range(4)], folder  # one a save, none left over
