"""Config schema versions: which keys each rp1 wrote into a run's config, and how this rp1 reads
a config written by an earlier one.

Every config dict rp1 writes (``config.json``, the checkpoint's copy) holds ``"schema": SCHEMA``.
The schemas of the rp1s that wrote no version are numbered here after the fact, by the keys each
added (the commit that added them in parentheses):

====== =========================================================================================
schema keys added
====== =========================================================================================
1      the first config (84218a5): :data:`BASE_KEYS`
2      ``collect.min_val_rollouts``, ``modelfree.*`` (6fcdb11)
3      ``scale``, ``lam.first_feedback`` (7ff14ea)
4      ``horizon`` (2a3e9d5)
5      ``model.reward``, ``model.done``, ``model.head_hidden`` (c65270e)
6      ``model.stop_on`` (e3ee337)
7      ``lam.baseline``, ``lam.g_normalizers``, ``policy.advantage``, ``policy.restore_best``
       (d9d9625); from here on written as ``"schema": 7``
8      ``eval.every``: the evaluation grid
9      ``model.dealing``
10     ``statistics``
====== =========================================================================================

Reading a stored config (:func:`migrate`) fills each key it lacks with the value that reproduces
what the rp1 that wrote it did (:data:`ADDED`); keys it has are never changed. A command that
continues such a run takes those values too (:func:`continued`): the run keeps its behaviour. A config without
``"schema"`` was written before versions were recorded: its schema is the latest whose keys it all
has (:func:`written_schema`). A config of a newer schema than this rp1's is refused
(:class:`NewerSchema`).

A changed default needs no entry: a config holds every key of its schema, so a run keeps the value
it started with. What does need one is every new key (a test fails without it), with the value
that gives the behaviour from before the key existed, and ``SCHEMA`` one higher; a change of what a
stored value means needs a new key. A new key is its field in :mod:`rp1.config.schema`, declared
with its range (``ranged``), and that entry: validation and the tests read both. Runs of schemas below :data:`CONTINUABLE_FROM` cannot be
continued (see there).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rp1.core.errors import ConfigError

SCHEMA = 10
"""The schema this rp1 writes."""

SCHEMA_KEY = "schema"

BASE_KEYS = frozenset(
    {
        "preset", "task", "method", "seed", "budget", "bonus", "eval_episodes",
        "model.members", "model.hidden", "model.lr", "model.batch_size", "model.check_every",
        "model.patience", "model.max_epochs", "model.max_train_samples",
        "policy.hidden", "policy.action_std", "policy.lr", "policy.batch_steps", "policy.epochs",
        "policy.max_updates", "policy.first_check",
        "collect.phase_cap", "collect.alpha", "collect.noise_max", "collect.share",
        "lam.mode", "lam.value", "lam.arms", "lam.lr", "lam.eps", "lam.decay", "lam.window",
        "lam.weighting",
    }
)  # fmt: skip
"""The keys of schema 1 (dotted for nested sections)."""


@dataclass(frozen=True)
class Added:
    """A key first written in ``schema``; ``before`` reproduces what rp1 did before it existed."""

    key: str
    schema: int
    before: Any


ADDED = (
    Added("collect.min_val_rollouts", 2, 0),  # the literal ⌊n/3⌋ validation split
    # no model-free method before: unused (the values it came with)
    Added("modelfree.workers", 2, 1),
    Added("modelfree.envs", 2, 10),
    Added("modelfree.eval_every", 2, 5),
    Added("scale", 3, "paper"),  # a label (rp1 report counts such runs as paper scale)
    Added("lam.first_feedback", 3, "include"),  # the initial phase's G entered the bandit's window
    Added("horizon", 4, 0),  # the task's own
    # before heads: the task's function (a task without one failed)
    Added("model.reward", 5, "auto"),
    Added("model.done", 5, "auto"),
    Added("model.head_hidden", 5, [200, 200]),  # no heads before: unused (the value it came with)
    Added("model.stop_on", 6, "any"),  # early stopping counted the dynamics and the heads
    Added("lam.baseline", 7, "including"),  # Ĝ's mean included the current G
    Added("lam.g_normalizers", 7, "inputs"),  # G measured before the delta normaliser's refresh
    Added("policy.advantage", 7, "fixed"),
    Added("policy.restore_best", 7, True),
    Added("eval.every", 8, 0),  # no evaluation grid
    Added("model.dealing", 9, "shuffle"),  # every member trained on every row
    # the normalisers' statistics over the data as it was, compiled per row count
    Added("statistics", 10, "eager"),
)
"""One entry per key added since schema 1, oldest first."""

CONTINUABLE_FROM = 5
"""The oldest schema whose checkpoints this rp1 continues (as the rp1 that wrote them would have).
Older checkpoints are in layouts this rp1 does not read: an ensemble without learned heads (before
c65270e, schema 4), the agents' layout before 76fc41a (schemas up to 4); and runs of schemas 1
and 2 drew from other random streams (before 7ff14ea). Such a run is not resumed; it can start
afresh (its config values still reproduce it from the start, schema 3 on), and ``rp1 report``
reads what it wrote."""


class NewerSchema(ConfigError):
    """A config written by a newer rp1 than this one (exit code 2)."""


def check_continuable(config: dict[str, Any], source: str) -> None:
    """ConfigError unless a checkpoint written with ``config`` (read from ``source``) is of a
    schema this rp1 continues (:data:`CONTINUABLE_FROM`)."""
    schema = written_schema(config, source)
    if schema < CONTINUABLE_FROM:
        raise ConfigError(
            f"{source} was written by an rp1 of config schema {schema}, whose checkpoints this rp1 cannot continue "
            f"(schemas {CONTINUABLE_FROM} to {SCHEMA}); pass --overwrite to start the run afresh"
        )


def written_schema(config: dict[str, Any], source: str = "config") -> int:
    """The schema ``config`` was written in: its ``"schema"``, or for a config written before
    versions were recorded, the latest schema whose added keys it all has. ConfigError if
    ``"schema"`` is not a positive integer."""
    if SCHEMA_KEY in config:
        schema = config[SCHEMA_KEY]
        if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
            raise ConfigError(f"{source}: schema must be a positive integer, got {schema!r}")
        return schema
    present = {key for key, _ in _dotted(config)}
    schema = 1
    while schema < SCHEMA and all(e.key in present for e in ADDED if e.schema == schema + 1):
        schema += 1
    return schema


def migrate(config: dict[str, Any], source: str = "config") -> dict[str, Any]:
    """``config`` as this rp1 reads it: a copy with each key added after its schema and missing
    there set to the value of :data:`ADDED` and ``"schema": SCHEMA``; keys it has stay as they are.
    :class:`NewerSchema` (naming ``source`` and both schemas) if it is newer than this rp1."""
    schema = written_schema(config, source)
    if schema > SCHEMA:
        raise NewerSchema(
            f"{source} was written by a newer rp1 (config schema {schema}; this rp1 reads schemas up "
            f"to {SCHEMA}): upgrade rp1 to use it"
        )
    out = copy.deepcopy(config)
    for key, value in filled(config).items():
        section, _, name = key.rpartition(".")
        target = out.setdefault(section, {}) if section else out
        if isinstance(target, dict):
            target[name] = copy.deepcopy(value)
    out[SCHEMA_KEY] = SCHEMA
    return {SCHEMA_KEY: out.pop(SCHEMA_KEY), **out}


def filled(config: dict[str, Any]) -> dict[str, Any]:
    """``{key: value}`` that :func:`migrate` adds to ``config``: the keys added after its schema
    that it lacks."""
    schema = written_schema(config)
    present = {key for key, _ in _dotted(config)}
    return {e.key: e.before for e in ADDED if e.schema > schema and e.key not in present}


def written_as(config: dict[str, Any], schema: int) -> dict[str, Any] | None:
    """``config`` (as this rp1 reads it, :func:`migrate`) as an rp1 of ``schema`` wrote it: without
    the keys added after ``schema`` (and the sections they leave empty), or ``None`` if one of them
    holds another value than the one that reproduces that rp1 (:data:`ADDED`): no rp1 of
    ``schema`` wrote it. Its ``"schema"`` is left out."""
    out = copy.deepcopy({k: v for k, v in config.items() if k != SCHEMA_KEY})
    for entry in ADDED:
        if entry.schema <= schema:
            continue
        section, _, name = entry.key.rpartition(".")
        target = out.get(section, {}) if section else out
        if name not in target:
            continue
        if target.pop(name) != entry.before:
            return None
        if section and not target:
            del out[section]
    return out


def continued(config: dict[str, Any], stored: dict[str, Any] | None) -> dict[str, Any]:
    """``config`` as it continues the run whose config is ``stored`` (as written; ``None``: there
    is no run, ``config`` as it is): each key the run's rp1 did not write takes the value that
    reproduces what that rp1 did (:func:`filled`), whatever ``config`` says, so a run keeps its
    behaviour across an upgrade; every other key stays ``config``'s, to be compared with the run."""
    if stored is None:
        return config
    out = copy.deepcopy(config)
    for key, value in filled(stored).items():
        section, _, name = key.rpartition(".")
        target = out.setdefault(section, {}) if section else out
        target[name] = copy.deepcopy(value)
    return out


def continued_note(config: dict[str, Any], stored: dict[str, Any]) -> str:
    """One line for a command whose ``config`` continues the run of ``stored`` (as written) of an
    earlier schema, whose config is then written at :data:`SCHEMA` (which the rp1 that began it
    refuses as newer), and which takes other values than the command asked for
    (:func:`continued`): which, as ``--set`` items; ``""`` for a run of this schema."""
    schema = written_schema(stored)
    if schema == SCHEMA:
        return ""
    wanted = dict(_dotted(config))
    items = [
        f"{key}={_as_set(value)}"
        for key, value in filled(stored).items()
        if wanted.get(key, value) != value
    ]
    return (
        f"rp1: note: the run was started by an earlier rp1 (config schema {schema}): its config is "
        f"upgraded to schema {SCHEMA}, and that rp1 will no longer continue it; it continues as it ran"
        + (f", with {', '.join(items)}" if items else "")
    )


def _as_set(value: Any) -> str:
    """``value`` as ``--set`` parses it back."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def _dotted(config: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` of every leaf of ``config`` but ``"schema"``."""
    for key, value in config.items():
        if isinstance(value, dict):
            yield from _dotted(value, f"{prefix}{key}.")
        elif prefix or key != SCHEMA_KEY:
            yield f"{prefix}{key}", value
