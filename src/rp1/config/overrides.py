"""``--set key=value`` overrides: the settable keys of a :class:`~rp1.config.schema.Config` and
their values parsed by the field's type."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import fields, replace

from rp1.config.schema import Config
from rp1.core.errors import ConfigError, clipped, did_you_mean

FIXED_KEYS = ("preset", "task", "method", "scale")  # scale: set by --scale, before any --set


def settable_keys() -> list[str]:
    """Every ``key`` accepted by :func:`apply_overrides` (dotted for nested sections)."""
    keys = []
    for f in fields(Config):
        if f.name in FIXED_KEYS:
            continue
        hint = typing.get_type_hints(Config)[f.name]
        if dataclasses.is_dataclass(hint):
            keys += [f"{f.name}.{g.name}" for g in fields(hint)]
        else:
            keys.append(f.name)
    return keys


def _parse(text: str, hint: typing.Any, key: str) -> typing.Any:
    try:
        if hint is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return text.lower() in ("true", "1", "yes")
        if typing.get_origin(hint) is typing.Literal:  # one of the names, checked by validate
            return text
        if typing.get_origin(hint) is tuple:
            (item,) = {a for a in typing.get_args(hint) if a is not Ellipsis}
            return tuple(item(x) for x in text.split(",") if x.strip())
        if hint is int:
            return int(float(text)) if float(text).is_integer() else int(text)
        return hint(text)
    except (ValueError, TypeError):
        raise ConfigError(
            f"--set {key}={clipped(text)}: expected {getattr(hint, '__name__', hint)}"
        ) from None


def apply_overrides(cfg: Config, overrides: dict[str, str]) -> Config:
    """``cfg`` with ``{"model.hidden": "64,64", "budget": "2e4"}`` applied (strings parsed by type)."""
    valid = settable_keys()
    for key, text in overrides.items():
        if key not in valid:
            raise ConfigError(
                f"unknown --set key {key!r}; {_closest_key(key, valid)}`rp1 config` lists the "
                "valid keys with their values, ranges and meanings"
            )
        section, _, name = key.rpartition(".")
        if section:
            sub = getattr(cfg, section)
            value = _parse(text, typing.get_type_hints(type(sub))[name], key)
            cfg = replace(cfg, **{section: replace(sub, **{name: value})})
        else:
            cfg = replace(cfg, **{name: _parse(text, typing.get_type_hints(Config)[name], key)})
    return cfg


def _closest_key(key: str, valid: list[str]) -> str:
    """``"did you mean K? "`` for the valid key K closest to ``key``: spelt alike, or the one key
    whose last part ``key`` is (``hidden`` for ``model.hidden``); ``""`` for none."""
    by_name = [k for k in valid if k.rpartition(".")[2] == key]
    return f"did you mean {by_name[0]}? " if len(by_name) == 1 else did_you_mean(key, valid)
