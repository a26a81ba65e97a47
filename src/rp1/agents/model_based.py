"""The RP1 outer loop (algorithm.md §7, Algorithm 3) for every model-based method of algorithm.md §8.

One loop serves ``rp1``, ``greedy``, ``vr`` and the ablations: they differ only in how λ is chosen
(:class:`~rp1.config.LambdaConfig`), the early-stopping α and the bonus type. Python orchestrates;
fitting, imagination and PPO are compiled JAX (``rp1.dynamics``, ``rp1.imagination``,
``rp1.policy``).

Iteration 0 evaluates the initial policy and collects the first phase with it (the "random policy"
of Algorithm 3); its ``model_error`` is G of the untrained model, which by default does not enter
the bandit's window (``lam.first_feedback``, algorithm.md §6). Every later iteration fits the ensemble,
trains the policy in it with λ, evaluates it in the real env and collects a phase. On a paper task
every fit is also scored on the task's fixed test set (:mod:`rp1.dynamics.testset`), which no run
trains on: ``test_model_error`` and ``test_model_error_common``. The policy that collects a phase
is also evaluated at every point of the evaluation grid the phase covers (:mod:`rp1.agents.grid`).

Randomness: one ``SeedSequence(cfg.seed)`` spawns an independent stream per consumer
(:data:`STREAMS`, :mod:`rp1.core.seeding`). The JAX key lives in the :class:`Learner`; every NumPy
stream is the state of its generator in :attr:`AgentState.rngs` (the environments and the bandit
draw from generators made from those states for one step), so the state holds all of a run's
randomness and the checkpoint keeps it.

A run's state (:class:`AgentState`) is one pytree of arrays, :class:`RunArrays` (the networks and
optimiser states, the normalisers, the transition store as padded arrays with its row counts, the
start states and the bandit's weights; its shapes depend on the config and the store's size
buckets), beside a few host values (counters, λ, the generators' states, the
metric rows). :meth:`ModelBasedAgent.step` is pure: it returns a new state and leaves the one it was
given as it was (nothing in a state is changed after it is made), so a state can be stepped twice,
compared or kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import numpy as np
import optax
from flax import struct

from rp1 import envs
from rp1.acquisition.bandit import BanditWeights, ExpWeights
from rp1.agents.grid import evaluate_on_grid
from rp1.agents.settings import (
    collect_settings,
    fit_settings,
    lambda_start,
    outcome_sources,
    policy_training_settings,
    selected,
)
from rp1.config import Config
from rp1.core.errors import DivergedError
from rp1.core.seeding import generator_from, int_seed, spawn_streams
from rp1.dynamics import Ensemble, ensemble_init, with_heads
from rp1.dynamics.fit import (
    FitResult,
    FitSettings,
    NonFiniteLossError,
    fit,
    init_model_opt_state,
)
from rp1.dynamics.losses import model_error
from rp1.dynamics.refreshes import REFRESHES, Refreshes
from rp1.dynamics.store import Dataset, TransitionStore
from rp1.dynamics.testset import errors_on_test_set, shipped_test_set
from rp1.envs.task import LEARNED
from rp1.imagination import PolicyTraining, TrainInfo, train_policy
from rp1.policy.networks import Policy, host_actor, is_finite, policy_init
from rp1.policy.ppo import make_policy_optimizer
from rp1.realenv import Phase, RealEnvs, collect_phase
from rp1.realenv.snapshots import EvaluationEpisodes, PolicySnapshot, returns_summary
from rp1.rundir.checkpoints import pack_checkpoint, unpack_checkpoint

EVALUATOR = "host-float64"
"""How this agent evaluates (:data:`rp1.realenv.snapshots.EVALUATORS`): the NumPy actor, returns as float64."""

STREAMS = ("env", "eval_env", "start_states", "noise", "subsample", "bandit", "jax")
"""The run's random streams, in spawn order (append new ones at the end to keep the others)."""


class Learner(struct.PyTreeNode):
    """The networks of a model-based run and their optimisers' states: what the compiled fit and
    policy training read and write."""

    key: jax.Array  # the run's key; each fit and each policy training splits one off
    model: Ensemble
    model_opt: optax.OptState  # per-member Adam state of the ensemble (leading axis M)
    policy: Policy
    policy_opt: optax.OptState


class RunArrays(struct.PyTreeNode):
    """Every array a model-based run changes, one pytree: the :class:`Learner` (JAX arrays), the
    transition store (padded NumPy arrays with their row counts, :class:`TransitionStore`), the
    start states of imagined rollouts (``[N, obs_dim]``) and the λ bandit's weights
    (:class:`~rp1.acquisition.bandit.BanditWeights`, float64 NumPy arrays; ``None`` for a fixed λ).
    Only the learner's arrays live on the device: the rest are the host's NumPy arrays, which the
    compiled steps take as arguments."""

    learner: Learner
    store: TransitionStore
    start_obs: np.ndarray
    bandit: BanditWeights | None


HOST_STREAMS = ("env", "eval_env", "noise", "subsample", "bandit")
"""The streams of :data:`STREAMS` that are NumPy generators, whose states are :attr:`AgentState.rngs`."""


@dataclass(frozen=True)
class AgentState:
    """Everything that changes during a run; :meth:`ModelBasedAgent.checkpoint` saves all of it.

    ``arrays``: the arrays (:class:`RunArrays`). Beside it the host's part: the counters, λ, the
    metric rows, and ``rngs``, the state (``bit_generator.state``) of the generator of every
    stream of :data:`HOST_STREAMS`: the real and evaluation environments' resets (``env``,
    ``eval_env``), collection noise, subsampling and the bandit's draws. Nothing in a state is
    changed after it is made.
    """

    iteration: int
    samples: int
    lam: float
    arrays: RunArrays
    rngs: dict[str, Mapping[str, Any]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    evaluations: list[dict[str, Any]] = field(default_factory=list)  # the grid's (rp1.agents.grid)
    evaluated: PolicySnapshot | None = None  # the policy the last step evaluated (not checkpointed)

    @property
    def learner(self) -> Learner:
        return self.arrays.learner

    @property
    def store(self) -> TransitionStore:
        return self.arrays.store


class ModelBasedAgent:
    """Builds the environments and compiled pieces for ``cfg`` and advances an :class:`AgentState`."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.streams = spawn_streams(cfg.seed, STREAMS)
        # one environment each, episodes one after another (rp1.realenv: the random streams)
        self.real = RealEnvs(cfg.task, 1, seed=int_seed(self.streams["env"]), horizon=cfg.horizon)
        self.eval_real = RealEnvs(
            cfg.task, 1, seed=int_seed(self.streams["eval_env"]), horizon=cfg.horizon
        )
        # the grid's episodes are all seeded (rp1.agents.grid): its environments' streams stay unused
        self.grid_real = RealEnvs(cfg.task, 1, horizon=cfg.horizon)
        # the environments' streams as seeded, read before any reset draws from them
        self.seeded_envs = {
            "env": self.real.generators()[0].bit_generator.state,
            "eval_env": self.eval_real.generators()[0].bit_generator.state,
        }
        self.task = self.real.task
        self.rollouts = max(1, cfg.policy.batch_steps // self.task.horizon)
        # made here, as every environment of the run, before the run writes a file
        self.start_obs = self._start_states()
        self.fitting = fit_settings(cfg)
        self.training = policy_training_settings(cfg, self.task)
        self.collecting = collect_settings(cfg)
        self.first_feedback = selected(cfg.lam, "first_feedback")
        self.g_model = selected(cfg.lam, "g_normalizers")
        self.refresh = REFRESHES[cfg.statistics]
        self.test_set = shipped_test_set(self.task.name)  # None off the paper's tasks
        # the test set's own standardisation, the same for every fit
        self.test_scale = self.test_set.scale if self.test_set is not None else None

    def _start_states(self) -> np.ndarray:
        """The imagined rollouts' start states, ``[rollouts, obs_dim]`` float32: resets of an
        environment of its own, seeded from the ``start_states`` stream."""
        cfg = self.cfg
        start_env, _ = envs.make(
            cfg.task, seed=int_seed(self.streams["start_states"]), horizon=cfg.horizon
        )
        start_obs = np.stack([start_env.reset()[0] for _ in range(self.rollouts)])
        start_env.close()
        return start_obs.astype(np.float32)

    def close(self) -> None:
        """Close the environments."""
        self.real.close()
        self.eval_real.close()
        self.grid_real.close()

    # --- state ---------------------------------------------------------------------------------

    def initial_state(self) -> AgentState:
        """A fresh run: initial networks, no data, ``N`` start states from the reset distribution."""
        cfg, task, streams = self.cfg, self.task, self.streams
        key = jax.random.PRNGKey(int_seed(streams["jax"]))
        key, k_model, k_policy = jax.random.split(key, 3)
        model = ensemble_init(
            k_model, task.obs_dim, task.act_dim, cfg.model.members, cfg.model.hidden
        )
        # a key of its own, so the known path draws what it draws without heads
        if LEARNED in outcome_sources(cfg, task).values():
            model = with_heads(model, jax.random.fold_in(k_model, 1), cfg.model.head_hidden)
        policy = policy_init(k_policy, task.obs_dim, task.act_dim, cfg.policy.hidden)
        rngs = {
            name: np.random.default_rng(streams[name]).bit_generator.state
            for name in ("noise", "subsample", "bandit")
        }
        bandit, lam = lambda_start(cfg, generator_from(rngs["bandit"]))
        learner = Learner(
            key=key,
            model=model,
            model_opt=init_model_opt_state(model),
            policy=policy,
            policy_opt=make_policy_optimizer(cfg.policy.lr).init(policy),
        )
        return AgentState(
            iteration=0,
            samples=0,
            lam=lam,
            arrays=RunArrays(
                learner=learner,
                store=TransitionStore.empty(task.obs_dim, task.act_dim),
                start_obs=self.start_obs.copy(),
                bandit=bandit.weights if bandit is not None else None,
            ),
            rngs={**rngs, **self.seeded_envs},
        )

    def checkpoint(self, s: AgentState) -> dict[str, Any]:
        """``s`` as nested dicts of arrays and strings (:func:`~rp1.rundir.checkpoints.pack_checkpoint`):
        the store's rows, which only grow, as its appended arrays."""
        meta = {
            "iteration": s.iteration,
            "samples": s.samples,
            "lam": s.lam,
            "rngs": s.rngs,
            "rows": s.rows,
            "evaluations": s.evaluations,
        }
        return pack_checkpoint(meta, s.arrays.replace(store=None), s.store.state_dict())

    def restore(self, data: dict[str, Any]) -> AgentState:
        """The state saved by :meth:`checkpoint` (a checkpoint of an earlier layout is migrated when
        it is read, :mod:`rp1.rundir.layouts`). ``ValueError`` (or ``KeyError``, ``TypeError``)
        saying what is wrong if it is not a state of this config: metadata out of range, arrays
        of other shapes than the config's (:func:`~rp1.rundir.checkpoints.unpack_checkpoint`,
        :meth:`TransitionStore.from_state_dict`), a store that does not hold the samples the
        metadata counts (:func:`check_stored`)."""
        fresh = self.initial_state()
        meta, arrays, appended = unpack_checkpoint(data, fresh.arrays.replace(store=None))
        lam = meta["lam"]
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not 0 <= lam <= 1:
            raise ValueError(f"its λ = {lam!r:.60} is not a number in [0, 1]")
        rngs = meta["rngs"]
        if not isinstance(rngs, dict) or not set(rngs) <= set(HOST_STREAMS):
            raise ValueError(f"its random streams are {_names(rngs)}, not of {HOST_STREAMS}")
        for state in rngs.values():  # a state of another form fails here, not in a step
            generator_from(state)
        store = TransitionStore.from_state_dict(appended, self.task.obs_dim, self.task.act_dim)
        check_stored(store, meta["samples"])
        return replace(
            fresh,
            iteration=meta["iteration"],
            samples=meta["samples"],
            lam=lam,
            arrays=arrays.replace(store=store),
            rngs={**fresh.rngs, **rngs},
            rows=meta["rows"],
            evaluations=meta["evaluations"],
        )

    # --- one outer iteration -------------------------------------------------------------------

    def step(self, state: AgentState) -> tuple[AgentState, dict[str, Any]]:
        """One iteration of Algorithm 3: the new state and its metrics row (also appended to the new
        state's ``rows``). ``state`` is left as it was: the environments draw from generators made
        from its streams' states for this step.

        Past iteration 0: fit the ensemble to the data so far and train the policy in it with the
        state's λ. Then, every iteration: evaluate the policy in the real environment, collect a
        phase with it (and evaluate it on the grid points the phase covers), absorb the phase (the
        normalisers, the store, G on the phase), and feed G to the bandit, which draws the next λ.
        """
        cfg, started = self.cfg, time.perf_counter()
        rngs = {n: generator_from(state.rngs[n]) for n in ("env", "eval_env", "noise", "subsample")}
        row: dict[str, Any] = {"iteration": state.iteration, "samples": state.samples}
        learner = state.learner
        if state.iteration > 0:
            key, k_fit, k_policy = fit_and_policy_keys(learner.key)
            t = time.perf_counter()
            train, val = training_sets(state.store, rngs["subsample"], cfg.model.max_train_samples)
            model, model_opt, fitted = fit_model(
                learner.model, learner.model_opt, train, val, k_fit, self.fitting, state.iteration
            )
            row |= {**fitted.metrics(), "fit_s": time.perf_counter() - t}
            if self.test_set is not None:  # draws nothing: every other metric stays as it was
                row |= errors_on_test_set(model, self.test_set, self.test_scale)
            t = time.perf_counter()
            policy, policy_opt, trained = train_policy_in_model(
                self.training,
                model,
                learner,
                state.arrays.start_obs,
                k_policy,
                state.lam,
                state.iteration,
                cfg.policy.lr,
            )
            row |= {"lambda": state.lam, **trained.metrics(), "policy_s": time.perf_counter() - t}
            learner = Learner(key, model, model_opt, policy, policy_opt)

        self.real.use_generators([rngs["env"]])
        self.eval_real.use_generators([rngs["eval_env"]])
        evaluated = self._to_evaluate(learner, rngs["eval_env"].bit_generator.state)
        row["eval_return"], row["eval_std"] = returns_summary(evaluated.evaluate(self.eval_real))

        t = time.perf_counter()
        mean_action = host_actor(learner.policy, learner.model.obs_norm)
        budget = cfg.budget - state.samples
        phase = collect_phase(self.real, mean_action, rngs["noise"], self.collecting, budget)
        row["collect_s"] = time.perf_counter() - t
        covered = (state.samples, state.samples + phase.samples)
        evaluations = state.evaluations + evaluate_on_grid(
            evaluated,
            self.grid_real,
            cfg.seed,
            cfg.eval.every,
            cfg.eval_episodes,
            covered,
            state.iteration,
        )

        arrays = state.arrays.replace(learner=learner)
        arrays, absorbed = absorb(
            arrays, phase, self.refresh, self.g_model, cfg.collect.min_val_rollouts
        )
        row |= absorbed
        s = replace(
            state,
            samples=state.samples + phase.samples,
            arrays=arrays,
            rngs={**state.rngs, **{name: g.bit_generator.state for name, g in rngs.items()}},
            evaluations=evaluations,
            evaluated=evaluated,
        )
        s, row["g_hat"] = self.feed_bandit(s, row["model_error"], row.get("val_loss"))
        if s.arrays.bandit is not None:  # the probabilities the next λ was drawn from
            row |= self._bandit(s).metrics()
        row["wall_s"] = time.perf_counter() - started
        s = replace(s, iteration=s.iteration + 1, rows=s.rows + [row])
        return s, row

    def _to_evaluate(self, learner: Learner, eval_rng: Mapping[str, Any]) -> PolicySnapshot:
        """The policy of ``learner`` as it is evaluated now, with the state ``eval_rng`` of the
        evaluation environment's stream from just before, which replays the evaluation
        (:mod:`rp1.realenv.snapshots`)."""
        replay = EvaluationEpisodes(1, self.cfg.eval_episodes, rng_states=(eval_rng,))
        return PolicySnapshot(learner.policy, learner.model.obs_norm, EVALUATOR, replay)

    def policy_snapshot(self, s: AgentState) -> PolicySnapshot:
        """The policy the last step evaluated, with its replay. In a state that no step made (a
        restored checkpoint): the current policy with the current normaliser, which has already
        absorbed the last phase (so it is not the policy evaluated last), and the episodes the next
        evaluation would run."""
        return s.evaluated or self._to_evaluate(s.learner, s.rngs["eval_env"])

    def _bandit(self, s: AgentState) -> ExpWeights:
        """The bandit of ``s`` (its weights, drawing from a generator in the state of its
        stream): a new object, which changes nothing in ``s``."""
        bandit, _ = lambda_start(self.cfg, generator_from(s.rngs["bandit"]))
        assert bandit is not None and s.arrays.bandit is not None  # an adaptive λ
        bandit.load_weights(s.arrays.bandit)
        return bandit

    def feed_bandit(
        self, s: AgentState, g: float, val_loss: float | None
    ) -> tuple[AgentState, float | None]:
        """Feed a phase's G to the bandit of ``s`` and draw the next λ (algorithm.md §6): the state
        with the bandit's new weights, stream and λ, and ``Ĝ`` (``None`` in iteration 0 and for
        fixed-λ methods, which keep their λ and state). Iteration 0's G was measured on the
        untrained model; it enters the bandit's window only with ``lam.first_feedback =
        "include"`` (the reference), and λ = 0 is played next."""
        if s.arrays.bandit is None:
            return s, None
        bandit = self._bandit(s)
        g_hat: float | None
        if s.iteration == 0:
            self.first_feedback(bandit, g)
            lam, g_hat = bandit.choose(0.0), None
        else:
            g_hat = bandit.update(g, norm=val_loss if val_loss else 1.0)
            lam = bandit.sample()
        return replace(
            s,
            lam=lam,
            arrays=s.arrays.replace(bandit=bandit.weights),
            rngs={**s.rngs, "bandit": bandit.rng.bit_generator.state},
        ), g_hat


# --- the pure parts of a step ------------------------------------------------------------------


def fit_and_policy_keys(key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """A step's three keys: the run's next key, and the keys of the step's fit and of its policy
    training, split off in turn."""
    key, k_fit = jax.random.split(key)
    key, k_policy = jax.random.split(key)
    return key, k_fit, k_policy


def training_sets(
    store: TransitionStore, subsample: np.random.Generator, max_train_samples: int
) -> tuple[Dataset, Dataset]:
    """The fit's training set (subsampled with ``subsample``) and validation set; a first phase
    of a single rollout leaves no validation data: then it validates on the training data."""
    train = store.train_set(subsample, max_train_samples)
    return train, store.val_set() if store.n_val else train


def fit_model(
    model: Ensemble,
    model_opt: optax.OptState,
    train: Dataset,
    val: Dataset,
    key: jax.Array,
    settings: FitSettings,
    iteration: int,
) -> tuple[Ensemble, optax.OptState, FitResult]:
    """:func:`~rp1.dynamics.fit.fit`, a loss that is not finite raised as the run's
    :class:`DivergedError` (naming ``iteration`` and ``model.lr``)."""
    try:
        return fit(model, model_opt, train, val, key, settings)
    except NonFiniteLossError as error:
        raise DivergedError.of(
            "the world model's fit", iteration, "model.lr", settings.lr, str(error)
        ) from error


def train_policy_in_model(
    training: PolicyTraining,
    model: Ensemble,
    learner: Learner,
    start_obs: np.ndarray,
    key: jax.Array,
    lam: float,
    iteration: int,
    lr: float,
) -> tuple[Policy, optax.OptState, TrainInfo]:
    """:func:`~rp1.imagination.train_policy` of ``learner``'s policy in ``model`` with ``lam``; a
    policy that is not finite raises :class:`DivergedError` (naming ``iteration`` and
    ``policy.lr``) before its actions reach the real environment."""
    policy, policy_opt, info = train_policy(
        training, model, learner.policy, learner.policy_opt, start_obs, key, lam
    )
    if not is_finite(policy):
        raise DivergedError.of(
            "policy training in the model",
            iteration,
            "policy.lr",
            lr,
            "its parameters became inf or NaN",
        )
    return policy, policy_opt, info


def absorb(
    arrays: RunArrays,
    phase: Phase,
    refresh: Refreshes,
    g_model: Callable[[Ensemble, Ensemble], Ensemble],
    min_val_rollouts: int,
) -> tuple[RunArrays, dict[str, Any]]:
    """Fold the phase into the input normalisers, store it, refresh the delta (and reward)
    normaliser from all stored data (as ``statistics`` says, :mod:`rp1.dynamics.refreshes`),
    and measure G on the phase with the model weights as they were before the refit
    (algorithm.md §6: every normaliser already refreshed, the reference's order, so every G is
    in the same units; ``lam.g_normalizers="inputs"`` measures it before the delta normaliser
    is refreshed; G does not read the reward normaliser). ``min_val_rollouts``: the store's
    (``collect.min_val_rollouts``). Returns the new arrays and the row's entries."""
    obs, act, next_obs = (
        np.concatenate([getattr(e, f) for e in phase.episodes]) for f in ("obs", "act", "next_obs")
    )
    finals = np.stack([e.next_obs[-1] for e in phase.episodes])
    model = refresh.inputs(arrays.learner.model, np.concatenate([obs, finals]), act)
    store = arrays.store.add_phase(phase.episodes, min_val=min_val_rollouts)
    refreshed = refresh.outputs(model, store.transitions())
    g = model_error(g_model(model, refreshed), obs, act, next_obs)
    arrays = arrays.replace(learner=arrays.learner.replace(model=refreshed), store=store)
    return arrays, {
        "model_error": g,
        "phase_samples": phase.samples,
        "residual": phase.residual,
        "steps_per_s": phase.steps_per_s,
        "phase_stop": phase.stop,
    }


def check_stored(store: TransitionStore, samples: int) -> None:
    """``ValueError`` unless ``store`` holds ``samples`` transitions: a run stores every real
    sample it collects (algorithm.md §2), so a checkpoint's store and its sample count agree."""
    held = store.n_train + store.n_val
    if held != samples:
        raise ValueError(
            f"its store holds {held:,} transitions, but its metadata counts {samples:,} samples"
        )


def _names(value: Any) -> str:
    """The keys of ``value`` if it is a map, else its type."""
    return str(sorted(value)) if isinstance(value, dict) else type(value).__name__
