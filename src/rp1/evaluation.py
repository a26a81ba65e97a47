"""Using a trained run: its kept policies loaded (:func:`load_policy`) and evaluated again in the
real environment (:func:`evaluate_run`, ``rp1 evaluate``), optionally as a video.

Without a seed, an evaluation replays the one that made the policy best (or last): the same
episodes (the recorded reset seeds, or the evaluation environment's stream restored), the same
actor, dtypes and batch shape, through the same code as the run (:mod:`rp1.realenv.snapshots`), so its
mean is the ``eval_return`` in ``metrics.csv``, bit for bit. With ``seed = S``, episode ``k`` is
reset with seed ``S + k`` (``env.reset(seed=S + k)`` in plain Gymnasium).

A run without policy files has its last policy read from its checkpoint (:func:`checkpoint_policy`)
and no best. A policy file that is not there is one line naming it and the cause its run's files
tell: an earlier rp1 that kept none (:func:`earlier_rp1`), none written yet, or one written and
then deleted or left behind by a copy (:func:`missing_policy`).

Example::

    policy = load_policy("runs/halfcheetah-quick/seed0")         # the best policy
    result = evaluate_run("runs/halfcheetah-quick/seed0", episodes=3, seed=100)
    result.mean, result.returns
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rp1 import envs
from rp1.config import MODEL_FREE
from rp1.config.migrations import written_schema
from rp1.config.schema import Config, declared_range
from rp1.config.validation import SEED_LIMIT
from rp1.core.errors import ConfigError
from rp1.outputs.video import DEFAULT_SIZE, check_rendering, check_video, record
from rp1.realenv.snapshots import EvaluationEpisodes, returns_summary
from rp1.rundir.files import (
    BEST,
    CONFIG,
    ENVIRONMENT,
    LAST,
    METRICS,
    POLICY_DIR,
    RUN_POLICIES,
    RunDir,
    config_hash,
)
from rp1.rundir.policy_files import (
    FIRST_KEEPING_SCHEMA,
    Kept,
    TrainedPolicy,
    policies_kept,
    policy_path,
    read_policy,
    recorded_writes,
    trained_policy,
)
from rp1.rundir.provenance import changes_since
from rp1.train import make_agent, restore_state

CHECKPOINT = "last (checkpoint)"  # TrainedPolicy.which of a policy read from a checkpoint
MAX_EPISODES = declared_range(Config, "eval_episodes")["at_most"]
"""Episodes ``rp1 evaluate`` runs at most, as many as a run may evaluate."""


def load_policy(run_dir: str | os.PathLike, which: str = "best") -> TrainedPolicy:
    """Load a policy a run kept: call it on observations, read what produced it.

    `policy(obs) -> action` takes NumPy observations, one `[obs_dim]` or a batch
    `[B, obs_dim]`; its attributes say what produced it (`task`, `iteration`, `samples`,
    `eval_return`, …). A run without `policy/` (made by an earlier rp1, or its folder deleted)
    serves `"last"` from its checkpoint, where it has one.

    Args:
        run_dir: The run directory.
        which: `"best"`, the policy of the run's best evaluation, or `"last"`, its latest.

    Returns:
        The policy and what produced it.

    Raises:
        ConfigError: Naming the problem, for an unknown `which`, a directory that holds no
            run, or a policy the run does not have (the missing file, and why it is missing).
    """
    if which not in RUN_POLICIES:
        raise ConfigError(f"unknown policy {which!r}; choose {' or '.join(RUN_POLICIES)}")
    run = RunDir(run_dir)
    if not run.path.is_dir():
        raise ConfigError(f"no run directory {run.path}")
    path = policy_path(run.path, which)
    if path.exists():
        return check_policy_of_run(read_policy(path, run.path), run)
    if run.read_config() is None:
        raise ConfigError(f"{run.path} holds no rp1 run (no config.json)")
    if which == LAST and not path.parent.is_dir() and run.has_checkpoint():
        return checkpoint_policy(run)
    kept = policies_kept(run)
    if kept is None:
        raise ConfigError(earlier_rp1(run, which))
    raise ConfigError(missing_policy(run, which, kept))


def earlier_rp1(run: RunDir, which: str) -> str:
    """Why ``run``, made by an earlier rp1 that recorded no config schema (no policy folder, no
    ``environment.json``), has no ``which`` policy file: that rp1 kept none, or (config schema
    :data:`~rp1.rundir.policy_files.FIRST_KEEPING_SCHEMA`) may have kept none; and what may serve
    instead: the last policy of its checkpoint."""
    stored = run.read_stored_config()
    assert stored is not None  # a run's directory (load_policy checks)
    schema = written_schema(stored, str(run.path / CONFIG))
    surely = schema < FIRST_KEEPING_SCHEMA
    earlier = (
        f"{run.path} has no policy files: it was made by an earlier rp1 (config schema {schema}), "
        + ("which kept none" if surely else "which may have kept none")
    )
    if which == LAST:
        return f"{earlier}, and its last policy needs a checkpoint, which it lacks"
    fallback = (
        "; --policy last evaluates its last policy, from its checkpoint"
        if run.has_checkpoint()
        else ""
    )
    lost = ", so its best policy is lost" if surely else "; its best policy is not here"
    return f"{earlier}{lost}{fallback}"


def missing_policy(run: RunDir, which: str, kept: Kept) -> str:
    """Why ``run``, made by an rp1 that keeps policy files (``kept``), has no ``which`` policy
    file, and what to do: it has written none yet (its ``metrics.csv`` holds no step after which it
    writes one, :func:`~rp1.rundir.policy_files.recorded_writes`), or it wrote one, which was
    deleted or left behind by a copy (the file it came from has it)."""
    path = policy_path(run.path, which)
    steps = recorded_writes(run, which, kept.since)
    since = f" since it kept policies (iteration {kept.since})" if kept.since else ""
    instead = other_policy(run, which)
    if steps == 0:
        none = "no trained policy has been evaluated" if which == BEST else "no step is recorded"
        return f"{run.path} holds no {which} policy yet: {none}{since} (no {path})" + (
            f"; {instead}" if instead else ""
        )
    what = "evaluation" if which == BEST else "step"
    recorded = f"its {METRICS} holds {steps} {what}{'s' * (steps > 1)}"
    recorded += " of trained policies" if which == BEST else " after each of which it writes one"
    recorded += since
    if kept.source != POLICY_DIR and not path.parent.is_dir():
        says = f"the schema its {CONFIG} names" if kept.source == CONFIG else f"its {kept.source}"
        recorded += f", and {says} says an rp1 that keeps policy files made it"
    return (
        f"{path} is missing, though the run wrote one: {recorded}; it was deleted, or left behind "
        "when the run was copied: restore it from a copy that has it (rp1 export copies it)"
        + (f", or {instead}" if instead else "")
    )


def other_policy(run: RunDir, which: str) -> str:
    """What ``rp1 evaluate`` can evaluate of ``run`` instead of its ``which`` policy: its other
    policy file, or for the best the last policy of its checkpoint where it has no policy folder;
    ``""`` where it has neither."""
    other = LAST if which == BEST else BEST
    if policy_path(run.path, other).exists():
        return f"--policy {other} evaluates its {other} policy"
    if other == LAST and not (run.path / POLICY_DIR).is_dir() and run.has_checkpoint():
        return "--policy last evaluates its last policy, from its checkpoint"
    return ""


def check_policy_of_run(policy: TrainedPolicy, run: RunDir) -> TrainedPolicy:
    """``policy``, read from ``run``'s policy files; ConfigError naming its file if it is of another
    task than the run's ``config.json`` names or its sizes are not the task's (a file copied in from
    another run)."""
    config = run.read_config()
    if config is not None and policy.task != config.get("task"):
        raise ConfigError(
            f"{policy.path} is a policy of task {policy.task!r}, but {run.path} is a run of {config.get('task')!r}"
        )
    env, task = envs.make(policy.task, horizon=policy.horizon)
    env.close()
    if (policy.obs_dim, policy.act_dim) != (task.obs_dim, task.act_dim):
        raise ConfigError(
            f"{policy.path} acts on observations of {policy.obs_dim} and actions of {policy.act_dim} values, "
            f"but task {policy.task!r} has {task.obs_dim} and {task.act_dim}"
        )
    return policy


def checkpoint_policy(run: RunDir) -> TrainedPolicy:
    """The last policy of ``run`` read from its checkpoint (for runs without policy files).

    A model-free checkpoint holds the policy its last evaluation saw, with that evaluation's
    episodes. A model-based checkpoint's normaliser has already absorbed the last phase, so its
    policy is not quite the one evaluated last: ``eval_return`` is ``None``, and the episodes are
    those the run's next evaluation would have run.
    """

    config = run.read_config()
    assert config is not None  # a run's directory (load_policy checks)
    cfg = Config.from_dict(config)
    agent = make_agent(cfg)
    try:
        state = restore_state(agent, run.load_checkpoint(config), run)
        snapshot, task = agent.policy_snapshot(state), agent.task
    finally:
        agent.close()
    last = state.rows[-1]
    # the policy in the checkpoint is not the one its last row evaluated
    if cfg.method != MODEL_FREE:
        last = {**last, "eval_return": None, "eval_std": None}
    return trained_policy(
        snapshot,
        cfg,
        task,
        last,
        config_hash=config_hash(config),
        which=CHECKPOINT,
        path=run.checkpoint_path,
    )


@dataclass(frozen=True)
class Evaluation:
    """What [`evaluate_run`][rp1.evaluation.evaluate_run] measured.

    Attributes:
        run: The run directory.
        policy: The policy evaluated.
        returns: The episodes' returns, `[episodes]` (the run's dtype).
        mean: Their mean.
        std: Their standard deviation.
        replay: The episodes' reset seeds or environment stream
            (`rp1.realenv.snapshots.EvaluationEpisodes`).
        replayed: Whether they are the recorded evaluation's episodes.
        video: The video written, or `None`.
        environment_changes: How this machine's environment differs from the one that ran the
            policy's evaluation (the run's `environment.json`), a field each (`[]`: in nothing);
            `None` where the run has no record of it.
    """

    run: Path
    policy: TrainedPolicy
    returns: np.ndarray
    mean: float
    std: float
    replay: EvaluationEpisodes
    replayed: bool
    video: Path | None = None
    environment_changes: list[str] | None = None

    @property
    def repeats_evaluation(self) -> bool:
        """Whether the episodes are the recorded evaluation's, all of them and no more, so that
        the mean is expected to be its return (`policy.eval_return`), bit for bit."""
        recorded = self.policy.snapshot.replay
        return self.replayed and recorded is not None and self.replay.episodes == recorded.episodes

    def to_json(self) -> dict:
        """Everything, for ``rp1 evaluate --json`` (floats in full precision; ``None``, JSON's
        ``null``, for a number that is not finite, which JSON cannot hold)."""
        p = self.policy
        finite = lambda x: None if x is None or not math.isfinite(x) else float(x)  # noqa: E731
        return {
            "run": str(self.run),
            "policy": p.which,
            "task": p.task,
            "preset": p.preset,
            "seed": p.seed,
            "iteration": p.iteration,
            "samples": p.samples,
            "kept_since": p.kept_since,
            "recorded_return": finite(p.eval_return),
            "episodes": self.replay.episodes,
            "replayed": self.replayed,
            "reset_seeds": None if self.replay.seeds is None else list(self.replay.seeds),
            "returns": [finite(r) for r in self.returns],
            "mean": finite(self.mean),
            "std": finite(self.std),
            "video": None if self.video is None else str(self.video),
            "environment_changes": self.environment_changes,
        }


def evaluate_run(
    run_dir: str | os.PathLike,
    which: str = "best",
    episodes: int | None = None,
    seed: int | None = None,
    video: Path | None = None,
    size: tuple[int, int] | None = None,
) -> Evaluation:
    """Run a run's kept policy again in the real environment, as `rp1 evaluate` does.

    The policy acts deterministically. Without `seed`, the episodes replay the evaluation that
    made the policy best (or last), so the mean is that evaluation's `eval_return` in
    `metrics.csv`, bit for bit; with `seed = S`, episode `k` is reset with seed `S + k`. Every
    check comes first: nothing runs and nothing is written on bad input.

    Args:
        run_dir: The run directory.
        which: `"best"` or `"last"`, as for [`load_policy`][rp1.evaluation.load_policy].
        episodes: Episodes to run, in [1, 10,000]; `None`: as many as its evaluation had.
        seed: `None` to replay the recorded evaluation, else the first episode's reset seed.
        video: A `.mp4` or `.gif` file to render the episodes into; `None`: no video.
        size: The video's `(width, height)` in pixels; `None`: 320 x 240.

    Returns:
        The returns and what produced them.

    Raises:
        ConfigError: For an unknown `which`, a number out of range, a bad video path or a
            run that does not have the policy.
        RenderError: If `video` is given and the machine cannot render.
    """
    if which not in RUN_POLICIES:
        raise ConfigError(f"unknown --policy {which!r}; choose {' or '.join(RUN_POLICIES)}")
    if episodes is not None and not 1 <= episodes <= MAX_EPISODES:
        raise ConfigError(f"--episodes must be in [1, {MAX_EPISODES:,}], got {episodes}")
    if seed is not None and not 0 <= seed < SEED_LIMIT:
        raise ConfigError(f"--seed must be in [0, {SEED_LIMIT}) (2**31 - 2**22), got {seed}")
    if video is not None:
        size = size or DEFAULT_SIZE
        check_video(Path(video), size, "--video-file")
    policy = load_policy(run_dir, which)
    if video is not None:
        assert size is not None  # set with the video above
        check_rendering(policy.task, policy.horizon, size)
    recorded = policy.snapshot.replay
    assert recorded is not None, f"{policy.path}: no evaluation recorded to replay"
    count = episodes or recorded.episodes
    if seed is None:
        replay = recorded.with_episodes(count)
    else:
        replay = EvaluationEpisodes(recorded.slots, count, tuple(range(seed, seed + count)))
    real = replay.envs(policy.task, policy.horizon)
    try:
        returns = policy.snapshot.evaluate(real, replay)
    finally:
        real.close()
    if video is not None:
        assert size is not None  # set with the video above
        record(policy, replay, Path(video), size, returns)
    mean, std = returns_summary(returns)
    # the episodes of a recorded evaluation
    replayed = seed is None and policy.eval_return is not None
    return Evaluation(
        Path(run_dir),
        policy,
        returns,
        mean,
        std,
        replay,
        replayed,
        None if video is None else Path(video),
        changes_since(run_dir, policy.iteration),
    )


def describe(result: Evaluation) -> str:
    """``rp1 evaluate``'s report: the policy, the episodes, the mean, std and per-episode returns
    (rounded; ``--json`` has them in full precision) and, for a repeat of the recorded evaluation,
    whether its return is the recorded one (:func:`replay_verdict`)."""
    p = result.policy
    recorded = (
        "not evaluated" if p.eval_return is None else f"evaluation return {p.eval_return:.2f}"
    )
    lines = [
        f"{result.run}: {p.which} policy of {p.preset} seed {p.seed}, iteration {p.iteration}, {p.samples:,} samples ({recorded})"
    ]
    if p.kept_since > 0:
        lines.append(
            f"(policies kept from iteration {p.kept_since} on: this run was begun by an earlier rp1, which kept none)"
        )
    n = result.replay.episodes
    if result.replayed:
        lines.append(f"replayed {n} episode{'s' * (n > 1)} of its evaluation")
    elif result.replay.seeds is not None:
        lines.append(
            f"{n} episode{'s' * (n > 1)}, reset seeds {result.replay.seeds[0]}..{result.replay.seeds[-1]}"
        )
    else:
        lines.append(f"{n} episode{'s' * (n > 1)} the run's next evaluation would have run")
    lines.append(f"mean return {result.mean:.2f}  std {result.std:.2f}")
    if result.repeats_evaluation:
        lines.append(replay_verdict(result))
    lines.append("returns " + " ".join(f"{r:.2f}" for r in result.returns))
    if result.video is not None:
        lines.append(f"video: {result.video}")
    return "\n".join(lines)


def replay_verdict(result: Evaluation) -> str:
    """One line: whether ``result``, a repeat of the recorded evaluation, returned what it
    recorded, bit for bit; where it did not, by how much and why: how this machine's environment
    differs from the one that ran the evaluation (CPU features, rp1's version or commit, XLA or
    OpenBLAS settings, library versions: the run's ``environment.json``), or that it does not, or
    that the run has no record of it."""
    recorded = result.policy.eval_return
    assert recorded is not None  # a repeat of an evaluation
    if result.mean == recorded:
        return "as recorded: the evaluation return in metrics.csv, bit for bit"
    differs = f"not the recorded {recorded:.2f} (off by {result.mean - recorded:+.3g})"
    record = f"{result.run / ENVIRONMENT}"
    if result.environment_changes is None:
        return f"{differs}: the run has no record of where it ran ({record}) to tell why"
    if not result.environment_changes:
        return f"{differs}, though this machine's environment is the one that ran it ({record})"
    return (
        f"{differs}: this machine's environment is not the one that ran it ({record}): "
        + "; ".join(result.environment_changes)
    )
