"""The config package (rp1.config): every preset resolves to a valid config, ``--set`` values are
parsed by the key's type and refused as one ConfigError naming the key, ranges are enforced, a
scale comes before ``--set``, and a config survives its dict form."""

from __future__ import annotations

import dataclasses

import pytest

from rp1.config import (
    FIXED_KEYS,
    SCALES,
    Config,
    LambdaConfig,
    ModelConfig,
    apply_overrides,
    env_config,
    preset_registry,
    resolve,
    settable_keys,
    validate,
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
        # numbers beyond a float's range, or any whole number's, where an int is expected
        (
            dict(overrides={"collect.phase_cap": 10**400}),
            r"collect\.phase_cap must be <= 100,000,000",
        ),
        (dict(overrides={"model.hidden": [10**400]}), r"model\.hidden must be <= 16,384"),
        (
            dict(overrides={"collect.phase_cap": 1e300}),
            r"collect\.phase_cap must be <= 100,000,000",
        ),
        (dict(overrides={"collect.phase_cap": 1e400}), r"collect\.phase_cap=inf: expected int"),
        (dict(overrides={"model.hidden": [1e400]}), r"model\.hidden=inf: expected int"),
        (
            dict(overrides={"lam.value": 10**400}),
            r"lam\.value=10+… \(401 characters\): too large for a float",
        ),
        (
            dict(overrides={"lam.arms": [0, -(10**400)]}),
            r"lam\.arms=-10+… \(402 characters\): too large",
        ),
        (dict(seed=10**400), r"seed must be in \[0, 2143289344\) \(2\*\*31 - 2\*\*22\), got 10+…"),
        (dict(budget=10**400), r"budget must be <= 1,000,000,000"),
        (dict(budget=10**5000), r"got a value too long to write out \(an integer of more than"),
    ],
)
def test_bad_python_arguments_are_one_config_error(call, message):
    with pytest.raises(ConfigError, match=message):
        resolve("halfcheetah-rp1", **call)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(budget=2e4), r"budget=20000\.0: expected int"),
        (dict(seed="1"), r"seed='1': expected int"),
        (dict(eval_episodes=True), r"eval_episodes=True: expected int"),
        (dict(statistics=3), r"statistics=3: expected one of masked, eager"),
        (dict(model=ModelConfig(hidden=[64, 64])), r"model\.hidden=\[64, 64\]: expected tuple"),
        (dict(model=ModelConfig(hidden=(64, 6.5))), r"model\.hidden=\(64, 6\.5\): expected tuple"),
        (dict(lam=LambdaConfig(value="0.5")), r"lam\.value='0\.5': expected float"),
    ],
)
def test_a_config_holding_a_value_of_another_type_is_one_config_error(change, message):
    """A config changed by hand (``dataclasses.replace``), not through ``overrides``, is checked
    for its fields' types too: a run gets what its schema says, or is refused."""
    cfg = dataclasses.replace(resolve("halfcheetah-rp1"), **change)
    with pytest.raises(ConfigError, match=message):
        validate(cfg)


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
