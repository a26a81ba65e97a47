"""Host-side (NumPy) store of real transitions, split into training and validation (algorithm.md §2).

The fit receives fixed-capacity arrays (:class:`Dataset`): the rows are padded with zeros up to a
size bucket (a power of two, at least 1,024) and carry the number of valid rows, so the compiled
fit is reused while the data grows inside a bucket instead of recompiling every outer iteration.

Example::

    store = TransitionStore(obs_dim=18, act_dim=6)
    store.add_phase(episodes)       # first ⌊n/3⌋ episodes (at least one) -> validation
    train = store.train_set(np.random.default_rng(0))
    val = store.val_set()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from rp1.core.transitions import Transitions

MIN_CAPACITY = 1024
MAX_TRAIN_SAMPLES = 200_000  # algorithm.md §3: the fit subsamples beyond this many training rows
MIN_VAL_ROLLOUTS = 1  # see validation_rollouts; 0 is the literal ⌊n/3⌋ rule
_FIELDS = ("obs", "act", "rew", "next_obs", "done")


class Dataset(NamedTuple):
    """Padded transitions for the compiled fit: rows ``>= count`` are zeros and never used.

    ``obs [C, obs_dim]``, ``act [C, act_dim]``, ``next_obs [C, obs_dim]``, ``rew [C]`` (float32),
    ``done [C]`` (float32, 1 where the episode terminated), ``count []`` (int32, valid rows), with
    ``C = bucket_capacity(count)``. Only a model with learned heads reads ``rew`` and ``done``.
    """

    obs: np.ndarray
    act: np.ndarray
    next_obs: np.ndarray
    rew: np.ndarray
    done: np.ndarray
    count: np.ndarray  # type: ignore[assignment]  # a field named count shadows tuple.count (public name)


def bucket_capacity(n: int) -> int:
    """The smallest power of two ``>= n``, at least :data:`MIN_CAPACITY`."""
    return max(MIN_CAPACITY, 1 << max(n - 1, 0).bit_length())


def padded_rows(x: np.ndarray) -> np.ndarray:
    """``x [N, ...]`` as float32, padded with zero rows to ``bucket_capacity(N)`` rows."""
    out = np.zeros((bucket_capacity(len(x)), *x.shape[1:]), np.float32)
    out[: len(x)] = x
    return out


def padded_dataset(
    obs: np.ndarray,
    act: np.ndarray,
    next_obs: np.ndarray,
    rew: np.ndarray | None = None,
    done: np.ndarray | None = None,
) -> Dataset:
    """Pad ``obs [N, obs_dim]``, ``act [N, act_dim]``, ``next_obs [N, obs_dim]``, ``rew [N]`` and
    ``done [N]`` (both zeros when ``None``) with zero rows to ``bucket_capacity(N)`` rows."""
    n = len(obs)
    rew = np.zeros(n) if rew is None else rew
    done = np.zeros(n) if done is None else done
    if not len(act) == len(next_obs) == len(rew) == len(done) == n:
        raise ValueError(
            f"obs, act, next_obs, rew, done need the same rows, "
            f"got {n}, {len(act)}, {len(next_obs)}, {len(rew)}, {len(done)}"
        )
    obs, act, next_obs, rew, done = (padded_rows(x) for x in (obs, act, next_obs, rew, done))
    return Dataset(obs, act, next_obs, rew, done, np.asarray(n, np.int32))


def transitions_dataset(t: Transitions) -> Dataset:
    """Stored transitions ``t`` (``done`` set) as a padded :class:`Dataset`."""
    return padded_dataset(t.obs, t.act, t.next_obs, t.rew, t.done)


def _checked(rows: Mapping[str, Any] | Any, obs_dim: int, act_dim: int) -> Transitions:
    """Transitions from a mapping or an object with ``obs, act, rew, next_obs`` and optionally
    ``done`` (missing or ``None``: all False), cast to float32 (``done`` to bool); raises
    ``ValueError`` on inconsistent shapes."""
    if isinstance(rows, Mapping):
        get = lambda name: rows.get(name)  # noqa: E731
    else:
        get = lambda name: getattr(rows, name, None)  # noqa: E731
    columns = [np.asarray(get(name), np.float32) for name in _FIELDS[:-1]]
    done = get("done")
    n = len(columns[0])
    columns.append(np.zeros(n, bool) if done is None else np.asarray(done, bool))
    expected = ((n, obs_dim), (n, act_dim), (n,), (n, obs_dim), (n,))
    for name, x, want in zip(_FIELDS, columns, expected, strict=True):
        if x.shape != want:
            raise ValueError(f"transition field {name!r} has shape {x.shape}, expected {want}")
    return Transitions(*columns)


def _columns(t: Transitions) -> tuple[np.ndarray, ...]:
    """``t``'s arrays in field order, ``done`` set (the store's transitions come from :func:`_checked`)."""
    assert t.done is not None
    return (t.obs, t.act, t.rew, t.next_obs, t.done)


def _concat(parts: Sequence[Transitions], obs_dim: int, act_dim: int) -> Transitions:
    """Row-wise concatenation; an empty sequence gives zero-row arrays of the right widths."""
    empty = Transitions(
        np.zeros((0, obs_dim), np.float32),
        np.zeros((0, act_dim), np.float32),
        np.zeros((0,), np.float32),
        np.zeros((0, obs_dim), np.float32),
        np.zeros((0,), bool),
    )
    return Transitions(*(np.concatenate(cols) for cols in zip(empty, *parts, strict=True)))


def validation_rollouts(n: int, min_val: int) -> int:
    """How many of a phase's ``n`` rollouts go to validation: ``⌊n/3⌋`` (algorithm.md §2), raised to
    ``min_val`` as long as one rollout stays for training (``min_val = 1`` gives a two-rollout
    phase, which ``⌊2/3⌋ = 0`` would leave without validation data, one)."""
    return max(n // 3, min(min_val, n - 1))


class TransitionStore:
    """All real transitions of a run, in a training and a validation set that only grow.

    Each call to :meth:`add_phase` puts the first ``⌊n/3⌋`` of its ``n`` rollouts into validation
    and the rest into training (algorithm.md §2), but at least ``min_val`` of them while one rollout is
    left for training (:func:`validation_rollouts`).
    """

    def __init__(self, obs_dim: int, act_dim: int) -> None:
        self.obs_dim = obs_dim
        self.act_dim = act_dim
        self.train = _concat([], obs_dim, act_dim)
        self.val = _concat([], obs_dim, act_dim)

    @property
    def n_train(self) -> int:
        """Training transitions stored."""
        return len(self.train.obs)

    @property
    def n_val(self) -> int:
        """Validation transitions stored."""
        return len(self.val.obs)

    def add_phase(
        self, episodes: Sequence[Mapping[str, Any] | Any], min_val: int = MIN_VAL_ROLLOUTS
    ) -> None:
        """Add one collection phase: a list of rollouts, each with ``obs [T, obs_dim]``,
        ``act [T, act_dim]``, ``rew [T]``, ``next_obs [T, obs_dim]`` and optionally ``done [T]``."""
        parts = [_checked(e, self.obs_dim, self.act_dim) for e in episodes]
        n_val = validation_rollouts(len(parts), min_val)
        self.val = _concat([self.val, *parts[:n_val]], self.obs_dim, self.act_dim)
        self.train = _concat([self.train, *parts[n_val:]], self.obs_dim, self.act_dim)

    def transitions(self) -> Transitions:
        """Every stored transition, training rows first."""
        return _concat([self.train, self.val], self.obs_dim, self.act_dim)

    def train_set(self, rng: np.random.Generator, max_samples: int = MAX_TRAIN_SAMPLES) -> Dataset:
        """The training set, padded; beyond ``max_samples`` rows a uniform subsample without
        replacement drawn with ``rng`` (algorithm.md §3), which is left untouched otherwise."""
        t = self.train
        if self.n_train > max_samples:
            rows = np.sort(rng.choice(self.n_train, max_samples, replace=False))
            t = Transitions(*(x[rows] for x in _columns(t)))
        return transitions_dataset(t)

    def val_set(self) -> Dataset:
        """The validation set, padded."""
        return transitions_dataset(self.val)

    def state_dict(self) -> dict[str, np.ndarray | int]:
        """Everything needed to rebuild the store exactly: plain NumPy arrays and ints."""
        state: dict[str, np.ndarray | int] = {"obs_dim": self.obs_dim, "act_dim": self.act_dim}
        for split, t in (("train", self.train), ("val", self.val)):
            state.update(
                {f"{split}_{name}": x.copy() for name, x in zip(_FIELDS, _columns(t), strict=True)}
            )
        return state

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> TransitionStore:
        """The store that :meth:`state_dict` described (one saved without done flags reads them
        as all False)."""
        store = cls(int(state["obs_dim"]), int(state["act_dim"]))
        for split in ("train", "val"):
            rows = {n: state[f"{split}_{n}"] for n in _FIELDS if f"{split}_{n}" in state}
            setattr(store, split, _checked(rows, store.obs_dim, store.act_dim))
        return store
