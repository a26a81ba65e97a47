"""The store of a run's real transitions, split into training and validation (algorithm.md §2), as
padded arrays: a pytree of NumPy arrays whose shapes depend only on the size buckets.

Each split is a :class:`Dataset`: its rows padded with zeros up to a size bucket (a power of two, at
least 1,024) and the number of valid rows. The compiled fit takes the splits as they are, so it is
reused while the data grows inside a bucket instead of recompiling every outer iteration, and the
store is one pytree of arrays with the row counts as arrays, like the rest of a run's device state
(:class:`rp1.agents.model_based.RunArrays`). A store is immutable: :meth:`TransitionStore.add_phase`
returns a new one and its arrays are read-only (the training and validation sets the fit gets are
those arrays: copy one to change it), so a state that holds a store can be kept, stepped again or
written by another thread.

Example::

    store = TransitionStore.empty(obs_dim=18, act_dim=6)
    store = store.add_phase(episodes)       # first ⌊n/3⌋ episodes (at least one) -> validation
    train = store.train_set(np.random.default_rng(0))
    val = store.val_set()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from flax import struct

from rp1.config.defaults import MAX_TRAIN_SAMPLES, MIN_VAL_ROLLOUTS
from rp1.core.transitions import Transitions

MIN_CAPACITY = 1024
_FIELDS = ("obs", "act", "rew", "next_obs", "done")


class Dataset(NamedTuple):
    """Padded transitions for the compiled fit: rows ``>= n_valid`` are zeros and never used.

    ``obs [C, obs_dim]``, ``act [C, act_dim]``, ``next_obs [C, obs_dim]``, ``rew [C]`` (float32),
    ``done [C]`` (float32, 1 where the episode terminated), ``n_valid []`` (int32, valid rows), with
    ``C = bucket_capacity(n_valid)``. Only a model with learned heads reads ``rew`` and ``done``.
    """

    obs: np.ndarray
    act: np.ndarray
    next_obs: np.ndarray
    rew: np.ndarray
    done: np.ndarray
    n_valid: np.ndarray


def bucket_capacity(n: int) -> int:
    """The smallest power of two ``>= n``, at least :data:`MIN_CAPACITY`."""
    return max(MIN_CAPACITY, 1 << max(n - 1, 0).bit_length())


def padded_rows(x: np.ndarray, capacity: int | None = None) -> np.ndarray:
    """``x [N, ...]`` as float32, padded with zero rows to ``capacity`` rows (by default
    ``bucket_capacity(N)``)."""
    out = np.zeros((capacity or bucket_capacity(len(x)), *x.shape[1:]), np.float32)
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


def valid_columns(data: Dataset) -> tuple[np.ndarray, ...]:
    """The valid rows of ``data`` in the field order of :class:`Transitions` (``obs, act, rew,
    next_obs, done``; views of its arrays, ``done`` as bool)."""
    n = int(data.n_valid)
    return (data.obs[:n], data.act[:n], data.rew[:n], data.next_obs[:n], data.done[:n] > 0)


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


def _appended(data: Dataset, parts: Sequence[Transitions]) -> Dataset:
    """A new :class:`Dataset` holding the valid rows of ``data`` and then those of ``parts``,
    padded to the bucket of their number; ``data`` is left as it is."""
    n = int(data.n_valid)
    total = n + sum(len(t.obs) for t in parts)
    capacity = bucket_capacity(total)
    columns = {}
    for name in ("obs", "act", "next_obs", "rew", "done"):
        old = getattr(data, name)
        out = np.zeros((capacity, *old.shape[1:]), np.float32)
        out[:n] = old[:n]
        start = n
        for t in parts:
            out[start : start + len(t.obs)] = getattr(t, name)
            start += len(t.obs)
        out.flags.writeable = False  # a store's arrays are never written after they are made
        columns[name] = out
    return Dataset(**columns, n_valid=np.asarray(total, np.int32))


def _empty(obs_dim: int, act_dim: int) -> Dataset:
    """A :class:`Dataset` of no valid rows, :data:`MIN_CAPACITY` rows of padding."""
    return _appended(
        Dataset(
            np.zeros((0, obs_dim), np.float32),
            np.zeros((0, act_dim), np.float32),
            np.zeros((0, obs_dim), np.float32),
            np.zeros((0,), np.float32),
            np.zeros((0,), np.float32),
            np.asarray(0, np.int32),
        ),
        [],
    )


def validation_rollouts(n: int, min_val: int) -> int:
    """How many of a phase's ``n`` rollouts go to validation: ``⌊n/3⌋`` (algorithm.md §2), raised to
    ``min_val`` as long as one rollout stays for training (``min_val = 1`` gives a two-rollout
    phase, which ``⌊2/3⌋ = 0`` would leave without validation data, one)."""
    return max(n // 3, min(min_val, n - 1))


STATE_FIELDS = tuple(f"{split}_{name}" for split in ("train", "val") for name in _FIELDS)
"""The arrays of :meth:`TransitionStore.state_dict`: each split's valid rows, field by field. They
only grow, by rows appended at the end (what an incremental checkpoint relies on)."""


class TransitionStore(struct.PyTreeNode):
    """All real transitions of a run, in a training and a validation set that only grow.

    ``train_rows`` and ``val_rows`` are the splits, padded (:class:`Dataset`). Each
    :meth:`add_phase` puts the first ``⌊n/3⌋`` of its ``n`` rollouts into validation and the rest
    into training (algorithm.md §2), but at least ``min_val`` of them while one rollout is left for
    training (:func:`validation_rollouts`).
    """

    train_rows: Dataset
    val_rows: Dataset

    @classmethod
    def empty(cls, obs_dim: int, act_dim: int) -> TransitionStore:
        """A store of no transitions of ``obs_dim`` and ``act_dim`` values."""
        return cls(_empty(obs_dim, act_dim), _empty(obs_dim, act_dim))

    @property
    def obs_dim(self) -> int:
        return int(self.train_rows.obs.shape[1])

    @property
    def act_dim(self) -> int:
        return int(self.train_rows.act.shape[1])

    @property
    def n_train(self) -> int:
        """Training transitions stored."""
        return int(self.train_rows.n_valid)

    @property
    def n_val(self) -> int:
        """Validation transitions stored."""
        return int(self.val_rows.n_valid)

    @property
    def train(self) -> Transitions:
        """The training transitions, unpadded."""
        return Transitions(*valid_columns(self.train_rows))

    @property
    def val(self) -> Transitions:
        """The validation transitions, unpadded."""
        return Transitions(*valid_columns(self.val_rows))

    def add_phase(
        self, episodes: Sequence[Mapping[str, Any] | Any], min_val: int = MIN_VAL_ROLLOUTS
    ) -> TransitionStore:
        """The store with one collection phase added: a list of rollouts, each with ``obs [T,
        obs_dim]``, ``act [T, act_dim]``, ``rew [T]``, ``next_obs [T, obs_dim]`` and optionally
        ``done [T]``."""
        parts = [_checked(e, self.obs_dim, self.act_dim) for e in episodes]
        n_val = validation_rollouts(len(parts), min_val)
        return self.replace(
            train_rows=_appended(self.train_rows, parts[n_val:]),
            val_rows=_appended(self.val_rows, parts[:n_val]),
        )

    def transitions(self) -> Transitions:
        """Every stored transition, training rows first, unpadded."""
        splits = zip(valid_columns(self.train_rows), valid_columns(self.val_rows), strict=True)
        return Transitions(*(np.concatenate(cols) for cols in splits))

    def train_set(self, rng: np.random.Generator, max_samples: int = MAX_TRAIN_SAMPLES) -> Dataset:
        """The training set, padded; beyond ``max_samples`` rows a uniform subsample without
        replacement drawn with ``rng`` (algorithm.md §3), which is left untouched otherwise."""
        if self.n_train <= max_samples:
            return self.train_rows
        rows = np.sort(rng.choice(self.n_train, max_samples, replace=False))
        return transitions_dataset(Transitions(*(x[rows] for x in valid_columns(self.train_rows))))

    def val_set(self) -> Dataset:
        """The validation set, padded."""
        return self.val_rows

    def state_dict(self) -> dict[str, np.ndarray]:
        """The valid rows of each split by field (:data:`STATE_FIELDS`), NumPy arrays that
        :meth:`from_state_dict` makes the store of again."""
        columns = (*valid_columns(self.train_rows), *valid_columns(self.val_rows))
        return dict(zip(STATE_FIELDS, columns, strict=True))

    @classmethod
    def from_state_dict(
        cls, state: Mapping[str, Any], obs_dim: int, act_dim: int
    ) -> TransitionStore:
        """The store of ``obs_dim`` and ``act_dim`` values that :meth:`state_dict` described (one
        saved without done flags reads them as all False); ``ValueError`` on other shapes."""
        empty = cls.empty(obs_dim, act_dim)
        splits = {}
        for split in ("train", "val"):
            rows = {n: state[f"{split}_{n}"] for n in _FIELDS if f"{split}_{n}" in state}
            splits[f"{split}_rows"] = _appended(
                getattr(empty, f"{split}_rows"), [_checked(rows, obs_dim, act_dim)]
            )
        return cls(**splits)
