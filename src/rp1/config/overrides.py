"""``--set key=value`` overrides: the settable keys of a :class:`~rp1.config.schema.Config` and
their values parsed by the field's type."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import fields, replace

from rp1.config.schema import Config
from rp1.core.errors import ConfigError, clipped, did_you_mean, shown

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
    """``text`` (a ``--set`` value) as a value of the field type ``hint``."""
    try:
        if hint is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return text.lower() in ("true", "1", "yes")
        if typing.get_origin(hint) is typing.Literal:  # one of the names, checked by validate
            return text
        if typing.get_origin(hint) is tuple:
            return tuple(tuple_item(hint)(x) for x in text.split(",") if x.strip())
        if hint is int:
            return int(float(text)) if float(text).is_integer() else int(text)
        return hint(text)
    except (ValueError, TypeError):
        expected = SET_WORDS.get(hint, type_name(hint))
        raise ConfigError(f"--set {key}={clipped(text)}: expected {expected}") from None


SET_WORDS: dict[typing.Any, str] = {
    bool: "true or false",
    tuple[int, ...]: "comma-separated integers, as 64,64",
    tuple[float, ...]: "comma-separated numbers, as 0,0.25,0.5",
}
"""What ``--set`` takes for a field type, in words, where the type's name (:func:`type_name`) is
Python's rather than a user's."""


def _typed(value: object, hint: typing.Any, key: str) -> typing.Any:
    """``value`` (a Python value of the API's ``overrides``) as a value of the field type ``hint``,
    without conversions that lose or invent information: an ``int`` for an ``int`` field (a float
    only if whole, as ``2e4``), a number for a ``float``, a ``bool`` for a ``bool``, a ``str`` for
    a name, a list or tuple of numbers for a tuple; a string is parsed as ``--set`` parses it.
    An ``int`` of any size is taken as it is (its field's range refuses one too large); one too
    large for a ``float`` field is refused here."""
    origin = typing.get_origin(hint)
    name = hint is str or origin is typing.Literal
    if isinstance(value, str) and not name:
        return _parse(value, hint, key)
    if origin is tuple and isinstance(value, (list, tuple)):
        if all(_is_number(x) for x in value):
            return tuple(_typed(x, tuple_item(hint), key) for x in value)
    elif (hint is bool and isinstance(value, bool)) or (name and isinstance(value, str)):
        return value
    elif hint is int and _is_whole(value):
        return int(value)
    elif hint is float and _is_number(value):
        try:
            return float(value)
        except OverflowError:  # an int beyond a float's range (about 1.8e308)
            raise ConfigError(f"{key}={shown(value)}: too large for a float") from None
    raise ConfigError(f"{key}={shown(value)}: expected {type_name(hint)}")


def _is_number(value: object) -> typing.TypeGuard[int | float]:
    """Whether ``value`` is an ``int`` or a ``float`` (not a ``bool``)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_whole(value: object) -> typing.TypeGuard[int | float]:
    """Whether ``value`` is an ``int`` (not a ``bool``) or a whole ``float``, as ``2e4`` (not
    ``inf`` or ``nan``)."""
    return _is_number(value) and (isinstance(value, int) or value.is_integer())


def type_name(hint: typing.Any) -> str:
    """``int``, ``tuple[int, ...]``, ``one of a, b``: the field type ``hint`` as a user reads it."""
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(typing.get_args(hint))
    return str(hint) if typing.get_origin(hint) is not None else hint.__name__


def tuple_item(hint: typing.Any) -> typing.Any:
    """The item type ``X`` of the field type ``hint``, ``tuple[X, ...]``."""
    (item,) = {a for a in typing.get_args(hint) if a is not Ellipsis}
    return item


def of_type(value: object, hint: typing.Any) -> bool:
    """Whether ``value`` is of the field type ``hint`` as a config holds it: an ``int`` (never a
    ``bool``) for ``int``, an ``int`` or a ``float`` for ``float``, a ``bool`` for ``bool``, a
    ``str`` for a name (a ``Literal``'s names are checked as the field's choices), and a tuple of
    such for a tuple."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        return isinstance(value, tuple) and all(of_type(x, tuple_item(hint)) for x in value)
    if origin is typing.Literal:
        return isinstance(value, str)
    if hint is float:
        return _is_number(value)
    return isinstance(value, hint) and (hint is bool or not isinstance(value, bool))


def apply_overrides(cfg: Config, overrides: typing.Mapping[str, object]) -> Config:
    """``cfg`` with ``overrides`` applied: ``{"model.hidden": "64,64", "budget": "2e4"}`` as
    ``--set`` gives them (strings, parsed by the field's type), or typed, as the Python API may
    (``{"model.hidden": [64, 64], "budget": 20000}``). Raises :class:`ConfigError` for an unknown
    key or a value its field cannot take."""
    if not isinstance(overrides, typing.Mapping):
        raise ConfigError(
            f"overrides must be a mapping of key to value, not {type(overrides).__name__}"
        )
    valid = settable_keys()
    for key, value in overrides.items():
        if not isinstance(key, str) or key not in valid:
            raise ConfigError(
                f"unknown --set key {key!r}; {_closest_key(str(key), valid)}`rp1 config` lists the "
                "valid keys with their values, ranges and meanings"
            )
        section, _, name = key.rpartition(".")
        if section:
            sub = getattr(cfg, section)
            value = _typed(value, typing.get_type_hints(type(sub))[name], key)
            cfg = replace(cfg, **{section: replace(sub, **{name: value})})
        else:
            cfg = replace(cfg, **{name: _typed(value, typing.get_type_hints(Config)[name], key)})
    return cfg


def _closest_key(key: str, valid: list[str]) -> str:
    """``"did you mean K? "`` for the valid key K closest to ``key``: spelt alike, or the one key
    whose last part ``key`` is (``hidden`` for ``model.hidden``); ``""`` for none."""
    by_name = [k for k in valid if k.rpartition(".")[2] == key]
    return f"did you mean {by_name[0]}? " if len(by_name) == 1 else did_you_mean(key, valid)
