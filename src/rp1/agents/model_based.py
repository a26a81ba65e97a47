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
stream lives in :attr:`AgentState.rngs` (the environments and the bandit draw from those very
generators), so the state holds all of a run's randomness and the checkpoint keeps it.

:meth:`ModelBasedAgent.step` is pure on the host side too: it returns a new state and leaves the
one it was given as it was (:meth:`AgentState.copy`), so a state can be stepped twice, compared or
kept.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import numpy as np
import optax
from flax import struct

from rp1 import envs
from rp1.acquisition import ExpWeights
from rp1.agents.grid import evaluate_on_grid
from rp1.config import Config
from rp1.config.settings import (
    collect_settings,
    fit_settings,
    lambda_start,
    outcome_sources,
    policy_training,
    resolved,
)
from rp1.core.errors import DivergedError
from rp1.core.seeding import int_seed, spawn_streams
from rp1.dynamics import Ensemble, ensemble_init, with_heads
from rp1.dynamics.fit import NonFiniteLossError, fit, init_model_opt_state
from rp1.dynamics.losses import model_error
from rp1.dynamics.refreshes import REFRESHES
from rp1.dynamics.store import TransitionStore
from rp1.dynamics.testset import errors_on_test_set, shipped_test_set
from rp1.envs.task import LEARNED
from rp1.imagination import train_policy
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
    """The JAX side of a model-based run: what the compiled fit and policy training read and write."""

    key: jax.Array  # the run's key; each fit and each policy training splits one off
    model: Ensemble
    model_opt: optax.OptState  # per-member Adam state of the ensemble (leading axis M)
    policy: Policy
    policy_opt: optax.OptState


HOST_STREAMS = ("env", "eval_env", "noise", "subsample", "bandit")
"""The streams of :data:`STREAMS` that are NumPy generators in :attr:`AgentState.rngs`."""


@dataclass
class AgentState:
    """Everything that changes during a run; :meth:`ModelBasedAgent.checkpoint` saves all of it.

    ``rngs``: the generator of every stream of :data:`HOST_STREAMS`: the real and evaluation
    environments' resets (``env``, ``eval_env``), collection noise, subsampling and the bandit
    (which draws from ``rngs["bandit"]`` itself).
    """

    iteration: int
    samples: int
    lam: float
    learner: Learner
    store: TransitionStore
    start_obs: np.ndarray
    rngs: dict[str, np.random.Generator]
    bandit: ExpWeights | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    evaluations: list[dict[str, Any]] = field(default_factory=list)  # the grid's (rp1.agents.grid)
    evaluated: PolicySnapshot | None = None  # the policy the last step evaluated (not checkpointed)

    def copy(self) -> AgentState:
        """A copy whose host-side parts (generators, bandit, store, rows) can change without
        touching this state; the JAX parts (learner, start states) are immutable and shared. The
        copy's bandit draws from the copy's ``rngs["bandit"]``."""
        # one memo: the generator stays shared
        rngs, bandit = copy.deepcopy((self.rngs, self.bandit))
        # the store replaces its arrays when it grows, never writes into them: a shallow copy will do
        return replace(
            self,
            store=copy.copy(self.store),
            rngs=rngs,
            bandit=bandit,
            rows=list(self.rows),
            evaluations=list(self.evaluations),
        )


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
        # the environments' generators as seeded; a state's copies of them drive the environments
        self._seeded = {
            "env": self.real.generators()[0],
            "eval_env": self.eval_real.generators()[0],
        }
        self._seeded = copy.deepcopy(self._seeded)
        self.task = self.real.task
        self.rollouts = max(1, cfg.policy.batch_steps // self.task.horizon)
        self.fitting = fit_settings(cfg)
        self.training = policy_training(cfg, self.task)
        self.collecting = collect_settings(cfg)
        self.first_feedback = resolved(cfg.lam, "first_feedback")
        self.g_model = resolved(cfg.lam, "g_normalizers")
        self.refresh = REFRESHES[cfg.statistics]
        self.test_set = shipped_test_set(self.task.name)  # None off the paper's tasks
        # the test set's own standardisation, the same for every fit
        self.test_scale = self.test_set.scale if self.test_set is not None else None

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
        start_env, _ = envs.make(cfg.task, seed=int_seed(streams["start_states"]))
        start_obs = np.stack([start_env.reset()[0] for _ in range(self.rollouts)]).astype(
            np.float32
        )
        start_env.close()
        rngs = {
            name: np.random.default_rng(streams[name]) for name in ("noise", "subsample", "bandit")
        }
        rngs |= copy.deepcopy(self._seeded)
        bandit, lam = lambda_start(cfg, rngs["bandit"])
        return AgentState(
            iteration=0,
            samples=0,
            lam=lam,
            learner=Learner(
                key=key,
                model=model,
                model_opt=init_model_opt_state(model),
                policy=policy,
                policy_opt=make_policy_optimizer(cfg.policy.lr).init(policy),
            ),
            store=TransitionStore(task.obs_dim, task.act_dim),
            start_obs=start_obs,
            rngs=rngs,
            bandit=bandit,
        )

    def checkpoint(self, s: AgentState) -> dict[str, Any]:
        """``s`` as nested dicts of arrays and strings (:func:`~rp1.rundir.checkpoints.pack_checkpoint`)."""
        meta = {
            "iteration": s.iteration,
            "samples": s.samples,
            "lam": s.lam,
            "rngs": {k: g.bit_generator.state for k, g in s.rngs.items()},
            "bandit": s.bandit.state_dict() if s.bandit else None,
            "rows": s.rows,
            "evaluations": s.evaluations,
        }
        return pack_checkpoint(
            meta, s.learner, {"store": s.store.state_dict(), "start_obs": s.start_obs}
        )

    def restore(self, data: dict[str, Any]) -> AgentState:
        """The state saved by :meth:`checkpoint`, including a checkpoint that keeps the environments'
        streams apart and the bandit's in the bandit alone."""
        s = self.initial_state()
        meta, s.learner, host = unpack_checkpoint(data, s.learner)
        saved = {"env": meta.get("env_rng"), "eval_env": meta.get("eval_env_rng"), **meta["rngs"]}
        for name, gen in s.rngs.items():
            if name in saved:  # an older checkpoint's bandit stream: in the bandit's state below
                gen.bit_generator.state = saved[name]
        if s.bandit is not None:
            s.bandit.load_state_dict(meta["bandit"])
        s.iteration, s.samples, s.lam, s.rows = (
            meta["iteration"],
            meta["samples"],
            meta["lam"],
            meta["rows"],
        )
        s.evaluations = meta.get("evaluations", [])  # none in a checkpoint from before the grid
        if isinstance(s.lam, bool) or not isinstance(s.lam, (int, float)) or not 0 <= s.lam <= 1:
            raise ValueError(f"its λ = {s.lam!r:.60} is not a number in [0, 1]")
        store = TransitionStore.from_state_dict(host["store"])
        if (store.obs_dim, store.act_dim) != (self.task.obs_dim, self.task.act_dim):
            raise ValueError(
                f"its transitions have {store.obs_dim} and {store.act_dim} values, the task's "
                f"observations and actions {self.task.obs_dim} and {self.task.act_dim}"
            )
        start_obs = np.asarray(host["start_obs"])
        if (start_obs.shape, start_obs.dtype) != (s.start_obs.shape, s.start_obs.dtype):
            raise ValueError(
                f"its start states are {start_obs.dtype}{list(start_obs.shape)}, "
                f"expected {s.start_obs.dtype}{list(s.start_obs.shape)}"
            )
        s.store, s.start_obs = store, start_obs
        return s

    # --- one outer iteration -------------------------------------------------------------------

    def step(self, state: AgentState) -> tuple[AgentState, dict[str, Any]]:
        """One iteration of Algorithm 3: the new state and its metrics row (also appended to the new
        state's ``rows``). ``state`` is left as it was: the iteration works on its copy, and the
        environments draw from the copy's generators."""
        cfg = self.cfg
        start = time.perf_counter()
        s = state.copy()
        self.real.use_generators([s.rngs["env"]])
        self.eval_real.use_generators([s.rngs["eval_env"]])
        row: dict[str, Any] = {"iteration": s.iteration, "samples": s.samples}
        if s.iteration > 0:
            row |= self._fit(s)
            row |= self._train_policy(s)
        s.evaluated = self._to_evaluate(s)
        row["eval_return"], row["eval_std"] = returns_summary(s.evaluated.evaluate(self.eval_real))
        mean_action = host_actor(s.learner.policy, s.learner.model.obs_norm)
        t = time.perf_counter()
        phase = collect_phase(
            self.real, mean_action, s.rngs["noise"], self.collecting, budget=cfg.budget - s.samples
        )
        row["collect_s"] = time.perf_counter() - t
        s.evaluations = s.evaluations + evaluate_on_grid(
            s.evaluated,
            self.grid_real,
            cfg.seed,
            cfg.eval.every,
            cfg.eval_episodes,
            (s.samples, s.samples + phase.samples),
            s.iteration,
        )
        row |= self._absorb(s, phase)
        row["g_hat"] = self.feed_bandit(s, row["model_error"], row.get("val_loss"))
        if s.bandit is not None:  # the probabilities the next λ was drawn from
            row |= s.bandit.metrics()
        row["wall_s"] = time.perf_counter() - start
        s.iteration += 1
        s.rows = s.rows + [row]
        return s, row

    def _to_evaluate(self, s: AgentState) -> PolicySnapshot:
        """The policy of ``s`` as it is evaluated now, with the state of the evaluation
        environment's stream from just before, which replays the evaluation (:mod:`rp1.realenv.snapshots`)."""
        replay = EvaluationEpisodes(
            1, self.cfg.eval_episodes, rng_states=(s.rngs["eval_env"].bit_generator.state,)
        )
        return PolicySnapshot(s.learner.policy, s.learner.model.obs_norm, EVALUATOR, replay)

    def policy_snapshot(self, s: AgentState) -> PolicySnapshot:
        """The policy the last step evaluated, with its replay. In a state that no step made (a
        restored checkpoint): the current policy with the current normaliser, which has already
        absorbed the last phase (so it is not the policy evaluated last), and the episodes the next
        evaluation would run."""
        return s.evaluated or self._to_evaluate(s)

    # The helpers below change the step's own copy of the state in place and return row entries.

    def _fit(self, s: AgentState) -> dict[str, Any]:
        t = time.perf_counter()
        key, k = jax.random.split(s.learner.key)
        train = s.store.train_set(s.rngs["subsample"], self.cfg.model.max_train_samples)
        # a first phase of a single rollout leaves no validation data: then validate on training data
        val = s.store.val_set() if s.store.n_val else train
        try:
            model, model_opt, result = fit(
                s.learner.model, s.learner.model_opt, train, val, k, self.fitting
            )
        except NonFiniteLossError as err:
            raise DivergedError.of(
                "the world model's fit", s.iteration, "model.lr", self.fitting.lr, str(err)
            ) from err
        s.learner = s.learner.replace(key=key, model=model, model_opt=model_opt)
        row = {**result.metrics(), "fit_s": time.perf_counter() - t}
        if self.test_set is not None:  # draws nothing: every other metric stays as it was
            row |= errors_on_test_set(model, self.test_set, self.test_scale)
        return row

    def _train_policy(self, s: AgentState) -> dict[str, Any]:
        t = time.perf_counter()
        key, k = jax.random.split(s.learner.key)
        learner = s.learner
        policy, policy_opt, info = train_policy(
            self.training, learner.model, learner.policy, learner.policy_opt, s.start_obs, k, s.lam
        )
        if not is_finite(policy):  # before its actions reach the real environment
            raise DivergedError.of(
                "policy training in the model",
                s.iteration,
                "policy.lr",
                self.cfg.policy.lr,
                "its parameters became inf or NaN",
            )
        s.learner = s.learner.replace(key=key, policy=policy, policy_opt=policy_opt)
        return {"lambda": s.lam, **info.metrics(), "policy_s": time.perf_counter() - t}

    def _absorb(self, s: AgentState, phase: Phase) -> dict[str, Any]:
        """Fold the phase into the input normalisers, store it, refresh the delta (and reward)
        normaliser from all stored data (as ``statistics`` says, :mod:`rp1.dynamics.refreshes`),
        and measure G on the phase with the model weights as they were before the refit
        (algorithm.md §6: every normaliser already refreshed, the reference's order, so every G is
        in the same units; ``lam.g_normalizers="inputs"`` measures it before the delta normaliser
        is refreshed; G does not read the reward normaliser)."""
        obs, act, next_obs = (
            np.concatenate([getattr(e, f) for e in phase.episodes])
            for f in ("obs", "act", "next_obs")
        )
        finals = np.stack([e.next_obs[-1] for e in phase.episodes])
        model = self.refresh.inputs(s.learner.model, np.concatenate([obs, finals]), act)
        s.store.add_phase(phase.episodes, min_val=self.cfg.collect.min_val_rollouts)
        refreshed = self.refresh.outputs(model, s.store.transitions())
        g = model_error(self.g_model(model, refreshed), obs, act, next_obs)
        s.learner = s.learner.replace(model=refreshed)
        s.samples += phase.samples
        return {
            "model_error": g,
            "phase_samples": phase.samples,
            "residual": phase.residual,
            "steps_per_s": phase.steps_per_s,
            "phase_stop": phase.stop,
        }

    def feed_bandit(self, s: AgentState, g: float, val_loss: float | None) -> float | None:
        """Feed a phase's G to the bandit of ``s`` and draw the next λ into ``s.lam`` (algorithm.md §6),
        changing ``s`` in place; returns ``Ĝ`` (``None`` in iteration 0 and for fixed-λ methods,
        which keep their λ). Iteration 0's G was measured on the untrained model; it enters the
        bandit's window only with ``lam.first_feedback = "include"`` (the reference), and λ = 0 is
        played next."""
        if s.bandit is None:
            return None
        if s.iteration == 0:
            self.first_feedback(s.bandit, g)
            s.lam = s.bandit.choose(0.0)
            return None
        g_hat = s.bandit.update(g, norm=val_loss if val_loss else 1.0)
        s.lam = s.bandit.sample()
        return g_hat
