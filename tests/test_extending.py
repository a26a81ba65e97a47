"""EXTENDING.md's recipes, carried out from outside rp1 through its extension points."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from helpers import TINY, read_rows
from rp1.config import resolve
from rp1.errors import ConfigError
from rp1.imagination import bonus_function
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
    own = run_training(resolve("halfcheetah-rp1-fixed05", seed=0, budget=600, overrides={**sets, "bonus": "extension_examples:reward_range"}), tmp_path / "own", progress=False)
    paper = run_training(resolve("halfcheetah-rp1-fixed05", seed=0, budget=600, overrides=sets), tmp_path / "paper", progress=False)
    own_bonus, paper_bonus = (float(read_rows(run)[1]["bonus"]) for run in (own, paper))
    assert own_bonus > 0 and paper_bonus > 0 and own_bonus != paper_bonus
