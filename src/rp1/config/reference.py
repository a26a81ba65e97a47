"""Every config key with its value, range and meaning, from the schema: what ``rp1 config`` prints
(:func:`entries`, laid out by :mod:`rp1.core.terminal`) and the documentation's configuration page
holds (:func:`markdown_table`).

Each key's range and meaning are declared once, with its default, in :mod:`rp1.config.schema`
(:func:`~rp1.config.schema.ranged`); this module only reads and formats them.

Example::

    from rp1.config import resolve
    from rp1.config.reference import entries

    for entry in entries(resolve("halfcheetah-quick")):
        print(entry.key, entry.value, entry.range, entry.meaning)
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import fields
from typing import Any, NamedTuple

from rp1.config.overrides import FIXED_KEYS
from rp1.config.presets import SCALES
from rp1.config.schema import Config, Interval, declared_range, field_doc
from rp1.config.validation import SEED_LIMIT


class Entry(NamedTuple):
    """One config key: its dotted name, its value as ``--set`` takes it, the values it may take and
    what it means, each as text."""

    key: str
    value: str
    range: str
    meaning: str


def default_config() -> Config:
    """The schema's defaults (paper scale), with no preset, task or method."""
    return Config(preset="", task="", method="")


def entries(cfg: Config | None = None) -> list[Entry]:
    """An :class:`Entry` per key of ``cfg`` (default: :func:`default_config`), in the schema's
    order, nested sections as ``section.key``."""
    return list(_entries(cfg or default_config()))


def _entries(section: Any, prefix: str = "") -> typing.Iterator[Entry]:
    hints = typing.get_type_hints(type(section))
    for f in fields(section):
        value = getattr(section, f.name)
        if dataclasses.is_dataclass(value):
            yield from _entries(value, f"{prefix}{f.name}.")
            continue
        key = f"{prefix}{f.name}"
        declared = declared_range(type(section), f.name)
        shown = special_range(key) or format_range(declared, hints[f.name])
        yield Entry(key, format_value(value), shown, field_doc(type(section), f.name))


def special_range(key: str) -> str:
    """The range of the keys whose values are checked outside the schema (the seed, the scale),
    and of those a command sets rather than ``--set``."""
    if key == "seed":
        return f"0 to {SEED_LIMIT - 1:,}"
    if key == "scale":
        return " | ".join(SCALES)
    if key in FIXED_KEYS:
        return "(not --set)"
    return ""


def format_value(value: Any) -> str:
    """``value`` as ``--set`` takes it: a tuple as ``a,b``, a bool as ``true``/``false``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(format_value(item) for item in value)
    return "" if value == "" else str(value)


def format_range(declared: dict[str, Any], hint: Any = None) -> str:
    """A declared range (:func:`~rp1.config.schema.declared_range`) as text: ``>= 1, <= 100``,
    ``[0, 1]``, ``auto | known | learned``, ``1-16 widths, each >= 1, <= 16,384``; a bool's
    ``true | false``; ``""`` for a field that declares none."""
    if "choices" in declared:
        return " | ".join(declared["choices"])
    bounds = []
    if "at_least" in declared:
        bounds.append(f">= {_number(declared['at_least'])}")
    if "above" in declared:
        bounds.append(f"> {_number(declared['above'])}")
    if "at_most" in declared:
        bounds.append(f"<= {_number(declared['at_most'])}")
    within: Interval | None = declared.get("within")
    if within is not None:
        low = "(" if within.open_low else "["
        bounds.append(f"{low}{_number(within.low)}, {_number(within.high)}]")
    text = ", ".join(bounds)
    if "layers" in declared:
        return f"1-{declared['layers']} widths, each {text}"
    if hint is bool:
        return "true | false"
    if typing.get_origin(hint) is tuple and text:
        return f"each {text}"
    return text


SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _number(x: float) -> str:
    """``x`` as a short number: ``1``, ``0.5``, ``16,384``, ``10⁸``."""
    if float(x).is_integer() and abs(x) < 10**6:
        return f"{int(x):,}"
    exponent = len(str(int(x))) - 1 if float(x).is_integer() and x > 0 else 0
    if exponent and x == 10**exponent:
        return "10" + str(exponent).translate(SUPERSCRIPTS)
    return f"{x:g}"


def markdown_table(cfg: Config | None = None) -> str:
    """:func:`entries` as a Markdown table (the documentation's configuration page)."""
    lines = ["| key | default | range | meaning |", "|---|---|---|---|"]
    for entry in entries(cfg):
        cells = [f"`{entry.key}`", f"`{entry.value}`" if entry.value else "", _escape(entry.range)]
        lines.append(f"| {' | '.join(cells)} | {_escape(entry.meaning)} |")
    return "\n".join(lines)


def _escape(text: str) -> str:
    """``text`` as the text of a Markdown table's cell."""
    return text.replace("|", "\\|").replace("<", "&lt;")


def markdown_scales() -> str:
    """What each scale sets (:data:`~rp1.config.presets.SCALES`), as a Markdown list."""
    lines = []
    for scale, sizes in SCALES.items():
        values = ", ".join(f"`{key}={format_value(value)}`" for key, value in sizes.items())
        lines.append(f"- `{scale}`: {values or 'the defaults'}")
    return "\n".join(lines)


GENERATED = {"scales": markdown_scales, "keys": markdown_table}
"""The generated blocks of the configuration page, by name: ``<!-- generated: NAME -->`` …
``<!-- end generated -->``, each the output of its function."""


def regenerated(page: str) -> str:
    """``page`` (the configuration page's Markdown) with every generated block made anew."""
    for name, make in GENERATED.items():
        start = f"<!-- generated: {name} -->\n"
        head, found, tail = page.partition(start)
        if not found:
            raise ValueError(f"no {start.strip()} block")
        _, found, rest = tail.partition("\n<!-- end generated -->")
        if not found:
            raise ValueError(f"the {name} block has no end")
        page = f"{head}{start}{make()}\n<!-- end generated -->{rest}"
    return page


if __name__ == "__main__":  # python -m rp1.config.reference docs/configuration.md
    import sys
    from pathlib import Path

    for path in map(Path, sys.argv[1:]):
        path.write_text(regenerated(path.read_text(encoding="utf-8")), encoding="utf-8")
