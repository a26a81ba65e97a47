"""The benchmark scripts' arithmetic (cost laws, projections, interpolation) on data made to follow
a known law, and their timed calls built against the library as it is now."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import code_effect
import cost_model
import first_command
import iteration_time
import paper_scale_cpu
import realisation_interaction

from report_runs import write_run
from rp1.report.runs_table import load_runs

PHASE = 500.0


def write_lawful_run(run: Path, iterations: int = 40) -> None:
    """A metrics.csv whose iterations follow the cost model's laws exactly: fit 1e-4 · n^1.2 s,
    policy 2 s, collection 1 ms per sample, the rest 0.5 + 1e-5 · n s."""
    run.mkdir(parents=True)
    columns = ["iteration", "samples", "phase_samples", "fit_s", "policy_s", "collect_s", "wall_s"]
    with open(run / "metrics.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(columns)
        out.writerow([0, 0, PHASE, "", "", PHASE * 1e-3, 3.0])
        for i in range(1, iterations + 1):
            n = i * PHASE
            fit, policy, collect, rest = 1e-4 * n**1.2, 2.0, PHASE * 1e-3, 0.5 + 1e-5 * n
            out.writerow([i, n, PHASE, fit, policy, collect, fit + policy + collect + rest])


def test_cost_model_recovers_the_law_its_run_follows_and_projects_it_without_error(tmp_path):
    write_lawful_run(tmp_path / "run")
    it, first = cost_model.read_iterations(tmp_path / "run")
    law = cost_model.CostLaw.fitted(it)
    assert (law.fit_p, law.policy, law.phase) == pytest.approx((1.2, 2.0, PHASE))
    assert (law.per_sample, law.rest_c, law.rest_d) == pytest.approx((1e-3, 0.5, 1e-5))
    assert first == 3.0
    assert cost_model.holdout_error(it) == pytest.approx(0.0, abs=1e-9)
    assert cost_model.holdout_error(it, fit_upto=5 * PHASE) == pytest.approx(0.0, abs=1e-9)
    # the projection to 30,000 samples adds the law's iterations from 20,500 on
    summary = cost_model.summary(tmp_path / "run", 30_000)
    added = sum(sum(law.iteration(n).values()) for n in np.arange(it.reached, 30_000, PHASE))
    assert summary.projected_s == pytest.approx(summary.wall_s + added)


def test_code_effect_calls_equal_results_equivalent_and_a_shift_a_change():
    """Ten seeds each way on HalfCheetah at 10⁴ samples (return margin 10.05): returns that move by
    0.1 are equivalent, a test-set error twice as large is higher (Holm over all rows)."""
    import pandas as pd

    from rp1.report.measures import RETURN_MEASURES, TEST_ERROR

    spread = np.linspace(-1.0, 1.0, 10)

    def runs(shift: float, error: float) -> pd.DataFrame:
        values = dict.fromkeys(RETURN_MEASURES, 50.0 + shift + spread)
        values[TEST_ERROR] = error * (1 + 0.01 * spread)
        return pd.DataFrame({"task": "halfcheetah", "method": "rp1", "seed": range(10), **values})

    table = code_effect.compare(runs(0.0, 0.1), runs(0.1, 0.2), 10_000)
    assert table["verdict"].tolist() == ["equivalent"] * 4 + ["holds"]
    margins = table["margin"].tolist()
    assert margins == pytest.approx([10.051] * 4 + [0.01])
    assert "| halfcheetah | rp1 | test-set error | 10 / 10 |" in code_effect.markdown(table)


def test_iteration_time_takes_medians_of_the_parts_and_the_rest_from_an_iteration_on(tmp_path):
    write_lawful_run(tmp_path / "run")
    times = iteration_time.iteration_times(tmp_path / "run", 2)  # iterations 2–40, median 21
    n = 21 * PHASE
    assert times["iterations"] == 39 and times["policy_s"] == pytest.approx(2.0)
    assert times["rest_s"] == pytest.approx(0.5 + 1e-5 * n)
    assert times["fit_s"] == pytest.approx(1e-4 * n**1.2)
    total = sum(1e-4 * (i * PHASE) ** 1.2 + 3.0 + 1e-5 * i * PHASE for i in range(2, 41))
    assert times["total_s"] == pytest.approx(total)


def test_cost_model_holdout_says_when_the_second_half_costs_more_than_the_first_predicts(tmp_path):
    write_lawful_run(tmp_path / "run")
    it, _ = cost_model.read_iterations(tmp_path / "run")
    later = it.samples > it.reached / 2
    extra = np.where(later, 2 * it.fit, 0.0)  # fits in the second half cost three times the law
    slower = cost_model.Iterations(
        it.samples, it.phase, it.fit + extra, it.policy, it.collect, it.wall + extra
    )
    assert cost_model.holdout_error(slower) < -0.2


def test_interpolation_is_exact_at_the_sizes_timed_and_a_power_law_between_and_beyond():
    sizes = np.array([1e3, 1e4, 1e5])
    seconds = np.array([0.1, 1.0, 100.0])
    at = paper_scale_cpu.interpolated(sizes, seconds, np.array([1e3, 1e4, 1e5]))
    np.testing.assert_allclose(at, seconds, rtol=1e-12)
    between = paper_scale_cpu.interpolated(sizes, seconds, np.array([math.sqrt(1e3 * 1e4), 3e4]))
    np.testing.assert_allclose(between, [math.sqrt(0.1), 100.0 * 3e4**2 / 1e10], rtol=1e-9)
    beyond = paper_scale_cpu.interpolated(sizes, seconds, np.array([1e2, 1e6]))
    np.testing.assert_allclose(beyond, [0.01, 10_000.0], rtol=1e-9)


def lawful_counts(iterations: int, p: float) -> dict[str, np.ndarray]:
    """A paper-scale run's counts with epochs exactly 1,000 · n^p and 20 updates per iteration."""
    n = PHASE * np.arange(1, iterations + 1)
    return {
        "n": n,
        "phase": np.full_like(n, PHASE),
        "epochs": 1_000.0 * n**p,
        "updates": np.full_like(n, 20.0),
    }


def test_paper_scale_projection_continues_the_epochs_law_the_run_followed():
    counts = lawful_counts(40, -0.2)
    more, p = paper_scale_cpu.projected(counts, 30_000)
    assert p == pytest.approx(-0.2)
    np.testing.assert_allclose(more["n"], np.arange(20_500, 30_000, PHASE))
    np.testing.assert_allclose(more["epochs"], 1_000.0 * more["n"] ** -0.2, rtol=1e-9)
    assert set(more["updates"]) == {20.0}
    sizes, epoch, check = np.array([1e3, 1e5]), np.array([0.1, 10.0]), np.array([0.02, 2.0])
    assert paper_scale_cpu.holdout_error(counts, sizes, epoch, check, 4.0) == pytest.approx(
        0.0, abs=1e-9
    )


def test_paper_scale_iteration_counts_each_epoch_check_and_update_at_its_data_size():
    counts = {
        "n": np.array([1e3, 1e5]),
        "phase": np.array([PHASE, PHASE]),
        "epochs": np.array([10.0, 12.0]),
        "updates": np.array([3.0, 5.0]),
    }
    sizes, epoch, check = np.array([1e3, 1e5]), np.array([0.1, 10.0]), np.array([0.02, 2.0])
    fit, policy = paper_scale_cpu.cpu_seconds(counts, sizes, epoch, check, 4.0)
    # 10 epochs: 2 checks + the one before training; 12 epochs: 3 + 1
    np.testing.assert_allclose(fit, [10 * 0.1 + 3 * 0.02, 12 * 10.0 + 4 * 2.0])
    np.testing.assert_allclose(policy, [12.0, 20.0])


@pytest.mark.slow
def test_the_timed_calls_run_against_the_library_as_it_is():
    import bench_ensemble
    import bench_policy

    fit = bench_ensemble.fit_calls(8, 64, 32)
    for call in (*fit.epochs.values(), fit.validation):
        assert all(np.isfinite(np.asarray(x)).all() for x in _leaves(call()))
    pieces, workload = bench_policy.policy_pieces(2, 8, 2)
    assert bench_policy.TRAIN_STEP in pieces and "2 rollouts" in workload
    for piece in pieces.values():
        assert all(np.isfinite(np.asarray(x)).all() for x in _leaves(piece()))


def _leaves(tree) -> list:
    """The numeric arrays of ``tree`` (random keys left out)."""
    import jax
    import jax.numpy as jnp

    return [x for x in jax.tree_util.tree_leaves(tree) if jnp.issubdtype(x.dtype, jnp.number)]


def test_sweep_chain_starts_only_the_runs_that_end_before_until_and_refuses_bad_minutes(tmp_path):
    """benchmarks/sweep_chain.sh with UNTIL half an hour away: a 5-minute run and a run without
    minutes start, a 500-minute one does not; without UNTIL, a run kept in a DONE folder is
    skipped; minutes that are not a whole number stop it (exit 2)."""
    fake = tmp_path / "rp1"
    fake.write_text('#!/usr/bin/env bash\necho "called $*"\n')
    fake.chmod(0o755)
    runs = tmp_path / "runs.txt"
    runs.write_text("# a comment\nshort 1 5\nlong 2 500\n\nunknown 3\n")
    chain = str(Path(__file__).resolve().parents[1] / "benchmarks" / "sweep_chain.sh")
    env = {"PATH": "/usr/bin:/bin", "RP1": str(fake), "UNTIL": "+30 minutes"}
    out = subprocess.run(
        ["bash", chain, str(runs), "out", "--x"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    called = [line for line in out.stdout.splitlines() if line.startswith("called")]
    assert called == [
        "called sweep --presets short --seeds 1 --workers 1 --out out --x",
        "called sweep --presets unknown --seeds 3 --workers 1 --out out --x",
    ]
    assert "long seed 2: not started" in out.stdout
    (tmp_path / "kept" / "short" / "seed1").mkdir(parents=True)
    kept = subprocess.run(
        ["bash", chain, str(runs), "out"],
        env={**env, "UNTIL": "", "DONE": f"{tmp_path / 'none'} {tmp_path / 'kept'}"},
        capture_output=True,
        text=True,
    )
    assert [line for line in kept.stdout.splitlines() if line.startswith("called")] == [
        "called sweep --presets long --seeds 2 --workers 1 --out out",
        "called sweep --presets unknown --seeds 3 --workers 1 --out out",
    ]
    runs.write_text("short 1 5\nodd 2 1.5\n")
    bad = subprocess.run(["bash", chain, str(runs), "out"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "minutes '1.5' of odd seed 2 is not a whole number" in bad.stderr


def test_first_command_plan_runs_each_candidate_on_both_realisations_and_evaluates_afresh(tmp_path):
    """benchmarks/first_command_plan.sh counts: a sweep per realisation and budget, XLA held to AVX2
    in the second realisation only, each run's best policy evaluated afresh once (kept on a second
    call, which resumes), and the counts read from those evaluations."""
    log = tmp_path / "calls.txt"
    fake = tmp_path / "rp1"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "${{XLA_FLAGS:-none}} $*" >> {log}\n'
        'if [ "$1" = sweep ]; then mkdir -p "${@: -1}/hopper-first/seed3"; else echo "{}"; fi\n'
    )
    fake.chmod(0o755)
    plan = str(Path(__file__).resolve().parents[1] / "benchmarks" / "first_command_plan.sh")
    env = {"PATH": "/usr/bin:/bin", "RP1": str(fake), "PYTHON": "echo"}
    for _ in range(2):
        out = subprocess.run(
            ["bash", plan, "counts", str(tmp_path / "out"), "0-9"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
    calls = log.read_text().splitlines()
    sweeps = [c for c in calls if " sweep " in c]
    assert len(sweeps) == 8 and len(calls) == 8 + 4  # evaluated once, not again
    for realisation, flags in (("this-cpu", "none"), ("avx2-cap", "--xla_cpu_max_isa=AVX2")):
        for budget in ("7000", "10000"):
            where = tmp_path / "out" / realisation / budget
            assert (
                f"{flags} sweep --presets hopper-first,halfcheetah-first --seeds 0-9 --budget "
                f"{budget} --workers 2 --out {where}"
            ) in sweeps
            run = where / "hopper-first" / "seed3"
            assert f"{flags} evaluate {run} --seed 1000 --episodes 10 --json" in calls
            assert (run / "evaluate-best-seed1000.json").read_text() == "{}\n"
            assert f"{where} --afresh evaluate-best-seed1000.json" in out.stdout
    usage = subprocess.run(["bash", plan, "count"], env=env, capture_output=True, text=True)
    assert usage.returncode == 2 and "usage" in usage.stderr


def test_commit_finished_runs_commits_a_finished_run_with_its_provenance_and_no_return(tmp_path):
    """benchmarks/commit_finished_runs.sh, one pass: a run the chain's log says exited 0 and whose
    lock is gone is copied and committed with one provenance line (ok: the expected commit and
    flags); a run still locked, and one already committed, are left; no return is printed."""
    repo, sweep = tmp_path / "repo", tmp_path / "sweep"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for seed, locked in ((10, False), (11, True)):
        run = sweep / "hopper-rp1" / f"seed{seed}"
        (run / "policy").mkdir(parents=True)
        for name in ("best", "last"):
            (run / "policy" / f"{name}.msgpack").write_bytes(b"policy")
        (run / "config.json").write_text("{}")
        (run / "evaluations.csv").write_text("samples\n")
        env = {
            "commit": "6a13e10abc",
            "device": "AMD EPYC",
            "xla_flags": "",
            "openblas_coretype": "Zen",
        }
        (run / "environment.json").write_text(json.dumps({"environments": [env]}))
        (run / "metrics.csv").write_text(
            "iteration,samples,eval_return,wall_s\n0,0,123.456,\n1,3000,987.654,60\n"
        )
        if locked:
            (run / "lock").write_text("")
    log = tmp_path / "chain1.log"
    log.write_text(
        "2026-12-06 01:00:00 hopper-rp1 seed 10: rp1 sweep exited 0\n"
        "2026-12-06 01:00:00 hopper-rp1 seed 11: rp1 sweep exited 0\n"
        "2026-12-06 01:00:00 hopper-vr seed 10: rp1 sweep exited 3\n"
    )
    script = str(Path(__file__).resolve().parents[1] / "benchmarks" / "commit_finished_runs.sh")
    env = {
        "PATH": "/usr/bin:/bin",
        "ONCE": "1",
        "EXPECT_COMMIT": "6a13e10",
        "EXPECT_CORETYPE": "Zen",
        "PREFIX": "Replication: ",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for _ in range(2):  # the second pass finds it committed already
        out = subprocess.run(
            ["bash", script, str(sweep), "pending", str(log)],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
    pending = repo / "pending"
    assert sorted(p.name for p in (pending / "hopper-rp1").iterdir()) == ["seed10"]
    assert (pending / "hopper-rp1" / "seed10" / "policy" / "best.msgpack").read_bytes() == b"policy"
    (line,) = (pending / "runs.md").read_text().splitlines()
    assert line.endswith(
        "`hopper-rp1` seed 10 finished: ok 1 min of work, 2 rows, 3000 samples, 6a13e10, "
        "AMD EPYC, 1 environment(s)"
    )
    history = subprocess.run(
        ["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert history.stdout.splitlines() == [
        "Replication: hopper-rp1 seed 10 finished (pending, unread)"
    ]
    assert "123.456" not in line + out.stdout and "987.654" not in line + out.stdout


def write_evaluated_run(run: Path, returns: list[float], stds: list[float], episodes: int) -> None:
    """A run whose evaluations are ``returns`` ± ``stds`` over ``episodes`` episodes, one row each
    (the second unevaluated), 30 s of work a row."""
    run.mkdir(parents=True)
    (run / "config.json").write_text(f'{{"eval_episodes": {episodes}}}')
    with open(run / "metrics.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["iteration", "samples", "eval_return", "eval_std", "wall_s"])
        for i, (ret, std) in enumerate(zip(returns, stds, strict=True)):
            out.writerow([i, 1000 * i, ret, std, 30.0])
        out.writerow([len(returns), 1000 * len(returns), "", "", 30.0])


def test_first_command_counts_a_run_clearly_above_only_past_two_standard_errors(tmp_path):
    """A run ends clearly above its untrained policy when its last evaluation is more than two
    standard errors of the difference above the first: 1 above 0 with stds 1 over 4 episodes is
    z = 1 / sqrt(2 / 4) = 1.41 (not clear), 3 above is 4.24 (clear); the best need not be the last,
    and is a trained policy's (the untrained 5.0 of seed 10 is not its best)."""
    write_evaluated_run(tmp_path / "p" / "seed0", [0.0, 9.0, 1.0], [1.0, 1.0, 1.0], 4)
    write_evaluated_run(tmp_path / "p" / "seed1", [0.0, 2.0, 3.0], [1.0, 1.0, 1.0], 4)
    write_evaluated_run(tmp_path / "p" / "seed10", [5.0, 1.0], [0.0, 0.0], 4)
    table = first_command.preset_outcomes(tmp_path, "p")
    assert table["seed"].tolist() == [0, 1, 10]
    assert table["clearly_above"].tolist() == [False, True, False]
    assert math.isclose(table["z"][0], 1 / math.sqrt(0.5))
    assert table["best"].tolist() == [9.0, 3.0, 1.0]
    assert table["z"][2] == -math.inf
    assert table["work_min"].tolist() == [2.0, 2.0, 1.5]


def test_first_command_counts_a_best_policy_evaluated_afresh_against_the_untrained_one(tmp_path):
    """The afresh measure compares a run's `rp1 evaluate --json` output with its row 0: 2 above 0,
    stds 1 over 4 new episodes and 1 over 4 untrained ones, is z = 2 / sqrt(1/4 + 1/4) = 2.83
    (clear), 1 above is 1.41 (not); an output that replays the recorded episodes, or of the last
    policy, or with a return missing, is refused naming its file."""

    def evaluated(seed: int, mean: float, **changes) -> None:
        result = {"policy": "best", "replayed": False, "episodes": 4, "mean": mean, "std": 1.0}
        result |= {"returns": [mean - 1, mean + 1, mean - 1, mean + 1], **changes}
        (tmp_path / "p" / f"seed{seed}" / "afresh.json").write_text(json.dumps(result))

    for seed, mean in ((0, 2.0), (1, 1.0)):
        write_evaluated_run(tmp_path / "p" / f"seed{seed}", [0.0, 5.0], [1.0, 1.0], 4)
        evaluated(seed, mean)
    table = first_command.preset_outcomes(tmp_path, "p", afresh="afresh.json")
    assert table["afresh_clearly_above"].tolist() == [True, False]
    assert table["afresh_z"].tolist() == pytest.approx([2 / math.sqrt(0.5), 1 / math.sqrt(0.5)])
    for changes in ({"replayed": True}, {"policy": "last"}, {"returns": [1.0, 1.0, 1.0]}):
        evaluated(1, 1.0, **changes)
        with pytest.raises(ValueError, match=r"seed1/afresh\.json"):
            first_command.preset_outcomes(tmp_path, "p", afresh="afresh.json")


def test_realisation_interaction_reads_each_block_and_keeps_the_first_realisation_by_path(tmp_path):
    """Seeds 0–2 of both methods have a second realisation under ``second-realisation/`` (after the
    kept runs by path); each block's A − B is its mean difference with Welch's standard error:
    kept seeds 0–2 give 11 ± √(5/3), kept seeds 3–5 give 2 ± √(5/3), the other realisation 1 ± √(2/3)."""
    kept = {"rp1": [10, 12, 14, 1, 3, 5], "greedy": [0, 1, 2, 0, 1, 2]}
    other = {"rp1": [1, 2, 3], "greedy": [0, 1, 2]}
    for folder, values in ((tmp_path, kept), (tmp_path / "second-realisation", other)):
        for method, returns in values.items():
            for seed, value in enumerate(returns):
                write_run(folder, "hopper", method, seed, [0, 3000], [0.0, float(value)])
    kept_values, other_values = realisation_interaction.per_seed(
        load_runs(tmp_path), "hopper", ("rp1", "greedy"), 6000, "paper_best", [0, 1, 2]
    )
    assert sorted(other_values["seed"]) == [0, 0, 1, 1, 2, 2]
    blocks = realisation_interaction.block_differences(kept_values, other_values, ("rp1", "greedy"))
    assert blocks["kept, swapped seeds"] == pytest.approx((11.0, math.sqrt(5 / 3), 3))
    assert blocks["kept, other seeds"] == pytest.approx((2.0, math.sqrt(5 / 3), 3))
    assert blocks["other realisation"] == pytest.approx((1.0, math.sqrt(2 / 3), 3))


def test_first_command_reads_runs_as_stopped_at_a_smaller_budget(tmp_path):
    """To 1,500 samples a run is its rows collecting below 1,500: its last evaluation is the
    second row's (2 above 0: z = 2 / sqrt(2 / 4) = 2.83, clear), its work those two rows' minute."""
    write_evaluated_run(tmp_path / "p" / "seed1", [0.0, 2.0, 0.5], [1.0, 1.0, 1.0], 4)
    whole, cut = (first_command.preset_outcomes(tmp_path, "p", b) for b in (math.inf, 1500))
    assert whole["clearly_above"].tolist() == [False] and cut["clearly_above"].tolist() == [True]
    assert cut["final"].tolist() == [2.0] and cut["samples"].tolist() == [1000]
    assert cut["work_min"].tolist() == [1.0]


def test_first_command_draws_a_presets_seeds_over_their_band(tmp_path):
    """Two finished seeds of one preset give README's picture; a figure of two presets, or of
    runs cut by --budget, is refused."""
    for seed, final in ((0, 5.0), (1, 0.5)):
        run = write_run(
            tmp_path,
            "hopper",
            "quick",
            seed,
            [0, 3000],
            [0.0, final],
            budget=6000,
            eval_std=[1.0, 1.0],
        )
        config = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(json.dumps({**config, "eval_episodes": 4}))
    out = tmp_path / "seeds.png"
    assert (
        first_command.main([str(tmp_path), "--presets", "hopper-quick", "--figure", str(out)]) == 0
    )
    assert out.read_bytes().startswith(b"\x89PNG")
    for extra in (["--presets", "a", "b"], ["--presets", "hopper-quick", "--budget", "10"]):
        with pytest.raises(SystemExit):
            first_command.main([str(tmp_path), *extra, "--figure", str(out)])
