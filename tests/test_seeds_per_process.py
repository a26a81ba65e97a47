"""Many seeds in one program (``rp1 sweep --seeds-per-process N``, :func:`rp1.train.run_seeds`):
the batched fit computes each seed as the same seed in any other batch of its size, the seeds' run directories are what single runs write, a failing seed stops alone,
a killed program resumes every seed exactly, and a run resumes only in a program of its batch
size."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from helpers import TINY, Crash, metrics_without_timing, one_error, run_cli, set_args, snapshot
from rp1.config import resolve
from rp1.core.batching import entries, stacked
from rp1.core.errors import ConfigError, DamagedFile, DivergedError
from rp1.rundir.files import (
    CHECKPOINT,
    CONFIG,
    ENVIRONMENT,
    EVALUATIONS,
    FINISHED,
    METRICS,
    PROGRAM,
    RunDir,
)
from rp1.rundir.sealed import seal

CASE = ("halfcheetah-rp1", 1200, {**TINY, "collect.alpha": "0", "eval.every": "200"})
"""Four iterations of 300 samples (α = 0), evaluated on the grid."""


def configs(*seeds: int, budget: int = CASE[1]):
    preset, _, sets = CASE
    return [resolve(preset, seed=seed, budget=budget, overrides=sets) for seed in seeds]


def same_tree(a, b) -> bool:
    leaves = zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True)
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in leaves)


def test_stacked_pads_with_the_first_entry_and_entries_takes_the_seeds_back():
    trees = [{"w": np.full(3, i, np.float32)} for i in (5, 6, 7)]
    batch = stacked(trees, 4)
    assert batch["w"].shape == (4, 3)
    assert np.array_equal(np.asarray(batch["w"][3]), trees[0]["w"])
    assert all(same_tree(a, b) for a, b in zip(entries(batch, 3), trees, strict=True))
    with pytest.raises(ValueError, match="do not fit a batch of 2"):
        stacked(trees, 2)


def _fit_inputs(seeds):
    from rp1.dynamics import ensemble_init
    from rp1.dynamics.fit import FitInput, init_model_opt_state
    from rp1.dynamics.store import padded_dataset

    inputs = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        n = 200 + 500 * seed  # buckets of 1,024 and 2,048 rows: padded to the batch's largest
        obs, act = rng.normal(size=(n, 4)), rng.normal(size=(n, 2))
        data = padded_dataset(obs, act, obs + 0.1 * rng.normal(size=(n, 4)))
        model = ensemble_init(jax.random.PRNGKey(seed), 4, 2, 3, (8,))
        inputs.append(
            FitInput(model, init_model_opt_state(model), data, data, jax.random.PRNGKey(9 + seed))
        )
    return inputs


@pytest.mark.slow
def test_a_seed_fits_as_it_fits_beside_any_other_seeds_of_a_batch_of_its_size():
    from rp1.dynamics.fit import FitSettings, fit_seeds

    settings = FitSettings(max_epochs=6, check_every=2, batch_size=64)
    inputs = _fit_inputs([0, 1, 2])
    # seed 0 first beside seed 1, then last beside seed 2 (a batch of 4 pads with copies)
    first = fit_seeds([inputs[0], inputs[1]], settings, batch=4)
    second = fit_seeds([inputs[2], inputs[0]], settings, batch=4)
    assert same_tree(first[0], second[1])
    with pytest.raises(ValueError, match="do not fit a batch"):
        fit_seeds(inputs, settings, batch=2)


@pytest.mark.slow
def test_a_failed_fit_is_its_seeds_outcome_and_the_others_fit():
    from rp1.dynamics.fit import FitSettings, NonFiniteLossError, fit_seeds

    inputs = _fit_inputs([0, 1])
    bad = inputs[1].train._replace(obs=np.full_like(inputs[1].train.obs, np.nan))
    outcomes = fit_seeds(
        [inputs[0], inputs[1]._replace(train=bad)], FitSettings(max_epochs=4), batch=2
    )
    assert isinstance(outcomes[1], NonFiniteLossError)
    assert not isinstance(outcomes[0], Exception) and np.isfinite(outcomes[0][2].val_loss)


@pytest.mark.slow
def test_seeds_in_one_program_write_complete_run_directories(tmp_path):
    from rp1.experiments.sweep_plan import best_return
    from rp1.train import run_seeds

    outs = [tmp_path / f"seed{seed}" for seed in (1, 2)]
    assert run_seeds(configs(1, 2), outs, progress=False) == outs
    for out in outs:
        for name in (CONFIG, METRICS, EVALUATIONS, ENVIRONMENT, FINISHED, str(CHECKPOINT)):
            assert (out / name).exists(), name
        assert any((out / "policy").iterdir())
        assert best_return(out) is not None
        (entry,) = json.loads((out / ENVIRONMENT).read_text())["environments"]
        assert entry["seeds_per_process"] == 2
    # the seeds drew their own data: their metrics differ
    assert metrics_without_timing(outs[0]) != metrics_without_timing(outs[1])


@pytest.mark.slow
def test_a_seed_that_fails_stops_alone_and_the_program_goes_on(tmp_path, monkeypatch):
    from rp1.agents.model_based import ModelBasedAgent
    from rp1.train import run_seeds

    fitted = ModelBasedAgent._fitted

    def diverging(self, step, outcome, seconds):
        if self.cfg.seed == 2 and step.state.iteration == 2:
            raise DivergedError("the world model's fit diverged (a test's)")
        fitted(self, step, outcome, seconds)

    monkeypatch.setattr(ModelBasedAgent, "_fitted", diverging)
    outs = [tmp_path / f"seed{seed}" for seed in (1, 2, 3)]
    outcomes = run_seeds(configs(1, 2, 3), outs, progress=False)
    assert outcomes[0] == outs[0] and outcomes[2] == outs[2]
    assert isinstance(outcomes[1], DivergedError)
    assert (outs[0] / FINISHED).exists() and not (outs[1] / FINISHED).exists()
    assert len(metrics_without_timing(outs[1])) == 2  # iterations 0 and 1, then the failure


@pytest.mark.slow
def test_a_killed_program_resumes_every_seed_exactly(tmp_path, monkeypatch):
    import rp1.train
    from rp1.train import run_seeds

    seeds = (1, 2, 3)
    reference = [tmp_path / "reference" / f"seed{seed}" for seed in seeds]
    run_seeds(configs(*seeds), reference, progress=False)

    step_seeds, calls = rp1.train.step_seeds, []

    def dying(agents, states, batch):
        if len(calls) == 2:
            raise Crash
        calls.append(1)
        return step_seeds(agents, states, batch)

    monkeypatch.setattr(rp1.train, "step_seeds", dying)
    resumed = [tmp_path / "resumed" / f"seed{seed}" for seed in seeds]
    with pytest.raises(Crash):
        run_seeds(configs(*seeds), resumed, progress=False)
    monkeypatch.undo()
    run_seeds(configs(*seeds), resumed, resume=True, progress=False)
    for ref, res in zip(reference, resumed, strict=True):
        assert len(metrics_without_timing(ref)) > 2
        assert metrics_without_timing(res) == metrics_without_timing(ref)
        assert (res / EVALUATIONS).read_text() == (ref / EVALUATIONS).read_text()


@pytest.mark.slow
def test_a_run_resumes_only_in_a_program_of_its_batch_size(tmp_path, monkeypatch):
    import rp1.train
    from rp1.train import run_seeds, run_training

    (cfg,) = configs(1, budget=900)
    batched = tmp_path / "batched"
    run_seeds([cfg], [batched], progress=False, seeds_per_process=2)
    (batched / FINISHED).unlink()  # as if it had been stopped
    before = {p.name: p.read_bytes() for p in batched.iterdir() if p.is_file()}
    with pytest.raises(ConfigError, match="resume it with --seeds-per-process 2,"):
        run_training(cfg, batched, resume=True, progress=False)
    # in a program of several seeds, a seed's refusal is its outcome
    (outcome,) = run_seeds([cfg], [batched], resume=True, progress=False, seeds_per_process=3)
    assert isinstance(outcome, ConfigError) and "ran with 2 seeds in one program" in str(outcome)
    assert {p.name: p.read_bytes() for p in batched.iterdir() if p.is_file()} == before

    alone = tmp_path / "alone"
    run_training(cfg, alone, progress=False)
    (alone / FINISHED).unlink()
    (outcome,) = run_seeds([cfg], [alone], resume=True, progress=False, seeds_per_process=3)
    assert isinstance(outcome, ConfigError) and "ran alone" in str(outcome)
    assert rp1.train.program_mismatch(alone, 1) == ""


@pytest.mark.slow
def test_a_damaged_record_neither_decides_nor_hides_a_runs_program_size(tmp_path, capsys):
    """The program's size is sealed in the checkpoint: a seed of a two-seed program whose
    ``environment.json`` is damaged is refused alone (one line, exit code 2, nothing written), and
    continues in its program, which rewrites the record with its size."""
    from rp1.train import run_seeds

    (cfg,) = configs(1, budget=600)
    batched = tmp_path / "batched"
    run_seeds([cfg], [batched], progress=False, seeds_per_process=2)
    (batched / FINISHED).unlink()  # as if it had been stopped
    (batched / ENVIRONMENT).write_text("{ damaged")
    before = snapshot(batched)
    sets = set_args([f"{k}={v}" for k, v in CASE[2].items()])
    args = ["train", "--preset", cfg.preset, "--seed", "1", "--budget", "600", "--out", batched]
    code, err = run_cli([*args, "--resume", "--quiet", *sets], capsys)
    one_error(code, err, 2, "resume it with --seeds-per-process 2,", str(CHECKPOINT))
    assert snapshot(batched) == before
    resumed = run_seeds([cfg], [batched], resume=True, progress=False, seeds_per_process=2)
    assert resumed == [batched]
    (entry,) = json.loads((batched / ENVIRONMENT).read_text())["environments"]
    assert entry["seeds_per_process"] == 2


@pytest.mark.slow
def test_a_sweep_refuses_to_resume_a_run_in_a_program_of_another_size(tmp_path, capsys):
    """Planned, before any run starts: one line naming the run and the size that continues it,
    exit code 2, nothing written (no log)."""
    from rp1.train import run_training

    (cfg,) = configs(1, budget=600)
    alone = tmp_path / cfg.preset / "seed1"
    run_training(cfg, alone, progress=False)
    (alone / FINISHED).unlink()  # as if it had been stopped
    before = snapshot(tmp_path)
    sets = set_args([f"{k}={v}" for k, v in CASE[2].items()])
    args = ["sweep", "--presets", cfg.preset, "--seeds", "1", "--budget", "600", "--out", tmp_path]
    code, err = run_cli([*args, "--seeds-per-process", "2", *sets], capsys)
    one_error(code, err, 2, str(alone), "ran alone")
    assert snapshot(tmp_path) == before


def test_a_checkpoint_seals_the_size_of_its_program(tmp_path):
    """The size a run's program computes in is in its checkpoint, beside the config; a checkpoint
    written before sizes were sealed has none, and one whose size is not a positive integer is
    damaged."""
    run = RunDir(tmp_path / "run")
    config = configs(1)[0].to_dict()
    run.prepare(config, seeds_per_process=3)
    run.save_checkpoint({})
    assert RunDir(run.path).sealed_program() == 3
    head = {"config": json.dumps(config), "agent": {}, "chunks": []}
    run.checkpoint_path.write_bytes(seal(head))
    assert RunDir(run.path).sealed_program() is None
    for size in ("3", 0, True):
        run.checkpoint_path.write_bytes(seal({**head, PROGRAM: size}))
        with pytest.raises(DamagedFile, match=r"program size .* is not a positive integer"):
            RunDir(run.path).sealed_program()


def test_a_program_holds_one_config_but_the_seed_and_model_based_methods_only(tmp_path):
    from rp1.train import run_seeds

    one, two = configs(1, 2)
    other = resolve(CASE[0], seed=3, budget=999, overrides=CASE[2])
    for cfgs, outs, match in (
        ([one, other], ["a", "b"], "share their config but the seed"),
        ([one, one], ["a", "b"], "must differ"),
        ([one, two], ["a", "a"], "a run directory each"),
        ([one, two], ["a"], "as many run directories"),
        ([resolve("halfcheetah-modelfree", seed=s) for s in (1, 2)], ["a", "b"], "model-based"),
    ):
        with pytest.raises(ConfigError, match=match):
            run_seeds(cfgs, [tmp_path / out for out in outs], progress=False)
    with pytest.raises(ConfigError, match="2 seeds do not fit a program of 1"):
        run_seeds([one, two], [tmp_path / "a", tmp_path / "b"], seeds_per_process=1)
    assert not any(tmp_path.iterdir())  # refused before anything was written


@pytest.mark.slow
def test_a_sweep_groups_the_seeds_of_each_config_into_programs(tmp_path):
    from rp1.experiments.sweep_plan import SweepRequest, plan_sweep, programs

    request = SweepRequest(
        ["halfcheetah-rp1", "hopper-rp1"], [0, 1, 2], tmp_path, order="seeds", seeds_per_process=2
    )
    grouped = programs(plan_sweep(request))
    assert [[(j.cfg.preset, j.cfg.seed) for j in program] for program in grouped] == [
        [("halfcheetah-rp1", 0), ("halfcheetah-rp1", 1)],
        [("hopper-rp1", 0), ("hopper-rp1", 1)],
        [("halfcheetah-rp1", 2)],
        [("hopper-rp1", 2)],
    ]
    assert all(j.seeds_per_process == 2 for program in grouped for j in program)
    for bad, match in (
        (
            SweepRequest(["halfcheetah-modelfree"], [0, 1], tmp_path, seeds_per_process=2),
            "model-free",
        ),
        (
            SweepRequest(["halfcheetah-rp1"], [0], tmp_path, seeds_per_process=0),
            "seeds-per-process",
        ),
    ):
        with pytest.raises(ConfigError, match=match):
            plan_sweep(bad)


@pytest.mark.slow
def test_a_sweep_runs_its_seeds_in_programs_and_resumes_them_in_programs(tmp_path, capsys):
    from rp1.experiments.executors import Backend
    from rp1.experiments.sweep import run_sweep
    from rp1.experiments.sweep_plan import SweepRequest

    request = SweepRequest(
        ["halfcheetah-greedy"],
        [0, 1, 2],
        tmp_path,
        budget=600,
        overrides={**TINY},
        seeds_per_process=2,
    )
    assert run_sweep(request, Backend(workers=2)) == 0
    for seed in (0, 1, 2):
        run = tmp_path / "halfcheetah-greedy" / f"seed{seed}"
        assert (run / FINISHED).exists()
        log = (run / "log.txt").read_text()
        assert f"=== rp1 sweep: start halfcheetah-greedy seed {seed}" in log
        assert f"=== rp1 sweep: finished halfcheetah-greedy seed {seed}" in log
        # seed 2's program holds it alone, in a batch of 2 as the others
        (entry,) = json.loads((run / ENVIRONMENT).read_text())["environments"]
        assert entry["seeds_per_process"] == 2
    assert "3 of 3 runs finished" in " ".join(capsys.readouterr().out.split())
    assert run_sweep(request, Backend(workers=2)) == 0  # all skipped
