"""In-process round trip through the real msgpack checkpoint: a run that dies after a few
iterations and is resumed writes exactly the metrics of an uninterrupted run (every column but
the wall-clock ones), for a model-based and a model-free agent; a run made with several seeds in
one program (rp1 0.2.x) is refused on resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import (
    BUDGET,
    PRESET,
    TINY,
    Crash,
    before_each_save,
    before_each_step,
    crash_after_steps,
    metrics_without_timing,
    one_error,
    run_cli,
    set_args,
    snapshot,
    tiny_sets,
    train_args,
)
from rp1.config import resolve
from rp1.core.errors import DamagedFile
from rp1.rundir.files import (
    CHECKPOINT,
    ENVIRONMENT,
    EVALUATIONS,
    FINISHED,
    SEEDS_PER_PROCESS,
    RunDir,
)
from rp1.rundir.lockstep import sealed_program
from rp1.rundir.sealed import seal, unseal
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


# --- runs made with several seeds in one program (rp1 0.2.x's --seeds-per-process N) -----------


def as_made_in_a_program(run: Path, seeds: int | None, recorded: int | None = None) -> None:
    """``run`` (finished) as an unfinished run of rp1 0.2.x made with ``seeds`` seeds in one
    program: its checkpoint sealed with that size (``None``: sealed before sizes were), and its
    record saying ``recorded`` seeds (``None``: the record left as it is)."""
    (run / FINISHED).unlink()
    data, _ = unseal(run.joinpath(CHECKPOINT).read_bytes(), run / CHECKPOINT, "checkpoint")
    data = {key: value for key, value in data.items() if key != SEEDS_PER_PROCESS}
    run.joinpath(CHECKPOINT).write_bytes(
        seal(data if seeds is None else {**data, SEEDS_PER_PROCESS: seeds})
    )
    if recorded is not None:
        record = json.loads((run / ENVIRONMENT).read_text())
        record["environments"][-1]["seeds_per_process"] = recorded
        (run / ENVIRONMENT).write_text(json.dumps(record))


def test_a_run_made_in_a_program_is_refused_on_resume(copied_run, capsys):
    """One line naming the run, its size and the release that continues it, exit code 2, nothing
    written: whether the checkpoint seals the size (also with a damaged record) or, sealed before
    sizes were, the record says it."""
    for seeds, recorded, source in ((2, None, CHECKPOINT), (None, 3, ENVIRONMENT)):
        as_made_in_a_program(copied_run, seeds, recorded)
        before = snapshot(copied_run)
        code, err = run_cli(train_args(copied_run, "--resume"), capsys)
        size = seeds or recorded
        one_error(code, err, 2, f"ran with {size} seeds in one program", str(source))
        assert f"rp1 0.2.x with --seeds-per-process {size}, up to commit 23cde81" in err[0]
        assert snapshot(copied_run) == before
        (copied_run / FINISHED).write_text("")
    (copied_run / FINISHED).unlink()
    (copied_run / ENVIRONMENT).write_text("{ damaged")
    data, _ = unseal(copied_run.joinpath(CHECKPOINT).read_bytes(), copied_run, "checkpoint")
    copied_run.joinpath(CHECKPOINT).write_bytes(seal({**data, SEEDS_PER_PROCESS: 2}))
    code, err = run_cli(train_args(copied_run, "--resume"), capsys)
    one_error(code, err, 2, "ran with 2 seeds in one program", str(CHECKPOINT))


def test_a_sweep_refuses_to_resume_a_run_made_in_a_program(finished_run, tmp_path, capsys):
    """Planned, before any run starts: one line naming the run, exit code 2, nothing written."""
    run = Path(shutil.copytree(finished_run, tmp_path / PRESET / "seed0"))
    as_made_in_a_program(run, 2)
    before = snapshot(tmp_path)
    sets = set_args(tiny_sets())
    args = ["sweep", "--presets", PRESET, "--seeds", "0", "--budget", str(BUDGET)]
    code, err = run_cli([*args, "--out", tmp_path, *sets], capsys)
    one_error(code, err, 2, str(run), "ran with 2 seeds in one program")
    assert snapshot(tmp_path) == before


def test_a_checkpoint_seals_a_run_alone(tmp_path):
    """A checkpoint says its run computes alone (size 1), beside the config; one written before
    sizes were sealed has none, and one whose size is not a positive integer is damaged."""
    run = RunDir(tmp_path / "run")
    config = resolve(PRESET, seed=1, budget=BUDGET, overrides=TINY).to_dict()
    run.prepare(config)
    run.save_checkpoint({})
    assert sealed_program(RunDir(run.path)) == 1
    head = {"config": json.dumps(config), "agent": {}, "chunks": []}
    run.checkpoint_path.write_bytes(seal(head))
    assert sealed_program(RunDir(run.path)) is None
    for size in ("3", 0, True):
        run.checkpoint_path.write_bytes(seal({**head, SEEDS_PER_PROCESS: size}))
        with pytest.raises(DamagedFile, match=r"program size .* is not a positive integer"):
            sealed_program(RunDir(run.path))
