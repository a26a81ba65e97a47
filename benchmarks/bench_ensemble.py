"""Time the world model's compiled calls at paper scale (algorithm.md §3) on HalfCheetah shapes (18+6→18).

Pieces, each one compiled call, timed after warm-up (``block_until_ready``, median of repeats):

- ``fit epoch``: one training epoch of 5 members of [1024, 1024] over 66 minibatches of 1,024
  (67,584 rows, padded to the 131,072-row bucket as the fit sees them), i.e. ``train_epochs``;
- ``validation``: every member's validation MSE on 33,792 rows (one early-stopping check);
- ``predict_all``: all members' next states for 50,000 rows;
- ``test-set error``: both test-set metrics after a fit (:func:`rp1.dynamics.testset.errors_on_test_set`)
  on HalfCheetah's shipped test set (3,000 rows), values back on the host as a run logs them.

``--heads`` gives every member the learned reward and termination head (``model.reward=learned``;
``[200, 200]``, :mod:`rp1.dynamics.heads`), trained and validated with the dynamics: the difference
to a run without is the heads' cost.

Usage::

    python benchmarks/bench_ensemble.py [--repeats 5] [--hidden 1024] [--batches 66] [--heads]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import jax
import numpy as np
from timing import report

from rp1.dynamics import (
    Ensemble,
    ensemble_init,
    init_model_opt_state,
    member_losses,
    padded_dataset,
    predict_all,
    with_heads,
)
from rp1.dynamics.fit import (
    DEALINGS,
    ROUND_ROBIN,
    SHUFFLE,
    Dealer,
    FitState,
    FitStatics,
    improved_any,
    model_weights,
    train_epochs,
)
from rp1.dynamics.parts import ModelParts
from rp1.dynamics.testset import errors_on_test_set, shipped_test_set

OBS_DIM, ACT_DIM, MEMBERS, BATCH = 18, 6, 5, 1024
PREDICT_ROWS = 50_000


def random_dataset(rng: np.random.Generator, rows: int):
    """A padded dataset of ``rows`` random HalfCheetah-shaped transitions (rewards, no terminals)."""
    obs = rng.normal(size=(rows, OBS_DIM))
    return padded_dataset(
        obs,
        rng.normal(size=(rows, ACT_DIM)),
        obs + 0.1 * rng.normal(size=obs.shape),
        rng.normal(size=rows),
    )


@dataclass(frozen=True)
class FitCalls:
    """The fit's compiled calls on random data, ready to time (each returns what to wait for): one
    epoch over the training rows per dealing (``epochs``, keyed as
    :data:`~rp1.dynamics.fit.DEALINGS`), and one validation check (every member's MSE on the
    validation rows); ``model`` and ``bucket`` (the padded training rows) with them."""

    model: Ensemble
    bucket: int
    epochs: dict[str, Callable]
    validation: Callable


def fit_calls(
    hidden: int, train_rows: int, val_rows: int, *, heads: bool = False, seed: int = 0
) -> FitCalls:
    """:class:`FitCalls` for 5 members of ``[hidden, hidden]`` (with the learned heads if
    ``heads``) on ``train_rows`` training and ``val_rows`` validation rows."""
    rng = np.random.default_rng(seed)
    model = ensemble_init(jax.random.key(seed), OBS_DIM, ACT_DIM, MEMBERS, (hidden, hidden))
    if heads:
        model = with_heads(model, jax.random.key(seed + 2))
    train = jax.device_put(random_dataset(rng, train_rows))
    val = jax.device_put(random_dataset(rng, val_rows))
    state = FitState(
        model_weights(model),
        init_model_opt_state(model),
        model_weights(model),
        ModelParts(member_losses(model, val)),
        jax.random.key(seed + 1),
        np.int32(0),  # the member the round-robin dealing deals to first
    )

    def epoch(dealer: Dealer) -> Callable:
        lr = np.float32(1e-3)
        statics = FitStatics(
            BATCH, check_every=1, max_checks=1, dealing=dealer, stop_on=improved_any
        )
        return lambda: train_epochs(state, model, train, 1, lr, statics)

    return FitCalls(
        model=model,
        bucket=int(train.obs.shape[0]),
        epochs={name: epoch(dealer) for name, dealer in DEALINGS.items()},
        validation=lambda: member_losses(model, val),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=66)
    parser.add_argument("--heads", action="store_true", help="learned reward and termination heads")
    args = parser.parse_args()

    rows = args.batches * BATCH
    fit = fit_calls(args.hidden, rows, rows // 2, heads=args.heads)
    rng = np.random.default_rng(1)
    obs = jax.device_put(rng.normal(size=(PREDICT_ROWS, OBS_DIM)).astype(np.float32))
    act = jax.device_put(rng.normal(size=(PREDICT_ROWS, ACT_DIM)).astype(np.float32))
    predict = jax.jit(predict_all)
    test_set = shipped_test_set("halfcheetah")
    pieces = {
        f"fit epoch ({args.batches} x {BATCH}, bucket {fit.bucket})": fit.epochs[SHUFFLE],
        "fit epoch, round-robin dealing (same rows)": fit.epochs[ROUND_ROBIN],
        f"validation ({rows // 2} rows)": fit.validation,
        f"predict_all ({PREDICT_ROWS} rows)": lambda: predict(fit.model, obs, act),
        f"test-set error ({len(test_set.obs)} rows)": lambda: errors_on_test_set(
            fit.model, test_set
        ),
    }
    workload = (
        f"{MEMBERS} members of [{args.hidden}, {args.hidden}], {OBS_DIM} + {ACT_DIM} -> {OBS_DIM}"
    )
    workload += ", with reward and termination heads of [200, 200]" if args.heads else ""
    report(pieces, args.repeats, workload)


if __name__ == "__main__":
    main()
