"""Switches resolved once: a string setting that selects behaviour is a ``Literal`` of the schema,
its declared choices are exactly the ``Literal``'s values, and the settings built from a config hold
the function it selects; a config's ranges are checked once, by the schema's declarations."""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest

from rp1.acquisition.bandit import BASELINES, WEIGHTINGS
from rp1.agents.settings import (
    SWITCHES,
    fit_settings,
    lambda_bandit,
    lambda_start,
    ppo_settings,
)
from rp1.config import Config, LambdaConfig, ModelConfig, PolicyConfig, resolve
from rp1.config.defaults import BONUS_NAMES
from rp1.config.schema import declared_range
from rp1.core.errors import ConfigError
from rp1.dynamics.fit import DEALINGS, STOP_RULES, FitSettings
from rp1.imagination.rollouts import BONUSES
from rp1.policy.ppo import ADVANTAGES, PPOSettings


def literal_fields() -> list[tuple[type, str, typing.Any]]:
    """``(section, field name, Literal type)`` of every field of the schema typed by a Literal."""
    found = []
    for section in (typing.get_type_hints(Config)[f.name] for f in dataclasses.fields(Config)):
        if not dataclasses.is_dataclass(section):
            continue
        hints = typing.get_type_hints(section)
        for f in dataclasses.fields(section):
            if typing.get_origin(hints[f.name]) is typing.Literal:
                found.append((section, f.name, hints[f.name]))
    return found


def test_every_literal_field_declares_exactly_its_values_as_choices():
    fields = literal_fields()
    names = {f"{section.__name__}.{name}" for section, name, _ in fields}
    assert {
        "ModelConfig.stop_on",
        "ModelConfig.dealing",
        "PolicyConfig.advantage",
        "LambdaConfig.mode",
        "LambdaConfig.weighting",
        "LambdaConfig.baseline",
    } <= names
    for section, name, hint in fields:
        choices = declared_range(section, name)["choices"]
        assert sorted(choices) == sorted(typing.get_args(hint)), name
        assert getattr(section(), name) in typing.get_args(hint)


def test_each_switch_maps_exactly_its_declared_names_and_the_bonuses_are_the_configs():
    """The config names a switch's values (rp1.config.defaults), the algorithm maps each to its
    function (rp1.agents.settings.SWITCHES): the same names, in the same order; and every field
    with declared choices but ``lam.mode`` (resolved by ``lambda_start``) and the model's sources
    and ``statistics`` (read by the agents as names) is a switch."""
    for (section, name), switch in SWITCHES.items():
        assert tuple(switch) == tuple(declared_range(section, name)["choices"]), name
    assert tuple(BONUSES) == BONUS_NAMES
    declared = {
        (section, name) for section, name, _ in literal_fields() if section is not Config
    } | {(ModelConfig, "reward"), (ModelConfig, "done")}
    assert declared - set(SWITCHES) == {
        (LambdaConfig, "mode"),
        (ModelConfig, "reward"),
        (ModelConfig, "done"),
    }


def test_settings_hold_the_function_each_switch_selects():
    cfg = resolve(
        "hopper-rp1",
        overrides={
            "model.stop_on": "dynamics",
            "model.dealing": "round-robin",
            "policy.advantage": "per-epoch",
            "lam.weighting": "exp-score",
            "lam.baseline": "including",
        },
    )
    fit = fit_settings(cfg)
    assert (fit.stop_on, fit.dealing) == (STOP_RULES["dynamics"], DEALINGS["round-robin"])
    assert ppo_settings(cfg).advantage is ADVANTAGES["per-epoch"]
    bandit = lambda_bandit(cfg, np.random.default_rng(0))
    assert (bandit.weighting, bandit.baseline) == (WEIGHTINGS["exp-score"], BASELINES["including"])
    default = resolve("hopper-rp1")
    assert fit_settings(default) == FitSettings() and ppo_settings(default) == PPOSettings()


def test_ppo_settings_take_every_field_the_policy_section_has_by_name():
    """What the policy section does not set are the paper's constants (algorithm.md §4)."""
    policy = {f.name for f in dataclasses.fields(PolicyConfig)}
    unset = {f.name for f in dataclasses.fields(PPOSettings)} - policy
    assert unset == {"gamma", "clip_eps", "value_coef", "entropy_coef"}
    cfg = resolve("hopper-rp1", overrides={"policy.epochs": "3"})
    assert ppo_settings(cfg) == PPOSettings(epochs=3)
    model = {f.name for f in dataclasses.fields(ModelConfig)}
    assert {f.name for f in dataclasses.fields(FitSettings)} <= model


def test_lambda_mode_gives_the_bandit_or_the_fixed_value():
    rng = np.random.default_rng(0)
    bandit, lam = lambda_start(resolve("hopper-rp1"), rng)
    assert bandit is not None and bandit.rng is rng and lam == 0.0
    assert lambda_start(resolve("hopper-vr"), rng) == (None, 0.5)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("model.batch_size", "0", "model.batch_size must be >= 1, got 0"),
        ("model.check_every", "0", "model.check_every must be >= 1, got 0"),
        ("model.patience", "0", "model.patience must be >= 1, got 0"),
        ("model.max_epochs", "0", "model.max_epochs must be >= 1, got 0"),
        ("model.stop_on", "heads", "model.stop_on must be one of any, dynamics, got 'heads'"),
        (
            "model.dealing",
            "dealt",
            "model.dealing must be one of shuffle, round-robin, got 'dealt'",
        ),
        ("policy.epochs", "0", "policy.epochs must be >= 1, got 0"),
        ("policy.advantage", "gae", "policy.advantage must be one of fixed, per-epoch, got 'gae'"),
        ("lam.eps", "1.5", r"lam.eps must be in \[0, 1\], got 1.5"),
        ("lam.decay", "1.1", r"lam.decay must be in \[0, 1\], got 1.1"),
        (
            "lam.weighting",
            "other",
            "lam.weighting must be one of probability, exp-score, got 'other'",
        ),
        ("lam.baseline", "other", "lam.baseline must be one of previous, including, got 'other'"),
        ("lam.mode", "other", "lam.mode must be one of adaptive, fixed, got 'other'"),
    ],
)
def test_a_value_out_of_its_declared_range_is_refused_in_one_line(key, value, message):
    with pytest.raises(ConfigError, match=f"^{message}$"):
        resolve("hopper-rp1", overrides={key: value})


def test_a_switch_read_from_config_json_is_resolved_as_one_set_by_hand():
    data = resolve("hopper-rp1", overrides={"model.dealing": "round-robin"}).to_dict()
    data.pop("schema")
    cfg = Config.from_dict(data)
    assert cfg.model.dealing == "round-robin"
    assert fit_settings(cfg).dealing is DEALINGS["round-robin"]
    assert (type(cfg.model), "dealing") in SWITCHES
