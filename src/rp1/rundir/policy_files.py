"""The files that keep a run's policies, ``RUN/policy/best.msgpack`` and ``RUN/policy/last.msgpack``
(:func:`policy_path`; :mod:`rp1.outputs.writer` says which and when), and their format.

Three policy types, from the inside out: :class:`rp1.policy.networks.Policy` is the actor-critic's
parameters alone (what PPO updates); :class:`~rp1.realenv.snapshots.PolicySnapshot` is such a policy
with its normaliser and how its agent evaluates it (what a run keeps); :class:`TrainedPolicy` is a
policy file read back with what produced it, callable on NumPy observations (what a user loads,
``rp1.load_policy``).

A policy file is sealed with a SHA-256 checksum of its content (:mod:`rp1.rundir.sealed`; an
unsealed one loads as it is); what it seals is msgpack::

    {"meta": JSON text   format, task, horizon, sizes, action bounds, the run (method, preset,
                         seed, config hash), the iteration and real samples that produced it, its
                         evaluation (return, std; null where it was not evaluated) and its replay
     "policy": {...}     the actor-critic parameters (rp1.policy.Policy as a state dict)
     "obs_norm": {...}}  the normaliser the policy reads (mean, var, count)

:class:`TrainedPolicy` is a file read back (:func:`read_policy`): calling it acts. Reading checks
everything first (checksum, metadata ranges, array shapes and dtypes, finite weights) and
allocates nothing of the sizes the file names before they are checked.

Where a run lacks a policy file, its other files say whether it wrote one: whether an rp1 that keeps
policy files made it (:func:`policies_kept`: its ``environment.json``, its ``config.json``'s
schema) and whether its ``metrics.csv`` holds a step after which it writes one
(:func:`recorded_writes`); ``rp1 evaluate`` names the cause from them.

Example::

    policy = read_policy(Path("runs/hc/seed0/policy/best.msgpack"))
    action = policy(obs)                    # [act_dim] for obs [obs_dim]; [B, act_dim] for [B, obs_dim]
    policy.eval_return, policy.samples      # what its evaluation returned, after how many samples
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
from flax import serialization

from rp1.config.migrations import SCHEMA_KEY
from rp1.config.schema import Config, PolicyConfig, declared_range
from rp1.core.errors import DamagedFile, Rp1Error
from rp1.core.normalizer import normalizer_init
from rp1.core.storage import read_bytes, read_inside, write_atomically
from rp1.envs import Task
from rp1.policy.networks import Policy, policy_init
from rp1.realenv.episodes import MeanAction
from rp1.realenv.snapshots import EVALUATORS, EvaluationEpisodes, PolicySnapshot
from rp1.rundir.checkpoints import restore_pytree
from rp1.rundir.files import (
    CONFIG,
    ENVIRONMENT,
    LAST,
    POLICY_DIR,
    RunDir,
    evaluates_trained,
)
from rp1.rundir.provenance import recorded_from
from rp1.rundir.sealed import seal, unseal

FORMAT = 1


def policy_path(run_dir: Path, which: str) -> Path:
    """The file that keeps run ``run_dir``'s ``which`` policy (:data:`~rp1.rundir.files.RUN_POLICIES`)."""
    return run_dir / POLICY_DIR / f"{which}.msgpack"


FIRST_KEEPING_SCHEMA = 7
"""The config schema of the first rp1 that kept policy files (cad4fe5, the commit after d9d9625
added schema 7's keys): a run whose config is of an earlier schema kept none; one of schema 7
written without its ``"schema"`` (before b9be267) may have."""


class Kept(NamedTuple):
    """From which iteration on a run kept its policy files (``since``, at the latest), and the
    file or folder of the run that says so (``source``)."""

    since: int
    source: str


def policies_kept(run: RunDir) -> Kept | None:
    """Whether the files of ``run`` say an rp1 that keeps policy files made it, and from when: as
    its last policy file says (its ``kept_since``), else from the first iteration its
    ``environment.json`` records (every rp1 that writes one keeps them), else from iteration 0
    where its ``policy/`` folder is there or its ``config.json`` names its schema (as every rp1
    since b9be267 does, which came after policy files); ``None`` where nothing does: a run of an
    earlier rp1 (:data:`FIRST_KEEPING_SCHEMA` says whether it surely kept none)."""
    since = _last_kept_since(run)
    if since is not None:
        return Kept(since, POLICY_DIR)
    since = recorded_from(run.path)
    if since is not None:
        return Kept(since, ENVIRONMENT)
    if (run.path / POLICY_DIR).is_dir():
        return Kept(0, POLICY_DIR)
    stored = run.read_stored_config()
    return Kept(0, CONFIG) if stored is not None and SCHEMA_KEY in stored else None


def _last_kept_since(run: RunDir) -> int | None:
    """The first iteration whose policies ``run`` kept, as its last policy file says; ``None``
    where it has none that reads (:func:`read_policy`)."""
    path = policy_path(run.path, LAST)
    if not path.is_file():
        return None
    try:
        return read_policy(path, run.path).kept_since
    except Rp1Error:  # damaged, unreadable, a link out: what ``--policy last`` would say
        return None


def recorded_writes(run: RunDir, which: str, since: int) -> int:
    """How many rows of ``run``'s ``metrics.csv`` from iteration ``since`` on are steps after which
    a run writes its ``which`` policy file or may (:mod:`rp1.outputs.writer`): every row for
    ``last``; for ``best``, every evaluation of a trained policy
    (:func:`~rp1.rundir.files.evaluates_trained`), the first of which is always written. 0 where
    the run has no ``metrics.csv``; :class:`~rp1.core.errors.DamagedFile` where it is not CSV
    text (:meth:`~rp1.rundir.files.RunDir.read_metric_rows`)."""
    _, rows = run.read_metric_rows()
    return sum(_writes(row, which, since) for row in rows)


def _writes(row: dict[str, str], which: str, since: int) -> bool:
    """Whether a run writes its ``which`` policy file, or may, after the step of metrics ``row``
    (strings, as ``metrics.csv`` holds them), if it is of iteration ``since`` or later."""
    try:
        iteration = int(row.get("iteration") or "")
    except ValueError:  # a damaged row, or the last one half written
        return False
    if iteration < since:
        return False
    return which == LAST or (evaluates_trained(iteration) and bool(row.get("eval_return")))


def _fresh_policy(obs_dim: int, act_dim: int, hidden: tuple[int, ...]) -> Policy:
    """A policy of these sizes (what :func:`read_policy` takes the shapes of, with
    :func:`jax.eval_shape`: nothing is allocated)."""
    return policy_init(jax.random.PRNGKey(0), obs_dim, act_dim, hidden)


@dataclass(frozen=True)
class TrainedPolicy:
    """A kept policy and what produced it, from [`load_policy`][rp1.evaluation.load_policy].

    `policy(obs)` acts: the deterministic action of `obs [obs_dim]` (`[act_dim]`) or
    `[B, obs_dim]` (`[B, act_dim]`), with the run's normaliser, clipped to the action bounds;
    observations are taken as float64, as environments return them (the run's evaluation saw the
    same). A `ValueError` for an observation of another shape. `print(policy)` shows what it acts
    on, what produced it and its file, not its weights.

    Attributes:
        snapshot: The actor, its normaliser and its evaluation's episodes.
        task: The task's name.
        horizon: Steps per episode.
        action_low: The action bounds, `[act_dim]`.
        action_high: The action bounds, `[act_dim]`.
        method: The run's method.
        preset: The run's preset.
        seed: The run's seed.
        iteration: The iteration (model-free: PPO update) that produced it.
        samples: Real samples it was trained on.
        eval_return: Mean return of its evaluation (`None`: not evaluated).
        eval_std: Standard deviation of its evaluation's returns.
        config_hash: The hash of the run's config as the rp1 that began the run wrote it
            (`rp1.rundir.files.config_hashes`).
        which: `"best"` or `"last"` (`""` for one not read from a file).
        kept_since: The first iteration the run's policy files saw (> 0: a run resumed without
            policy files).
        path: The file it was read from.
    """

    snapshot: PolicySnapshot
    task: str
    horizon: int  # steps per episode
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    method: str
    preset: str
    seed: int  # the run's seed
    iteration: int  # the iteration (model-free: PPO update) that produced it
    samples: int  # real samples it was trained on
    eval_return: float | None  # mean return of its evaluation (None: not evaluated)
    eval_std: float | None
    config_hash: str = ""
    which: str = ""  # best or last ("" for one not read from a file)
    # the first iteration the run's policy files saw (> 0: a run resumed without policy files)
    kept_since: int = 0
    path: Path | None = field(default=None, compare=False)

    @property
    def obs_dim(self) -> int:
        return int(self.snapshot.obs_norm.mean.shape[0])

    @property
    def act_dim(self) -> int:
        return len(self.action_low)

    @property
    def hidden(self) -> tuple[int, ...]:
        """The actor's hidden layer widths."""
        return tuple(int(w.shape[1]) for w, _ in self.snapshot.policy.actor[:-1])

    def __repr__(self) -> str:
        """A summary (:data:`SUMMARY`): the sizes, what produced the policy and its file."""
        return f"TrainedPolicy({', '.join(f'{name}={getattr(self, name)!r}' for name in SUMMARY)})"

    @cached_property
    def _actor(self) -> MeanAction:
        return self.snapshot.actor()

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, np.float64)
        if obs.ndim not in (1, 2) or obs.shape[-1] != self.obs_dim:
            raise ValueError(
                f"expected an observation [{self.obs_dim}] or a batch [B, {self.obs_dim}], got shape {obs.shape}"
            )
        action = self._actor(obs[None] if obs.ndim == 1 else obs)
        action = np.clip(
            action,
            np.asarray(self.action_low, np.float32),
            np.asarray(self.action_high, np.float32),
        )
        return action[0] if obs.ndim == 1 else action

    def meta(self) -> dict[str, Any]:
        """Everything but the arrays, as JSON-serialisable values."""
        return {
            "format": FORMAT,
            "which": self.which,
            "task": self.task,
            "horizon": self.horizon,
            "obs_dim": self.obs_dim,
            "act_dim": self.act_dim,
            "action_low": list(self.action_low),
            "action_high": list(self.action_high),
            "hidden": list(self.hidden),
            "obs_clip": float(self.snapshot.obs_norm.clip),
            "method": self.method,
            "preset": self.preset,
            "seed": self.seed,
            "config_hash": self.config_hash,
            "kept_since": self.kept_since,
            "iteration": self.iteration,
            "samples": self.samples,
            "eval_return": self.eval_return,
            "eval_std": self.eval_std,
            "evaluator": self.snapshot.evaluator,
            "replay": None if self.snapshot.replay is None else self.snapshot.replay.to_json(),
        }


SUMMARY = (
    "task",
    "obs_dim",
    "act_dim",
    "hidden",
    "preset",
    "seed",
    "which",
    "iteration",
    "samples",
    "eval_return",
    "path",
)
"""What a :class:`TrainedPolicy` shows of itself (its ``repr``, what ``print`` shows): not the
snapshot's weights, which run to tens of thousands of characters."""


def write_policy(path: Path, policy: TrainedPolicy) -> None:
    """Write ``policy`` to ``path`` atomically, sealed with its checksum (:mod:`rp1.rundir.sealed`;
    StorageError naming the file if the machine fails)."""
    data = {
        "meta": json.dumps(policy.meta()),
        "policy": serialization.to_state_dict(jax.device_get(policy.snapshot.policy)),
        "obs_norm": serialization.to_state_dict(jax.device_get(policy.snapshot.obs_norm)),
    }
    write_atomically(path, seal(data), "policy file")


META_TYPES: dict[str, type | tuple[type, ...]] = {
    "format": int,
    "which": str,
    "task": str,
    "horizon": int,
    "obs_dim": int,
    "act_dim": int,
    "action_low": list,
    "action_high": list,
    "hidden": list,
    "obs_clip": (int, float),
    "method": str,
    "preset": str,
    "seed": int,
    "config_hash": str,
    "kept_since": int,
    "iteration": int,
    "samples": int,
    "eval_return": (int, float, type(None)),
    "eval_std": (int, float, type(None)),
    "evaluator": str,
    "replay": (dict, type(None)),
}
"""The metadata a policy file holds (:meth:`TrainedPolicy.meta`): each key and its JSON types."""


HORIZON = declared_range(Config, "horizon")["at_most"]
"""Steps per episode a policy file may name at most: as many as a run may have."""
EPISODES = declared_range(Config, "eval_episodes")["at_most"]
"""Episodes (and environments side by side) a policy file's replay may name at most: as many as
a run evaluates."""
WIDTHS = declared_range(PolicyConfig, "hidden")
"""The hidden layers a policy may have: their count and widths, as ``policy.hidden`` allows."""


def check_meta(meta: Any) -> None:
    """``ValueError`` saying what is wrong unless ``meta`` is the metadata of a policy file of
    :data:`FORMAT`: a map with every key of :data:`META_TYPES`, of its type, in its range (the
    horizon in ``[1, HORIZON]``, hidden layers as ``policy.hidden`` allows, counters >= 0, finite
    action bounds, a replay of at most :data:`EPISODES` episodes), sizes that fit together and a
    known evaluator. Allocates nothing of the sizes it names."""
    if not isinstance(meta, dict):
        raise ValueError(f"its metadata is a {type(meta).__name__}, not a map")
    if meta.get("format") != FORMAT:
        raise ValueError(f"format {_short(meta.get('format'))}, expected {FORMAT}")
    missing = [key for key in META_TYPES if key not in meta]
    if missing:
        raise ValueError(f"its metadata lacks {', '.join(missing)}")
    wrong = [
        key
        for key, types in META_TYPES.items()
        if not isinstance(meta[key], types) or isinstance(meta[key], bool)
    ]
    if wrong:
        raise ValueError(
            f"its metadata has {', '.join(f'{key} = {_short(meta[key])}' for key in wrong)}, of the wrong type"
        )
    _check_range(meta, "horizon", 1, HORIZON)
    for key in ("seed", "iteration", "samples", "kept_since"):
        _check_range(meta, key, 0, None)
    if not (
        meta["obs_dim"] >= 1
        and meta["act_dim"] >= 1
        and len(meta["action_low"]) == len(meta["action_high"]) == meta["act_dim"]
    ):
        raise ValueError(
            f"its sizes do not fit together (obs_dim {meta['obs_dim']}, act_dim {meta['act_dim']}, action bounds of {len(meta['action_low'])} and {len(meta['action_high'])})"
        )
    bounds = [*meta["action_low"], *meta["action_high"]]
    if not all(_finite_number(b) for b in bounds) or not all(
        low <= high for low, high in zip(meta["action_low"], meta["action_high"], strict=True)
    ):
        raise ValueError("its action bounds are not finite numbers with low <= high")
    if not 1 <= len(meta["hidden"]) <= WIDTHS["layers"] or not all(
        isinstance(width, int) and 1 <= width <= WIDTHS["at_most"] for width in meta["hidden"]
    ):
        raise ValueError(
            f"its hidden layer widths {_short(meta['hidden'])} are not 1 to {WIDTHS['layers']} integers in [1, {WIDTHS['at_most']}]"
        )
    if not meta["obs_clip"] > 0:
        raise ValueError(f"its observation clip {meta['obs_clip']} is not > 0")
    if meta["evaluator"] not in EVALUATORS:
        raise ValueError(f"unknown evaluator {_short(meta['evaluator'])}")
    if meta["replay"] is not None:
        check_replay(meta["replay"])


def check_replay(replay: dict[str, Any]) -> None:
    """``ValueError`` unless ``replay`` is an :meth:`EvaluationEpisodes.to_json`: 1 to
    :data:`EPISODES` episodes in 1 to :data:`EPISODES` slots, reset from as many seeds as episodes
    (integers in ``[0, 2**32)``) or from one generator state per slot."""
    for key in ("slots", "episodes"):
        value = replay.get(key)
        if type(value) is not int or not 1 <= value <= EPISODES:
            raise ValueError(f"its replay's {key} = {_short(value)} is not in [1, {EPISODES}]")
    seeds, states, source = replay.get("seeds"), replay.get("rng_states"), replay.get("seed_source")
    if seeds is not None:
        if not isinstance(seeds, list) or len(seeds) != replay["episodes"]:
            raise ValueError(
                f"its replay has {_short(seeds)} for {replay['episodes']} episodes' seeds"
            )
        if not all(type(seed) is int and 0 <= seed < 2**32 for seed in seeds):
            raise ValueError("its replay's seeds are not integers in [0, 2**32)")
    elif not (
        isinstance(states, list)
        and len(states) == replay["slots"]
        and all(isinstance(state, dict) for state in states)
    ):
        raise ValueError("its replay has neither seeds nor a generator state per slot")
    if source is not None and not (
        isinstance(source, list) and len(source) == 3 and all(type(v) is int for v in source)
    ):
        raise ValueError(f"its replay's seed source {_short(source)} is not three integers")


def _check_range(meta: dict[str, Any], key: str, low: int, high: int | None) -> None:
    value = meta[key]
    if value < low or (high is not None and value > high):
        where = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"its {key} = {_short(value)} is not {where}")


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…"


def read_policy(path: Path, run_dir: Path | None = None) -> TrainedPolicy:
    """The policy :func:`write_policy` wrote to ``path``, its checksum checked (an unsealed
    file is read as it is); :class:`~rp1.core.errors.DamagedFile` (a
    ConfigError) naming the file and what is wrong if it is not one, its checksum does not match,
    its metadata is out of range (:func:`check_meta`) or an array is of another shape or dtype than
    the metadata says, or holds inf or NaN; StorageError if it cannot be read;
    :class:`~rp1.core.errors.LinkOutside` if it is a link out of ``run_dir`` (given for a run's
    policy file). Everything is checked here: the policy returned acts."""
    raw = (
        read_bytes(path, "policy file")
        if run_dir is None
        else read_inside(run_dir, path, "policy file")
    )
    data, _ = unseal(raw, path, "policy file")
    try:
        if not isinstance(data.get("meta"), str):
            raise ValueError("not a map holding its metadata as JSON text")
        meta = json.loads(data["meta"])
        check_meta(meta)
        sizes = (meta["obs_dim"], meta["act_dim"], tuple(meta["hidden"]))
        policy = restore_pytree(jax.eval_shape(partial(_fresh_policy, *sizes)), data["policy"])
        obs_norm = restore_pytree(
            jax.eval_shape(partial(normalizer_init, meta["obs_dim"], meta["obs_clip"])),
            data["obs_norm"],
        )
        replay = None if meta["replay"] is None else EvaluationEpisodes.from_json(meta["replay"])
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise DamagedFile(
            f"policy file {path} is damaged or not an rp1 policy file ({type(err).__name__}: {err})"
        ) from None
    return TrainedPolicy(
        snapshot=PolicySnapshot(policy, obs_norm, meta["evaluator"], replay),
        task=meta["task"],
        horizon=meta["horizon"],
        action_low=tuple(meta["action_low"]),
        action_high=tuple(meta["action_high"]),
        method=meta["method"],
        preset=meta["preset"],
        seed=meta["seed"],
        iteration=meta["iteration"],
        samples=meta["samples"],
        eval_return=meta["eval_return"],
        eval_std=meta["eval_std"],
        config_hash=meta["config_hash"],
        which=meta["which"],
        kept_since=meta["kept_since"],
        path=path,
    )


def trained_policy(
    snapshot: PolicySnapshot, cfg: Config, task: Task, row: dict[str, Any], **fields: Any
) -> TrainedPolicy:
    """``snapshot`` of a run of ``cfg`` on ``task`` as a :class:`TrainedPolicy`, produced by the step
    of metrics ``row`` (its iteration, samples and evaluation); ``fields``: the rest of its fields
    (``config_hash`` at least)."""
    return TrainedPolicy(
        snapshot=snapshot,
        task=cfg.task,
        horizon=task.horizon,
        action_low=task.action_low,
        action_high=task.action_high,
        method=cfg.method,
        preset=cfg.preset,
        seed=cfg.seed,
        iteration=row["iteration"],
        samples=row["samples"],
        eval_return=row.get("eval_return"),
        eval_std=row.get("eval_std"),
        **fields,
    )
