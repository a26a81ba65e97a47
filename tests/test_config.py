"""The config package (rp1.config): every preset resolves to a valid config, ``--set`` values are
parsed by the key's type and refused as one ConfigError naming the key, ranges are enforced, a
scale comes before ``--set``, and a config survives its dict form."""

from __future__ import annotations

import pytest

from rp1.config import (
    FIXED_KEYS,
    SCALES,
    Config,
    apply_overrides,
    env_config,
    preset_registry,
    resolve,
    settable_keys,
)
from rp1.core.errors import ConfigError


@pytest.mark.parametrize("preset", sorted(preset_registry()))
def test_every_preset_resolves_to_a_valid_config_that_round_trips(preset):
    cfg = resolve(preset, seed=3)
    assert cfg.preset == preset and cfg.seed == 3
    assert Config.from_dict(cfg.to_dict()) == cfg


def test_set_values_are_parsed_by_the_keys_type():
    cfg = resolve(
        "halfcheetah-rp1",
        seed=0,
        overrides={"budget": "2e4", "policy.hidden": "64,64", "eval_episodes": "3"},
    )
    assert cfg.budget == 20_000 and isinstance(cfg.budget, int)
    assert cfg.policy.hidden == (64, 64)
    assert cfg.eval_episodes == 3


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"model.members": "x"}, r"--set model\.members=x: expected int"),
        (
            {"model.membrs": "3"},
            r"unknown --set key 'model\.membrs'; did you mean model\.members\?",
        ),
        ({"model.members": "0"}, r"model\.members must be >= 1, got 0"),
    ],
)
def test_a_bad_set_is_one_config_error_naming_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        resolve("halfcheetah-rp1", seed=0, overrides=overrides)


def test_typed_overrides_give_the_config_their_strings_give():
    """The Python API takes values as they are typed, and they mean what ``--set`` strings mean."""
    typed = {"budget": 2e4, "policy.hidden": [64, 64], "lam.decay": 1, "statistics": "eager"}
    texts = {"budget": "2e4", "policy.hidden": "64,64", "lam.decay": "1", "statistics": "eager"}
    cfg = resolve("halfcheetah-rp1", seed=0, overrides=typed)
    assert cfg == resolve("halfcheetah-rp1", seed=0, overrides=texts)
    assert isinstance(cfg.budget, int) and isinstance(cfg.lam.decay, float)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            dict(overrides={"policy.hidden": [64, "x"]}),
            r"policy\.hidden=\[64, 'x'\]: expected tuple",
        ),
        (dict(overrides={"policy.hidden": 64}), r"policy\.hidden=64: expected tuple"),
        (dict(overrides={"budget": 2.5}), r"budget=2\.5: expected int"),
        (dict(overrides={"budget": True}), r"budget=True: expected int"),
        (dict(overrides={"statistics": 3}), r"statistics=3: expected one of masked, eager"),
        (dict(overrides={3: "1"}), r"unknown --set key 3"),
        (dict(overrides=["budget=1"]), r"overrides must be a mapping"),
        (dict(seed="x"), r"seed=x: expected int"),
        (dict(seed=1.5), r"seed=1\.5: expected int"),
        (dict(scale=3), r"unknown scale 3"),
    ],
)
def test_bad_python_arguments_are_one_config_error(call, message):
    with pytest.raises(ConfigError, match=message):
        resolve("halfcheetah-rp1", **call)


def test_bad_names_are_one_config_error():
    with pytest.raises(ConfigError, match="unknown preset 3"):
        resolve(3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown method 3"):
        env_config("hopper", method=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="a task is a name, not 5"):
        env_config(5)  # type: ignore[arg-type]


def test_the_fixed_keys_cannot_be_set():
    assert not set(FIXED_KEYS) & set(settable_keys())
    cfg = resolve("halfcheetah-rp1", seed=0)
    for key in FIXED_KEYS:
        with pytest.raises(ConfigError, match=f"unknown --set key '{key}'"):
            apply_overrides(cfg, {key: "x"})


def test_a_scale_applies_before_set_and_an_unknown_scale_is_refused():
    small = resolve("halfcheetah-rp1", seed=0, scale="small")
    assert small.scale == "small"
    epochs = SCALES["small"]["model.max_epochs"]
    assert small.model.max_epochs == epochs
    overridden = resolve(
        "halfcheetah-rp1", seed=0, scale="small", overrides={"model.max_epochs": str(epochs + 1)}
    )
    assert overridden.model.max_epochs == epochs + 1
    with pytest.raises(ConfigError, match="unknown scale 'huge'; valid scales: paper, small"):
        resolve("halfcheetah-rp1", seed=0, scale="huge")
