"""The real environment, for every method: batched, seeded episodes (algorithm.md §5, §7, §8).

One collector, :func:`collect`, runs episodes of a task side by side in the ``slots`` environments
of a :class:`RealEnvs` and returns them as one :class:`Episodes` batch ``[T, N, …]`` (time,
episode). Model-based collection phases (:func:`collect_phase`: per-episode action noise and PCA
early stopping), evaluation (:func:`evaluate`) and model-free PPO batches all run through it.

The policy enters as ``act_fn(obs [E, obs_dim], episode [E] int, t) -> (action [E, act_dim],
log π [E])`` for the ``E`` slots (NumPy in and out; ``obs`` as the environments return it, float64),
called once per step; the environments step ``clip(action)`` to the task's bounds.
:func:`mean_policy` and :func:`noisy_policy` make such a function from a NumPy actor
``mean_action(obs [..., obs_dim]) -> [..., act_dim]`` (:func:`rp1.policy.host_actor`).

Seeds: episode ``k`` of a call resets its environment with ``seeds[k]``, or, where that is
:data:`UNSEEDED`, from the environment's own random stream (seeded once by ``RealEnvs(…, seed=…)``;
:meth:`RealEnvs.generators` gives the generators, :meth:`RealEnvs.use_generators` makes the
environments draw from others, e.g. an agent state's). Model-free PPO seeds every episode
(:func:`rp1.core.seeding.episode_seeds`), so which episodes run depends neither on ``slots`` nor on ``workers``
(``slots`` is still the batch shape of every policy call, so it moves the last digits). Model-based
runs use one slot and unseeded resets, one episode after another: a phase must stop before the next
episode starts, and every draw (action noise, reset noise) keeps its place in its stream.

Processes: with ``workers == 1`` the environments step in this process; otherwise in a Gymnasium
``AsyncVectorEnv`` of :class:`EnvGroup` s, one process per group, so that the processes exchange one
message per step and group instead of one per environment. Autoreset is off: the collector resets
every slot itself at the start of each round of ``slots`` episodes.

Example::

    real = RealEnvs("hopper", slots=1, seed=0)
    phase = collect_phase(real, host_actor(policy, obs_norm), np.random.default_rng(0),
                          CollectSettings(cap=3000, alpha=5e-4, noise_max=3.0, share=0.99), budget=10_000)
    returns = evaluate(real, mean_policy(host_actor(policy, obs_norm)), 10)      # [10]

The package: :mod:`~rp1.realenv.environments` (:class:`RealEnvs`, the slots and their processes),
:mod:`~rp1.realenv.episodes` (:func:`collect`, :class:`Episodes`, the policies as act functions,
:func:`evaluate`) and :mod:`~rp1.realenv.phases` (:func:`collect_phase`, :class:`CollectSettings`, algorithm.md §5).
"""

from rp1.realenv.environments import MP_CONTEXT, UNSEEDED, UNUSED, EnvGroup, MakeEnv, RealEnvs
from rp1.realenv.episodes import (
    ActFn,
    Episodes,
    MeanAction,
    collect,
    evaluate,
    mean_policy,
    noisy_policy,
)
from rp1.realenv.phases import (
    STOP_BUDGET,
    STOP_CAP,
    STOP_PCA,
    CollectSettings,
    Phase,
    collect_phase,
)

__all__ = [
    "MP_CONTEXT",
    "STOP_BUDGET",
    "STOP_CAP",
    "STOP_PCA",
    "UNSEEDED",
    "UNUSED",
    "ActFn",
    "CollectSettings",
    "EnvGroup",
    "Episodes",
    "MakeEnv",
    "MeanAction",
    "Phase",
    "RealEnvs",
    "collect",
    "collect_phase",
    "evaluate",
    "mean_policy",
    "noisy_policy",
]
