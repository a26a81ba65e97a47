"""docs/extending.md's recipes, carried out from outside rp1 through its extension points."""

from __future__ import annotations

import re
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from extension_examples import RANGE
from helpers import (
    TINY,
    kill_at_pause,
    one_error,
    read_rows,
    run_cli,
    set_args,
    subprocess_env,
    tiny_sets,
)
from rp1.cli import main
from rp1.config import (
    METHODS_VARIABLE,
    Method,
    adaptive_lambda,
    env_config,
    method_names,
    model_based_methods,
    preset_descriptions,
    register_method,
    resolve,
    run_cell,
)
from rp1.config import methods as method_table
from rp1.core.errors import ConfigError
from rp1.imagination import bonus_function
from rp1.report import figures
from rp1.report.write import write_report
from rp1.train import run_training


def test_a_bonus_of_ones_own_is_named_by_module_and_function():
    bonus = bonus_function("extension_examples:reward_range")
    rewards = jnp.array([[1.0, 0.0], [3.0, 0.5], [2.0, 0.25]])  # 3 members, 2 steps
    np.testing.assert_allclose(bonus(rewards, jnp.zeros((3, 2, 4))), [2.0, 0.5])


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("nope", "valid bonuses: reward, state, or package.module:function"),
        ("no_such_module_here:f", "cannot import no_such_module_here"),
        ("extension_examples:missing", "has no attribute 'missing'"),
        ("extension_examples:NOT_A_FUNCTION", "not a function"),
    ],
)
def test_a_bonus_that_cannot_be_found_is_a_config_error(name, fragment):
    with pytest.raises(ConfigError, match=fragment):
        resolve("hopper-rp1-fixed05", overrides={"bonus": name})


def test_a_run_trains_on_ones_own_bonus(tmp_path):
    """λ fixed at 0.5 with the members' reward range as the bonus: the run learns on it, and the
    bonus it logs is not the reward variance's."""
    sets = {**TINY, "collect.alpha": "0"}
    own = run_training(
        resolve(
            "halfcheetah-rp1-fixed05",
            seed=0,
            budget=600,
            overrides={**sets, "bonus": "extension_examples:reward_range"},
        ),
        tmp_path / "own",
        progress=False,
    )
    paper = run_training(
        resolve("halfcheetah-rp1-fixed05", seed=0, budget=600, overrides=sets),
        tmp_path / "paper",
        progress=False,
    )
    own_bonus, paper_bonus = (float(read_rows(run)[1]["bonus"]) for run in (own, paper))
    assert own_bonus > 0 and paper_bonus > 0 and own_bonus != paper_bonus


# --- a new method ---------------------------------------------------------------------------------

OWN = "extension_examples:RANGE"
"""What ``RP1_METHODS`` holds in these tests: RP1 with the reward range as its bonus."""


@pytest.fixture
def own_method(monkeypatch):
    """``RP1_METHODS`` names :data:`OWN` in this process and the processes it starts."""
    monkeypatch.setenv(METHODS_VARIABLE, OWN)


@pytest.fixture
def no_registered_methods(monkeypatch):
    """The rows ``register_method`` adds go away after the test."""
    monkeypatch.setattr(method_table, "_REGISTERED", {})


@pytest.mark.slow
def test_a_method_of_ones_own_has_presets_trains_and_is_reported(own_method, tmp_path):
    """RP1_METHODS=extension_examples:RANGE: the presets <task>-rp1-range are the row's config,
    ``--method`` takes it, a tiny run trains with it (the bandit's λ, the bonus of its own), and
    the report counts its runs under its name with the adaptive methods' λ analysis."""
    assert "RP1 (reward range)" in preset_descriptions()["hopper-rp1-range"]
    hopper = resolve("hopper-rp1-range")
    assert (hopper.lam.mode, hopper.collect.alpha, hopper.bonus) == (
        "adaptive",
        0.0005,
        "extension_examples:reward_range",
    )
    assert env_config("Pendulum-v1", "rp1-range").preset == "Pendulum-v1-rp1-range"
    cfg = resolve(
        "halfcheetah-rp1-range", seed=0, budget=900, overrides={**TINY, "collect.alpha": "0"}
    )
    run = run_training(cfg, tmp_path / "runs" / "halfcheetah-rp1-range" / "seed0", progress=False)
    rows = read_rows(run)
    assert [int(r["iteration"]) for r in rows] == [0, 1, 2] and all(
        float(r["bonus"]) > 0 for r in rows[1:]
    )
    assert (run / "finished").exists()
    written = {path.name: path for path in write_report(tmp_path / "runs", tmp_path / "report")}
    assert "| halfcheetah | paper | rp1-range | 1 | 0 |" in written["index.md"].read_text()
    assert set(pd.read_csv(written["fig2_lambda.csv"])["method"]) == {"rp1-range"}


def test_the_report_pools_and_names_a_method_of_ones_own(own_method, monkeypatch):
    """An rp1 run with the reward range as its bonus ran rp1-range's config: the report pools it
    there, labels it with the row's label and a colour of its own; a process without
    RP1_METHODS keeps the run's name."""
    pooled = resolve("hopper-rp1", overrides={"bonus": "extension_examples:reward_range"}).to_dict()
    assert run_cell(pooled) == "rp1-range" and "rp1-range" in adaptive_lambda()
    assert figures.label("rp1-range", "small") == "RP1 (reward range) (small)"
    assert figures.color("rp1-range") not in figures.METHOD_COLORS.values()
    monkeypatch.delenv(METHODS_VARIABLE)
    assert run_cell(pooled) == "rp1" and figures.label("rp1-range") == "rp1-range"


def test_register_method_adds_a_row_to_this_process(no_registered_methods):
    """The same row again, or also named by RP1_METHODS, changes nothing."""
    assert register_method(RANGE) is RANGE and register_method(RANGE) is RANGE
    assert method_names()[-2:] == ("rp1-range", "modelfree")
    assert resolve("swimmer-rp1-range").bonus == "extension_examples:reward_range"


def test_rp1_methods_and_register_method_may_name_the_same_row(no_registered_methods, own_method):
    register_method(RANGE)
    assert list(model_based_methods())[-1] == "rp1-range"


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        (
            Method("rp1", "Mine", "fixed", 0.3, True),
            "method 'rp1': another row has this name (RP1)",
        ),
        (Method("modelfree", "Mine", "fixed", 0.3, True), "the presets <task>-modelfree are rp1's"),
        (Method("quick", "Mine", "fixed", 0.3, True), "the presets <task>-quick are rp1's"),
        (Method("my method", "Mine", "fixed", 0.3, True), "a name must match"),
        (
            Method("mine", "Mine", "sometimes", 0.3, True),
            "lam must be adaptive or fixed, got 'sometimes'",
        ),
        (Method("mine", "Mine", "fixed", 1.5, True), "lam_value must be in [0, 1], got 1.5"),
        (Method("mine", "", "fixed", 0.3, True), "label must be a non-empty string"),
        (
            Method("mine", "Mine", "fixed", 0.3, True, short_label=""),
            "short_label must be None or a non-empty string, got ''",
        ),
        ("rp1-range", "a method is an rp1.config.Method, got a str"),
    ],
)
def test_a_bad_row_is_a_config_error(row, fragment, no_registered_methods):
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        register_method(row)
    assert "mine" not in model_based_methods()


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (
            "no_such_module_here:ROW",
            "RP1_METHODS 'no_such_module_here:ROW': cannot import no_such_module_here",
        ),
        ("extension_examples:MISSING", "module extension_examples has no attribute 'MISSING'"),
        (
            "extension_examples:NOT_A_FUNCTION",
            "RP1_METHODS: a method is an rp1.config.Method, got a float",
        ),
        ("extension_examples", "expected package.module:attribute"),
    ],
)
def test_rp1_methods_that_name_no_row_are_one_line_before_any_command(
    value, fragment, monkeypatch, capsys
):
    monkeypatch.setenv(METHODS_VARIABLE, value)
    code, err = run_cli(["envs", "halfcheetah"], capsys)
    one_error(code, err, 2, fragment)


@pytest.mark.slow
def test_another_process_knows_the_methods_rp1_methods_names():
    """``rp1 presets`` in a process of its own (as ``rp1 train`` and a sweep's workers are): the
    variable is all it needs."""
    done = subprocess.run(
        [sys.executable, "-m", "rp1", "presets"],
        env=subprocess_env(RP1_METHODS=OWN),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "ant-rp1-range" in done.stdout
        and "RP1 (reward range): " in done.stdout
        and "(a method of one's own)" in done.stdout
    )


@pytest.mark.slow
def test_a_method_of_ones_own_in_another_process_a_sweeps_worker_and_the_report(
    own_method, tmp_path, capsys
):
    """``rp1 train`` in another process, killed after its second row; a sweep resumes the run in
    its spawned worker and finishes it; ``rp1 report`` counts it under its name."""
    sweep = tmp_path / "sweep"
    run = sweep / "halfcheetah-rp1-range" / "seed0"
    sets = set_args(tiny_sets(collect__alpha="0"))
    kill_at_pause(
        [
            "train",
            "--preset",
            "halfcheetah-rp1-range",
            "--out",
            str(run),
            "--budget",
            "900",
            "--quiet",
            *sets,
        ],
        tmp_path / "ready",
        "--pause-after-row",
        "2",
    )
    assert len(read_rows(run)) == 2 and not (run / "finished").exists()
    assert (
        main(
            [
                "sweep",
                "--presets",
                "halfcheetah-rp1-range",
                "--seeds",
                "0",
                "--budget",
                "900",
                "--workers",
                "1",
                "--out",
                str(sweep),
                *sets,
            ]
        )
        == 0
    )
    assert "resume halfcheetah-rp1-range seed 0" in (run / "log.txt").read_text()
    assert [int(r["iteration"]) for r in read_rows(run)] == [0, 1, 2] and (
        run / "finished"
    ).exists()
    assert main(["report", str(sweep), "--out", str(tmp_path / "report")]) == 0
    assert (
        "| halfcheetah | paper | rp1-range | 1 | 0 |"
        in (tmp_path / "report" / "index.md").read_text()
    )
