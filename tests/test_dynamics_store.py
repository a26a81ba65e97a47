"""The host-side transition store: phase split, size buckets, the training cap, checkpoints."""

import numpy as np
import pytest

from rp1.core.transitions import Transitions
from rp1.dynamics import TransitionStore, bucket_capacity, padded_dataset
from rp1.dynamics.store import validation_rollouts

OBS, ACT = 3, 2


def episode(tag: float, steps: int = 10) -> dict[str, np.ndarray]:
    """A rollout whose every entry equals ``tag``, so that its rows can be traced in the store."""
    return {
        "obs": np.full((steps, OBS), tag),
        "act": np.full((steps, ACT), tag),
        "rew": np.full((steps,), tag),
        "next_obs": np.full((steps, OBS), tag),
    }


def tags(t: Transitions) -> list[float]:
    """The distinct episode tags of ``t`` in order of appearance."""
    return list(dict.fromkeys(t.obs[:, 0].tolist()))


def test_phase_puts_first_third_of_rollouts_into_validation():
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase([episode(i) for i in range(8)])  # ⌊8/3⌋ = 2
    assert tags(store.val) == [0, 1]
    assert tags(store.train) == [2, 3, 4, 5, 6, 7]
    store = store.add_phase([episode(10 + i, steps=5) for i in range(3)])  # ⌊3/3⌋ = 1
    assert tags(store.val) == [0, 1, 10]
    assert tags(store.train) == [2, 3, 4, 5, 6, 7, 11, 12]
    assert (store.n_train, store.n_val) == (70, 25)


def test_literal_rule_gives_a_phase_of_two_rollouts_no_validation_and_accepts_namedtuples():
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase([Transitions(**episode(1)), Transitions(**episode(2))], min_val=0)
    assert store.n_val == 0 and tags(store.train) == [1, 2]
    assert tags(store.transitions()) == [1, 2]


@pytest.mark.parametrize(
    ("n", "min_val", "expected"), [(1, 1, 0), (2, 0, 0), (2, 1, 1), (3, 1, 1), (9, 1, 3), (9, 4, 4)]
)
def test_validation_rollouts(n, min_val, expected):
    assert validation_rollouts(n, min_val) == expected


def test_min_val_gives_a_two_rollout_phase_one_validation_rollout():
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase([episode(1), episode(2)])  # min_val = MIN_VAL_ROLLOUTS = 1
    assert tags(store.val) == [1] and tags(store.train) == [2]


def test_rejects_inconsistent_shapes():
    bad = episode(0)
    bad["act"] = bad["act"][:-1]
    with pytest.raises(ValueError, match="'act'"):
        TransitionStore.empty(OBS, ACT).add_phase([bad])


@pytest.mark.parametrize(
    ("n", "capacity"), [(0, 1024), (1, 1024), (1024, 1024), (1025, 2048), (9000, 16384)]
)
def test_bucket_capacity(n, capacity):
    assert bucket_capacity(n) == capacity


def test_padded_dataset_pads_with_zero_rows_and_counts_valid_rows():
    rng = np.random.default_rng(0)
    obs, act, nxt = (
        rng.normal(size=(1500, OBS)),
        rng.normal(size=(1500, ACT)),
        rng.normal(size=(1500, OBS)),
    )
    d = padded_dataset(obs, act, nxt)
    assert d.obs.shape == (2048, OBS) and d.act.shape == (2048, ACT) and int(d.n_valid) == 1500
    np.testing.assert_allclose(d.next_obs[:1500], nxt.astype(np.float32))
    assert not d.obs[1500:].any() and d.obs.dtype == np.float32


def test_train_set_subsamples_uniformly_beyond_the_cap():
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase([episode(i) for i in range(30)])  # 200 training rows
    small = store.train_set(np.random.default_rng(0), max_samples=50)
    again = store.train_set(np.random.default_rng(0), max_samples=50)
    assert int(small.n_valid) == 50 and small.obs.shape[0] == 1024
    np.testing.assert_array_equal(small.obs, again.obs)
    assert set(small.obs[:50, 0]) <= set(store.train.obs[:, 0])
    full = store.train_set(np.random.default_rng(0))
    assert int(full.n_valid) == 200


def test_state_dict_round_trip_through_npz_is_exact_and_keeps_growing_identically(tmp_path):
    rng = np.random.default_rng(1)
    phase = [
        {k: rng.normal(size=v.shape) for k, v in episode(0, steps=7).items()} for _ in range(5)
    ]
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase(phase)
    state = store.state_dict()
    assert all(isinstance(v, np.ndarray) for v in state.values())
    np.savez(tmp_path / "store.npz", **state)
    with np.load(tmp_path / "store.npz") as saved:
        restored = TransitionStore.from_state_dict(saved, OBS, ACT)
    store, restored = (s.add_phase(phase[:3]) for s in (store, restored))
    for a, b in zip(store.transitions(), restored.transitions(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert (restored.n_train, restored.n_val) == (store.n_train, store.n_val)


def test_done_flags_are_kept_padded_and_round_trip_and_default_to_false(tmp_path):
    terminal = {**episode(1, steps=4), "done": np.array([0, 0, 0, 1], bool)}
    store = TransitionStore.empty(OBS, ACT)
    store = store.add_phase(
        [terminal, episode(2, steps=3)], min_val=0
    )  # the second has no done flags
    np.testing.assert_array_equal(store.train.done, [0, 0, 0, 1, 0, 0, 0])
    assert store.train.done.dtype == bool
    train = store.train_set(np.random.default_rng(0))
    np.testing.assert_array_equal(train.done[:8], [0, 0, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(train.rew[:7], store.train.rew)
    np.savez(tmp_path / "store.npz", **store.state_dict())
    with np.load(tmp_path / "store.npz") as saved:
        restored = TransitionStore.from_state_dict(saved, OBS, ACT)
    np.testing.assert_array_equal(restored.train.done, store.train.done)
    old = {k: v for k, v in store.state_dict().items() if not k.endswith("_done")}
    assert not TransitionStore.from_state_dict(
        old, OBS, ACT
    ).train.done.any()  # saved before done flags
