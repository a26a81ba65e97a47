"""Fitting the ensemble with per-member early stopping (SPEC §2–§3).

One compiled call trains all members for ``check_every`` epochs: a ``lax.scan`` over epochs of a
``lax.scan`` over minibatches, members ``vmap``-ped, each with its own shuffle of the training rows
and its own Adam state. Between calls, Python checks the validation losses, keeps each member's
best weights and decides when to stop. Datasets come padded to size buckets
(:mod:`rp1.dynamics.store`), so the compiled call is reused while the data grows.

Example::

    opt_state = init_model_opt_state(model)
    model = refresh_delta_normalizer(model, all_obs, all_next_obs)
    model, opt_state, result = fit(model, opt_state, store.train_set(rng), store.val_set(), key)
    result.val_loss                              # l_val
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from rp1.dynamics.ensemble import Ensemble
from rp1.dynamics.losses import masked_member_losses, member_losses, row_errors
from rp1.dynamics.normalizer import normalize, normalizer_fit, normalizer_update
from rp1.dynamics.store import Dataset
from rp1.nn import Params

LEARNING_RATE = 1e-3  # SPEC §3
BATCH_SIZE = 1024
CHECK_EVERY = 5  # epochs between validations
PATIENCE = 5  # checks without improvement before stopping
MAX_EPOCHS = 2000

TRACES: Counter[str] = Counter()
"""How many times each compiled function of this module was traced (every compilation follows a
trace); a diagnostic for tests and benchmarks."""


class NonFiniteLossError(FloatingPointError):
    """A member's training or validation loss became inf or NaN."""


class FitState(NamedTuple):
    """What the compiled training carries: current and best parameters (stacked, leading axis
    ``M``), the per-member Adam state, each member's best validation MSE ``[M]`` and the RNG key."""

    params: Params
    opt_state: optax.OptState
    best_params: Params
    best_losses: jax.Array
    key: jax.Array


class FitResult(NamedTuple):
    """Summary of one fit.

    ``val_loss``: ``l_val``, the lowest member validation MSE after restoring the best weights;
    ``epochs``: epochs trained; ``member_val_losses [M]``: each member's best (restored) validation
    MSE; ``val_history [checks, M]``: validation MSE at every check, the one before training first.
    """

    val_loss: float
    epochs: int
    member_val_losses: np.ndarray
    val_history: np.ndarray


def make_model_optimizer(lr: float = LEARNING_RATE) -> optax.GradientTransformation:
    """Adam for one member's parameters (SPEC §3)."""
    return optax.adam(lr)


def init_model_opt_state(model: Ensemble) -> optax.OptState:
    """Fresh Adam state for every member (leading axis ``M``, step counts included). Its structure
    does not depend on the learning rate."""
    return jax.vmap(make_model_optimizer().init)(model.params)


def update_input_normalizers(model: Ensemble, obs: jax.Array, act: jax.Array) -> Ensemble:
    """Fold states ``obs [..., obs_dim]`` and actions ``act [..., act_dim]`` seen during collection
    into the running input normalisers (SPEC §2)."""
    return model.replace(
        obs_norm=normalizer_update(model.obs_norm, obs),
        act_norm=normalizer_update(model.act_norm, act),
    )


def refresh_delta_normalizer(model: Ensemble, obs: jax.Array, next_obs: jax.Array) -> Ensemble:
    """Recompute the delta normaliser from all stored transitions ``obs, next_obs [N, obs_dim]`` as
    the statistics of ``norm(s') − norm(s)`` (SPEC §2)."""
    deltas = normalize(model.obs_norm, next_obs) - normalize(model.obs_norm, obs)
    return model.replace(delta_norm=normalizer_fit(model.delta_norm, deltas))


def _shuffles(key: jax.Array, members: int, data: Dataset, length: int) -> jax.Array:
    """One random order of the rows per member, valid rows first, padded with row 0 to ``length``
    positions -> ``[M, length]`` int32."""

    def one(k: jax.Array) -> jax.Array:
        rows = jnp.arange(data.obs.shape[0])
        return jnp.argsort(jnp.where(rows < data.count, jax.random.uniform(k, rows.shape), 2.0))

    order = jax.vmap(one)(jax.random.split(key, members))
    return jnp.pad(order, ((0, 0), (0, length - order.shape[1])))


def _minibatch_update(
    optimizer: optax.GradientTransformation,
    model: Ensemble,
    data: Dataset,
    carry: tuple[Params, optax.OptState],
    batch: tuple[jax.Array, jax.Array],
) -> tuple[tuple[Params, optax.OptState], jax.Array]:
    """One Adam step per member on its minibatch; ``batch = (start position, rows [M, B])``.

    Positions ``>= data.count`` are padding and weigh nothing; a minibatch with no valid position
    is skipped entirely (parameters and Adam state untouched). Returns the summed squared error
    per member ``[M]``.
    """
    start, rows = batch
    mask = start + jnp.arange(rows.shape[1]) < data.count

    def member_step(params: Params, opt_state: optax.OptState, idx: jax.Array):
        def loss(p: Params) -> tuple[jax.Array, jax.Array]:
            err = row_errors(p, model, data.obs[idx], data.act[idx], data.next_obs[idx])
            err_sum = jnp.sum(jnp.where(mask, err, 0.0))
            return err_sum / jnp.sum(mask), err_sum

        grads, err_sum = jax.grad(loss, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, err_sum

    def step(carry: tuple[Params, optax.OptState]):
        params, opt_state, err_sum = jax.vmap(member_step)(*carry, rows)
        return (params, opt_state), err_sum

    def skip(carry: tuple[Params, optax.OptState]):
        return carry, jnp.zeros((rows.shape[0],))

    return jax.lax.cond(start < data.count, step, skip, carry)


@functools.partial(jax.jit, static_argnames=("lr", "batch_size", "epochs"))
def train_epochs(
    state: FitState,
    model: Ensemble,
    train: Dataset,
    n_epochs: jax.Array,
    *,
    lr: float,
    batch_size: int,
    epochs: int,
) -> tuple[FitState, jax.Array]:
    """The fit's compiled call: train every member for ``n_epochs <= epochs`` epochs over ``train``
    (the rest of the compiled ``epochs`` are skipped), minibatches of ``batch_size`` rows, Adam with
    learning rate ``lr``. Returns the new state and each epoch's training MSE per member
    ``[epochs, M]`` (zeros for skipped epochs). Compiled once per dataset bucket and settings."""
    TRACES["train_epochs"] += 1
    optimizer = make_model_optimizer(lr)
    members = state.best_losses.shape[0]
    n_batches = -(-train.obs.shape[0] // batch_size)
    starts = jnp.arange(n_batches) * batch_size

    def epoch(carry: tuple[Params, optax.OptState, jax.Array]):
        params, opt_state, key = carry
        key, sub = jax.random.split(key)
        rows = _shuffles(sub, members, train, n_batches * batch_size)
        rows = rows.reshape(members, n_batches, batch_size).swapaxes(0, 1)
        update = functools.partial(_minibatch_update, optimizer, model, train)
        (params, opt_state), err_sums = jax.lax.scan(update, (params, opt_state), (starts, rows))
        return (params, opt_state, key), err_sums.sum(0) / train.count

    def skip(carry: tuple[Params, optax.OptState, jax.Array]):
        return carry, jnp.zeros((members,))

    def maybe_epoch(carry: tuple[Params, optax.OptState, jax.Array], index: jax.Array):
        return jax.lax.cond(index < n_epochs, epoch, skip, carry)

    init = (state.params, state.opt_state, state.key)
    (params, opt_state, key), losses = jax.lax.scan(maybe_epoch, init, jnp.arange(epochs))
    return state._replace(params=params, opt_state=opt_state, key=key), losses


@jax.jit
def _check(state: FitState, model: Ensemble, val: Dataset) -> tuple[FitState, jax.Array, jax.Array]:
    """Validate every member; keep the weights of those that beat their best so far.
    Returns the state, the validation MSE ``[M]`` and whether each member improved ``[M]``."""
    losses = masked_member_losses(state.params, model, val)
    improved = losses < state.best_losses

    def keep(best: jax.Array, current: jax.Array) -> jax.Array:
        return jnp.where(improved.reshape(-1, *[1] * (current.ndim - 1)), current, best)

    best_params = jax.tree_util.tree_map(keep, state.best_params, state.params)
    best_losses = jnp.where(improved, losses, state.best_losses)
    return state._replace(best_params=best_params, best_losses=best_losses), losses, improved


def _raise_if_non_finite(losses: np.ndarray, first_epoch: int, what: str) -> None:
    """Raise :class:`NonFiniteLossError` naming the first (epoch, member) whose loss in ``losses``
    ``[epochs, M]`` (epochs numbered from ``first_epoch``) is not finite."""
    bad = np.argwhere(~np.isfinite(losses))
    if len(bad):
        epoch, member = bad[0]
        raise NonFiniteLossError(
            f"world-model member {member} has a non-finite {what} loss ({losses[epoch, member]}) "
            f"at epoch {first_epoch + epoch}; check the data and normalisers for inf/NaN "
            "or lower the learning rate"
        )


def _check_arguments(
    train: Dataset, val: Dataset, batch_size: int, check_every: int, patience: int, max_epochs: int
) -> None:
    """``ValueError`` for empty data or out-of-range settings."""
    for name, value, low in (
        ("batch_size", batch_size, 1),
        ("check_every", check_every, 1),
        ("patience", patience, 1),
        ("max_epochs", max_epochs, 0),
    ):
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")
    for name, data in (("training", train), ("validation", val)):
        if int(data.count) < 1:
            raise ValueError(
                f"the {name} set is empty; the fit needs at least one {name} transition"
            )


def fit(
    model: Ensemble,
    opt_state: optax.OptState,
    train: Dataset,
    val: Dataset,
    key: jax.Array,
    *,
    lr: float = LEARNING_RATE,
    batch_size: int = BATCH_SIZE,
    check_every: int = CHECK_EVERY,
    patience: int = PATIENCE,
    max_epochs: int = MAX_EPOCHS,
) -> tuple[Ensemble, optax.OptState, FitResult]:
    """Fit the ensemble's parameters, starting from ``model`` and ``opt_state`` (SPEC §3).

    Loss: MSE between predicted and actual ``norm(s')``. Every member is validated before training
    and every ``check_every`` epochs; training stops once no member improved in ``patience``
    consecutive checks, or at ``max_epochs`` (never later); each member's best weights are then
    restored. The normalisers are inputs and stay unchanged. The returned Adam state is the one
    reached by the last epoch trained (for the next fit to continue from).

    Raises :class:`NonFiniteLossError` (a ``FloatingPointError``) naming the member and epoch
    (0 = before training) when a loss becomes inf or NaN, and ``ValueError`` on empty data.
    """
    _check_arguments(train, val, batch_size, check_every, patience, max_epochs)
    train, val = jax.device_put((train, val))
    losses = member_losses(model, val)
    state = FitState(model.params, opt_state, model.params, losses, key)
    history = [np.asarray(losses)]
    _raise_if_non_finite(history[0][None], 0, "validation")
    epochs, stale = 0, 0
    while epochs < max_epochs and stale < patience:
        n = min(check_every, max_epochs - epochs)
        state, train_losses = train_epochs(
            state, model, train, n, lr=lr, batch_size=batch_size, epochs=check_every
        )
        state, losses, improved = _check(state, model, val)
        train_losses, losses, improved = jax.device_get((train_losses, losses, improved))
        _raise_if_non_finite(train_losses[:n], epochs + 1, "training")
        epochs += n
        _raise_if_non_finite(losses[None], epochs, "validation")
        history.append(losses)
        stale = 0 if improved.any() else stale + 1
    best = np.asarray(state.best_losses)
    result = FitResult(float(best.min()), epochs, best, np.stack(history))
    return model.replace(params=state.best_params), state.opt_state, result
