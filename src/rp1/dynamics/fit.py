"""Fitting the ensemble with per-member early stopping (algorithm.md §2–§3).

One compiled call trains all members for ``check_every`` epochs: a ``lax.scan`` over epochs of a
``lax.scan`` over minibatches, members ``vmap``-ped, each with its own Adam state. How an epoch's
minibatches reach the members is the *dealing* (:data:`DEALINGS`):

- ``shuffle`` (the algorithm page's choice, default): every member trains on every row, in its own
  shuffle, one Adam step per minibatch;
- ``round-robin`` (the authors' code): one shared shuffle per epoch, its minibatches dealt to the
  members in turn, and one Adam step of all members per ``M`` minibatches (each member on its own
  minibatch), so each member sees a different ``1/M`` of the rows per epoch, for ``1/M`` of the
  arithmetic. As in the authors' code, the member to deal to carries over from one epoch to the next
  within a fit, the minibatches of an epoch's last incomplete round are dropped (their losses were
  discarded there), and a member without a minibatch in a round still takes its Adam step, with a
  zero gradient (as the authors' optimiser stepped zeroed gradients).

Between calls, a check validates every member, keeps each member's best weights and decides
whether to stop; the calls and the checks are one compiled ``lax.while_loop`` (:func:`fit_loop`),
so a fit reads from the device once, at its end. Datasets come padded to size buckets
(:mod:`rp1.dynamics.store`), so the compiled loop is reused while the data grows.

A model with learned heads (:mod:`rp1.dynamics.heads`) trains them in the same steps, on the same
minibatches, with the same Adam settings: each member minimises its dynamics MSE plus its head
loss (the two share no parameters, teacher forcing). Early stopping tracks the two parts
separately: each member keeps its dynamics weights of lowest validation MSE and its head weights
of lowest validation head loss. By default (stop rule ``"any"``) a check counts as an improvement
when any member improved either; with ``"dynamics"`` only the dynamics count, so the fit
stops when a model without heads would and the heads keep their best weights up to then.
``l_val`` (``FitResult.val_loss``) stays the dynamics MSE, comparable across reward modes.

The settings (learning rate, minibatch size, the stop rule's cadence, patience and cap) are one
frozen :class:`FitSettings`; what the fit tracks per part of the model (dynamics, heads) is a
:class:`~rp1.dynamics.parts.ModelParts`.

Example::

    opt_state = init_model_opt_state(model)
    model = refresh_delta_normalizer(model, all_obs, all_next_obs)
    model, opt_state, result = fit(model, opt_state, store.train_set(rng), store.val_set(), key)
    result.val_loss                              # l_val
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from jax.typing import ArrayLike

from rp1.config.defaults import (  # the defaults of FitSettings, fit(…)
    BATCH_SIZE,
    CHECK_EVERY,
    MAX_EPOCHS,
    PATIENCE,
    ROUND_ROBIN,
    SHUFFLE,
    STOP_ON,
    Dealing,
    StopOn,
)
from rp1.config.defaults import MODEL_LEARNING_RATE as LEARNING_RATE
from rp1.core.nn import Params, member_count
from rp1.core.normalizer import normalize, normalizer_fit, normalizer_update
from rp1.dynamics.ensemble import Ensemble
from rp1.dynamics.heads import head_row_errors
from rp1.dynamics.losses import masked_member_losses, row_errors
from rp1.dynamics.parts import ModelParts
from rp1.dynamics.store import Dataset


class NonFiniteLossError(FloatingPointError):
    """A member's training or validation loss became inf or NaN."""


class FitState(struct.PyTreeNode):
    """What the compiled training carries, stacked over members (leading axis ``M``): the current
    and best weights (:class:`ModelParts` of the dynamics MLPs and the heads), the per-member Adam
    state, each member's best validation losses (dynamics MSE ``[M]``, head loss ``[M]`` or
    ``None``), the RNG key and, for the round-robin dealing, the member the next minibatch goes to
    (``[]`` int32)."""

    weights: ModelParts
    opt_state: optax.OptState
    best_weights: ModelParts
    best_losses: ModelParts
    key: jax.Array
    next_member: jax.Array


class FitResult(NamedTuple):
    """Summary of one fit.

    ``val_loss``: ``l_val``, the lowest member validation MSE after restoring the best weights;
    ``epochs``: epochs trained; ``member_val_losses [M]``: each member's best (restored) validation
    MSE; ``val_history [checks, M]``: validation MSE at every check, the one before training first;
    ``head_val_losses [M]``: each member's best (restored) validation head loss (``None``
    without heads); ``train_losses [M]``: each member's mean training loss over the minibatches of the
    last epoch trained (dynamics MSE plus, with heads, head loss; NaN when no epoch was trained). All MSEs are
    of the dynamics, in normalised units (of ``norm(s')``).
    """

    val_loss: float
    epochs: int
    member_val_losses: np.ndarray
    val_history: np.ndarray
    head_val_losses: np.ndarray | None
    train_losses: np.ndarray

    def metrics(self) -> dict[str, float]:
        """The fit's numbers by metrics column: ``val_loss`` (the members' lowest best validation
        MSE) and ``val_loss_max`` (their highest), ``model_epochs``, ``train_loss`` (the last
        epoch's training loss, mean over members) and, with heads, ``head_val_loss`` and
        ``head_val_loss_max`` (the members' lowest and highest best validation head loss)."""
        metrics = {
            "val_loss": self.val_loss,
            "val_loss_max": float(self.member_val_losses.max()),
            "model_epochs": self.epochs,
            "train_loss": float(self.train_losses.mean()),
        }
        heads = self.head_val_losses
        if heads is not None:
            metrics |= {
                "head_val_loss": float(heads.min()),
                "head_val_loss_max": float(heads.max()),
            }
        return metrics


def make_model_optimizer(lr: ArrayLike = LEARNING_RATE) -> optax.GradientTransformation:
    """Adam for one member's parameters (algorithm.md §3) with learning rate ``lr`` (a float or a
    traced scalar)."""
    return optax.adam(lr)


def model_weights(model: Ensemble) -> ModelParts:
    """What the fit trains of ``model``: its dynamics MLPs and its heads."""
    return ModelParts(model.params, model.heads)


def init_model_opt_state(model: Ensemble) -> optax.OptState:
    """Fresh Adam state for every member's weights (:func:`model_weights`, leading axis ``M``, step
    counts included). Its structure does not depend on the learning rate."""
    return jax.vmap(make_model_optimizer().init)(model_weights(model))


def update_input_normalizers(
    model: Ensemble,
    obs: ArrayLike,
    act: ArrayLike,
    obs_mask: ArrayLike | None = None,
    act_mask: ArrayLike | None = None,
) -> Ensemble:
    """Fold states ``obs [..., obs_dim]`` and actions ``act [..., act_dim]`` seen during collection
    into the running input normalisers (algorithm.md §2): every row, or the rows the masks select
    (:func:`~rp1.core.normalizer.normalizer_update`)."""
    return model.replace(
        obs_norm=normalizer_update(model.obs_norm, obs, obs_mask),
        act_norm=normalizer_update(model.act_norm, act, act_mask),
    )


def refresh_delta_normalizer(
    model: Ensemble, obs: ArrayLike, next_obs: ArrayLike, mask: ArrayLike | None = None
) -> Ensemble:
    """Recompute the delta normaliser from all stored transitions ``obs, next_obs [N, obs_dim]``
    (or the rows ``mask [N]`` selects) as the statistics of ``norm(s') − norm(s)`` (algorithm.md
    §2)."""
    deltas = normalize(model.obs_norm, next_obs) - normalize(model.obs_norm, obs)
    return model.replace(delta_norm=normalizer_fit(model.delta_norm, deltas, mask))


def _shuffles(key: jax.Array, members: int, data: Dataset, length: int) -> jax.Array:
    """One random order of the rows per member, valid rows first, padded with row 0 to ``length``
    positions -> ``[M, length]`` int32."""

    def one(k: jax.Array) -> jax.Array:
        rows = jnp.arange(data.obs.shape[0])
        return jnp.argsort(jnp.where(rows < data.n_valid, jax.random.uniform(k, rows.shape), 2.0))

    order = jax.vmap(one)(jax.random.split(key, members))
    return jnp.pad(order, ((0, 0), (0, length - order.shape[1])))


def _row_losses(weights: ModelParts, model: Ensemble, data: Dataset, idx: jax.Array) -> jax.Array:
    """One member's training loss on rows ``idx [B]`` of ``data``: the dynamics squared error, plus
    the head loss when the member has heads -> ``[B]``."""
    obs, act, next_obs = data.obs[idx], data.act[idx], data.next_obs[idx]
    err = row_errors(weights.dynamics, model, obs, act, next_obs)
    if weights.heads is not None:
        err = err + head_row_errors(
            weights.heads, model, obs, act, next_obs, data.rew[idx], data.done[idx]
        )
    return err


def _member_step(
    optimizer: optax.GradientTransformation,
    model: Ensemble,
    data: Dataset,
    weights: ModelParts,
    opt_state: optax.OptState,
    idx: jax.Array,
    mask: jax.Array,
) -> tuple[ModelParts, optax.OptState, jax.Array]:
    """One member's Adam step on rows ``idx [B]`` of ``data`` where ``mask [B]``: the gradient of
    its mean training loss over those rows (zero where ``mask`` is all False). Returns the new
    weights and Adam state and the summed loss ``[]``."""

    def loss(w: ModelParts) -> tuple[jax.Array, jax.Array]:
        err_sum = jnp.sum(jnp.where(mask, _row_losses(w, model, data, idx), 0.0))
        return err_sum / jnp.maximum(jnp.sum(mask), 1), err_sum

    grads, err_sum = jax.grad(loss, has_aux=True)(weights)
    updates, opt_state = optimizer.update(grads, opt_state, weights)
    return optax.apply_updates(weights, updates), opt_state, err_sum


def _minibatch_update(
    optimizer: optax.GradientTransformation,
    model: Ensemble,
    data: Dataset,
    carry: tuple[ModelParts, optax.OptState],
    batch: tuple[jax.Array, jax.Array],
) -> tuple[tuple[ModelParts, optax.OptState], jax.Array]:
    """One Adam step per member on its minibatch; ``batch = (start position, rows [M, B])``.

    Positions ``>= data.n_valid`` are padding and weigh nothing; a minibatch with no valid position
    is skipped entirely (weights and Adam state untouched). Returns the summed training loss
    (:func:`_row_losses`) per member ``[M]``.
    """
    start, rows = batch
    mask = start + jnp.arange(rows.shape[1]) < data.n_valid
    member_step = functools.partial(_member_step, optimizer, model, data)

    def step(
        carry: tuple[ModelParts, optax.OptState],
    ) -> tuple[tuple[ModelParts, optax.OptState], jax.Array]:
        weights, opt_state, err_sum = jax.vmap(member_step, in_axes=(0, 0, 0, None))(
            *carry, rows, mask
        )
        return (weights, opt_state), err_sum

    def skip(
        carry: tuple[ModelParts, optax.OptState],
    ) -> tuple[tuple[ModelParts, optax.OptState], jax.Array]:
        return carry, jnp.zeros((rows.shape[0],))

    return jax.lax.cond(start < data.n_valid, step, skip, carry)


class Deal(NamedTuple):
    """An epoch's dealing of minibatches by the round-robin dealing: ``batches [n_batches, B]``
    (the epoch's shared shuffle, data rows first), ``filled``, how many of them hold data, and
    ``first``, the member its first minibatch goes to (``[]`` int32 each)."""

    batches: jax.Array
    filled: jax.Array
    first: jax.Array


def _round_update(
    optimizer: optax.GradientTransformation,
    model: Ensemble,
    data: Dataset,
    deal: Deal,
    carry: tuple[ModelParts, optax.OptState],
    round_index: jax.Array,
) -> tuple[tuple[ModelParts, optax.OptState], tuple[jax.Array, jax.Array]]:
    """One round of the round-robin dealing: member ``j`` trains on minibatch ``round · M + j −
    first`` of the ``filled`` minibatches of ``deal`` that hold data, one Adam step of every
    member. A member without a minibatch in the round steps with a zero gradient; a round the
    epoch does not complete is skipped (its minibatches dropped). Returns the summed training loss
    and the rows trained on, per member ``[M]``."""
    batches, count, first = deal
    weights, _ = carry
    members = member_count(weights.dynamics)
    n_batches, size = batches.shape
    minibatch = round_index * members + jnp.arange(members) - first  # [M]
    dealt = (minibatch >= 0) & (minibatch < count)
    index = jnp.clip(minibatch, 0, n_batches - 1)
    positions = index[:, None] * size + jnp.arange(size)  # [M, B] positions in the shuffle
    masks = dealt[:, None] & (positions < data.n_valid)
    member_step = functools.partial(_member_step, optimizer, model, data)

    def step(
        carry: tuple[ModelParts, optax.OptState],
    ) -> tuple[tuple[ModelParts, optax.OptState], tuple[jax.Array, jax.Array]]:
        weights, opt_state, err_sum = jax.vmap(member_step)(*carry, batches[index], masks)
        return (weights, opt_state), (err_sum, masks.sum(1))

    def skip(
        carry: tuple[ModelParts, optax.OptState],
    ) -> tuple[tuple[ModelParts, optax.OptState], tuple[jax.Array, jax.Array]]:
        zeros = jnp.zeros((members,))
        return carry, (zeros, zeros.astype(jnp.int32))

    complete = (round_index + 1) * members <= first + count
    return jax.lax.cond(complete, step, skip, carry)


EpochCarry = tuple[ModelParts, optax.OptState, jax.Array, jax.Array]
"""What an epoch carries to the next: weights, Adam's state, the shuffling key and the member the
round-robin dealing deals to next."""
Epoch = Callable[[EpochCarry], tuple[EpochCarry, jax.Array]]
"""One epoch over the training set: the new carry and each member's mean training loss ``[M]``."""


def _n_batches(train: Dataset, batch_size: int) -> int:
    """Minibatches of ``batch_size`` positions that cover the (padded) rows of ``train``."""
    return -(-train.obs.shape[0] // batch_size)


def shuffled_epochs(
    optimizer: optax.GradientTransformation,
    model: Ensemble,
    train: Dataset,
    batch_size: int,
    members: int,
) -> Epoch:
    """The ``shuffle`` dealing's epoch: every member trains on every row of ``train``, in its own
    shuffle, one Adam step per minibatch of ``batch_size`` rows."""
    n_batches = _n_batches(train, batch_size)
    starts = jnp.arange(n_batches) * batch_size

    def epoch(carry: EpochCarry) -> tuple[EpochCarry, jax.Array]:
        weights, opt_state, key, next_member = carry
        key, sub = jax.random.split(key)
        rows = _shuffles(sub, members, train, n_batches * batch_size)
        rows = rows.reshape(members, n_batches, batch_size).swapaxes(0, 1)
        update = functools.partial(_minibatch_update, optimizer, model, train)
        (weights, opt_state), err_sums = jax.lax.scan(update, (weights, opt_state), (starts, rows))
        return (weights, opt_state, key, next_member), err_sums.sum(0) / train.n_valid

    return epoch


def dealt_epochs(
    optimizer: optax.GradientTransformation,
    model: Ensemble,
    train: Dataset,
    batch_size: int,
    members: int,
) -> Epoch:
    """The ``round-robin`` dealing's epoch: one shared shuffle of ``train``, its minibatches of
    ``batch_size`` rows dealt to the ``members`` in turn (:func:`_round_update`)."""
    n_batches = _n_batches(train, batch_size)

    def epoch(carry: EpochCarry) -> tuple[EpochCarry, jax.Array]:
        weights, opt_state, key, first = carry
        key, sub = jax.random.split(key)
        order = _shuffles(sub, 1, train, n_batches * batch_size)[0]
        count = (jnp.asarray(train.n_valid) + batch_size - 1) // batch_size  # minibatches with data
        batches = order.reshape(n_batches, batch_size)
        deal = Deal(batches, count, first)
        update = functools.partial(_round_update, optimizer, model, train, deal)
        rounds = jnp.arange(-(-(n_batches + members - 1) // members))
        (weights, opt_state), (err_sums, rows) = jax.lax.scan(update, (weights, opt_state), rounds)
        losses = err_sums.sum(0) / jnp.maximum(rows.sum(0), 1)
        return (weights, opt_state, key, (first + count) % members), losses

    return epoch


Dealer = Callable[[optax.GradientTransformation, Ensemble, Dataset, int, int], Epoch]
"""A dealing: ``(optimizer, model, train, batch_size, members)`` -> its :data:`Epoch`."""
DEALINGS: dict[Dealing, Dealer] = {SHUFFLE: shuffled_epochs, ROUND_ROBIN: dealt_epochs}
"""The dealing each value of ``model.dealing`` selects (the module docstring)."""


@functools.partial(jax.jit, static_argnames=("statics",))
def train_epochs(
    state: FitState,
    model: Ensemble,
    train: Dataset,
    n_epochs: jax.Array,
    lr: jax.Array,
    statics: FitStatics,
) -> tuple[FitState, jax.Array]:
    """The fit's compiled call: train every member for ``n_epochs <= statics.check_every`` epochs
    over ``train`` (the rest of the compiled ``check_every`` epochs are skipped), minibatches of
    ``statics.batch_size`` rows dealt to the members by ``statics.dealing`` (one of
    :data:`DEALINGS`), Adam with learning rate ``lr`` (a float32 scalar, traced). Returns the new
    state and each epoch's mean training loss per member ``[check_every, M]`` over the rows it
    trained on (zeros for skipped epochs, and for a member that trained on no row in an epoch).
    Compiled once per dataset bucket and ``statics``."""
    epochs = statics.check_every
    optimizer = make_model_optimizer(lr)
    members = member_count(state.weights.dynamics)
    epoch = statics.dealing(optimizer, model, train, statics.batch_size, members)

    def skip(carry: EpochCarry) -> tuple[EpochCarry, jax.Array]:
        return carry, jnp.zeros((members,))

    def maybe_epoch(carry: EpochCarry, index: jax.Array) -> tuple[EpochCarry, jax.Array]:
        return jax.lax.cond(index < n_epochs, epoch, skip, carry)

    init = (state.weights, state.opt_state, state.key, state.next_member)
    (weights, opt_state, key, next_member), losses = jax.lax.scan(
        maybe_epoch, init, jnp.arange(epochs)
    )
    state = state.replace(weights=weights, opt_state=opt_state, key=key, next_member=next_member)
    return state, losses


def improved_any(improved: ModelParts) -> jax.Array:
    """Stop rule ``"any"``: a check improved when any part (dynamics, heads) of any member did
    (``improved``: ``[M]`` bools per part) -> ``[]`` bool."""
    return jnp.any(jnp.stack([jnp.any(part) for part in jax.tree_util.tree_leaves(improved)]))


def improved_dynamics(improved: ModelParts) -> jax.Array:
    """Stop rule ``"dynamics"``: a check improved when any member's dynamics did."""
    return jnp.any(improved.dynamics)


ImprovementRule = Callable[[ModelParts], jax.Array]
"""Whether a check's improvements (per part, ``[M]`` bools) reset the fit's patience (``[]``
bool, decided on the device)."""
STOP_RULES: dict[StopOn, ImprovementRule] = {"any": improved_any, "dynamics": improved_dynamics}
"""The stop rule each value of ``model.stop_on`` selects."""


@dataclass(frozen=True)
class FitSettings:
    """How the ensemble is fitted (algorithm.md §3): Adam's learning rate ``lr``, minibatches of
    ``batch_size`` rows, a validation every ``check_every`` epochs, a stop after ``patience`` checks
    without improvement or at ``max_epochs``; ``stop_on``, whether a check's improvements count
    (one of :data:`STOP_RULES`), ``dealing``, the epoch of a dealing (one of :data:`DEALINGS`).
    Ranges are the config's (:class:`~rp1.config.schema.ModelConfig`)."""

    lr: float = LEARNING_RATE
    batch_size: int = BATCH_SIZE
    check_every: int = CHECK_EVERY
    patience: int = PATIENCE
    max_epochs: int = MAX_EPOCHS
    stop_on: ImprovementRule = STOP_RULES[STOP_ON]
    dealing: Dealer = DEALINGS[SHUFFLE]


_validation_losses = jax.jit(masked_member_losses)


class Check(NamedTuple):
    """One validation of the fit: the state with the improved members' weights kept, the
    validation losses and whether each member improved, per part (:class:`ModelParts` of
    ``[M]`` arrays, heads ``None`` without heads)."""

    state: FitState
    losses: ModelParts
    improved: ModelParts


@jax.jit
def _check(state: FitState, model: Ensemble, val: Dataset) -> Check:
    """Validate every member; keep each part of the weights (dynamics, heads) of the members whose
    loss of that part beats their best so far."""
    losses = _validation_losses(state.weights, model, val)
    improved = jax.tree_util.tree_map(jnp.less, losses, state.best_losses)

    def keep(better: jax.Array, best: Params, current: Params) -> Params:
        def pick(b: jax.Array, c: jax.Array) -> jax.Array:
            return jnp.where(better.reshape(-1, *[1] * (c.ndim - 1)), c, b)

        return jax.tree_util.tree_map(pick, best, current)

    best_weights = jax.tree_util.tree_map(keep, improved, state.best_weights, state.weights)
    best_losses = jax.tree_util.tree_map(jnp.where, improved, losses, state.best_losses)
    return Check(
        state.replace(best_weights=best_weights, best_losses=best_losses), losses, improved
    )


class FitLoop(struct.PyTreeNode):
    """What the fit's compiled loop (:func:`fit_loop`) carries from one check to the next and
    returns: the training state, the epochs trained, the checks in a row without improvement
    (``stale``) and the checks made since training began (``[]`` int32 each), every check's
    validation MSE ``history [max_checks + 1, M]`` (row 0 before training, rows after the last
    check zeros), the last check's training losses ``[check_every, M]`` of its ``trained`` epochs
    (the rest zeros) and validation losses (:class:`ModelParts`), and whether every loss so far is
    finite (``[]`` bool; the loop stops at the first check that is not)."""

    state: FitState
    epochs: jax.Array
    stale: jax.Array
    checks: jax.Array
    history: jax.Array
    train_losses: jax.Array
    trained: jax.Array
    losses: ModelParts
    finite: jax.Array


def _all_finite(losses: ModelParts) -> jax.Array:
    """Whether every loss of every part is finite -> ``[]`` bool."""
    return jnp.all(jnp.stack([jnp.isfinite(x).all() for x in jax.tree_util.tree_leaves(losses)]))


class FitLimits(NamedTuple):
    """The traced bounds of :func:`fit_loop` (``[]`` arrays; changing them reuses the compiled
    loop): Adam's learning rate ``lr`` (float32), ``max_epochs`` and ``patience`` (int32)."""

    lr: ArrayLike
    max_epochs: ArrayLike
    patience: ArrayLike


@dataclass(frozen=True)
class FitStatics:
    """What is compiled into :func:`fit_loop` (a static argument, hashable): minibatches of
    ``batch_size`` rows, a check every ``check_every`` epochs, a history of ``max_checks + 1`` rows
    (``max_checks ≥ ⌈max_epochs / check_every⌉``), the ``dealing`` and the ``stop_on`` rule."""

    batch_size: int
    check_every: int
    max_checks: int
    dealing: Dealer
    stop_on: ImprovementRule

    @classmethod
    def of(cls, settings: FitSettings) -> FitStatics:
        """The static arguments of ``settings``."""
        return cls(
            batch_size=settings.batch_size,
            check_every=settings.check_every,
            max_checks=-(-settings.max_epochs // settings.check_every),
            dealing=settings.dealing,
            stop_on=settings.stop_on,
        )


@functools.partial(jax.jit, static_argnames=("statics",))
def fit_loop(
    model: Ensemble,
    opt_state: optax.OptState,
    key: jax.Array,
    train: Dataset,
    val: Dataset,
    limits: FitLimits,
    statics: FitStatics,
) -> FitLoop:
    """The whole of a fit's training, one compiled ``lax.while_loop`` of checks: validate
    ``model``'s weights (:func:`_validation_losses`), then repeat ``min(check_every, max_epochs −
    epochs)`` epochs (:func:`train_epochs`) and a check (:func:`_check`) while fewer than
    ``max_epochs`` epochs are trained, fewer than ``patience`` checks in a row improved nothing
    (``stop_on``) and every loss is finite. Compiled once per dataset bucket and ``statics``."""
    weights, (lr, max_epochs, patience) = model_weights(model), limits
    check_every = statics.check_every
    losses = _validation_losses(weights, model, val)
    state = FitState(weights, opt_state, weights, losses, key, jnp.zeros((), jnp.int32))
    members = losses.dynamics.shape[0]
    zero = jnp.zeros((), jnp.int32)
    start = FitLoop(
        state=state,
        epochs=zero,
        stale=zero,
        checks=zero,
        history=jnp.zeros((statics.max_checks + 1, members)).at[0].set(losses.dynamics),
        train_losses=jnp.zeros((check_every, members)),
        trained=zero,
        losses=losses,
        finite=_all_finite(losses),
    )

    def going(loop: FitLoop) -> jax.Array:
        return loop.finite & (loop.epochs < max_epochs) & (loop.stale < patience)

    def check(loop: FitLoop) -> FitLoop:
        n = jnp.minimum(check_every, max_epochs - loop.epochs)
        state, train_losses = train_epochs(loop.state, model, train, n, lr, statics)
        state, losses, improved = _check(state, model, val)
        trained = jnp.arange(check_every)[:, None] < n
        checks = loop.checks + 1
        return FitLoop(
            state=state,
            epochs=loop.epochs + n,
            stale=jnp.where(statics.stop_on(improved), 0, loop.stale + 1),
            checks=checks,
            history=loop.history.at[checks].set(losses.dynamics),
            train_losses=train_losses,
            trained=n,
            losses=losses,
            finite=jnp.all(jnp.isfinite(train_losses) | ~trained) & _all_finite(losses),
        )

    return jax.lax.while_loop(going, check, start)


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


def _raise_if_non_finite_parts(losses: ModelParts, epoch: int) -> None:
    """:func:`_raise_if_non_finite` on the validation losses (dynamics ``[M]``, heads ``[M]`` or
    ``None``) of the check after ``epoch`` epochs."""
    for loss, what in ((losses.dynamics, "validation"), (losses.heads, "head validation")):
        if loss is not None:
            _raise_if_non_finite(np.asarray(loss)[None], epoch, what)


def _raise_if_stopped_by_a_non_finite_loss(loop: FitLoop) -> None:
    """The error :func:`fit` raises for the check at which ``loop`` (read from the device) stopped
    on a loss that is not finite: its training losses first, then its validation losses (the
    validation before training: epoch 0)."""
    if loop.finite:
        return
    trained, train_losses = int(loop.trained), np.asarray(loop.train_losses)
    _raise_if_non_finite(train_losses[:trained], int(loop.epochs) - trained + 1, "training")
    _raise_if_non_finite_parts(loop.losses, int(loop.epochs))


def _check_data(train: Dataset, val: Dataset) -> None:
    """``ValueError`` for an empty training or validation set."""
    for name, data in (("training", train), ("validation", val)):
        if int(data.n_valid) < 1:
            raise ValueError(
                f"the {name} set is empty; the fit needs at least one {name} transition"
            )


def fit(
    model: Ensemble,
    opt_state: optax.OptState,
    train: Dataset,
    val: Dataset,
    key: jax.Array,
    settings: FitSettings = FitSettings(),
) -> tuple[Ensemble, optax.OptState, FitResult]:
    """Fit the ensemble's parameters, starting from ``model`` and ``opt_state`` (algorithm.md §3).

    Loss: MSE between predicted and actual ``norm(s')``. Every member is validated before training
    and every ``settings.check_every`` epochs; training stops once no member improved in
    ``settings.patience`` consecutive checks, or at ``settings.max_epochs`` (never later); each
    member's best weights are then restored. With learned heads, ``settings.stop_on``
    (:data:`STOP_RULES`) says what an improvement is: ``"any"`` part of any member, or
    ``"dynamics"`` only (the heads then stop with the dynamics). The normalisers are inputs and
    stay unchanged. The returned Adam state is the one reached by the last epoch trained (for the
    next fit to continue from). The training and its stop rule are one compiled loop
    (:func:`fit_loop`); the host reads its outcome once.

    Raises :class:`NonFiniteLossError` (a ``FloatingPointError``) naming the member and epoch
    (0 = before training) when a loss becomes inf or NaN, and ``ValueError`` on empty data.
    """
    _check_data(train, val)
    # traced: a new learning rate, patience or (within the history's rows) cap reuses the loop
    limits = FitLimits(
        np.float32(settings.lr), np.int32(settings.max_epochs), np.int32(settings.patience)
    )
    train, val = jax.device_put((train, val))
    loop = fit_loop(model, opt_state, key, train, val, limits, statics=FitStatics.of(settings))
    # the fit's one read from the device: everything but the weights and Adam's states
    seen, best = jax.device_get((loop.replace(state=None), loop.state.best_losses))
    _raise_if_stopped_by_a_non_finite_loss(seen)
    checks, trained = int(seen.checks), int(seen.trained)
    result = FitResult(
        float(best.dynamics.min()),
        int(seen.epochs),
        best.dynamics,
        np.asarray(seen.history[: checks + 1]),
        best.heads,
        np.asarray(seen.train_losses[trained - 1]),
    )
    weights = loop.state.best_weights
    return model.replace(params=weights.dynamics, heads=weights.heads), loop.state.opt_state, result
