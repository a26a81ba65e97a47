"""What a run writes beside its metrics and checkpoint: the kept policies, and, when asked, videos
of its best policies and a TensorBoard log.

- the kept policies (:mod:`rp1.rundir.policy_files`): ``RUN/policy/last.msgpack`` after every
  step, ``RUN/policy/best.msgpack`` when the step's evaluation of a trained policy beats the best so
  far (:func:`kept_as`);
- with ``--video``: one episode of each new best policy's evaluation, rendered again, in
  ``RUN/videos/best_<samples>.mp4`` (:mod:`rp1.outputs.video`);
- with ``--tensorboard``: ``RUN/tensorboard/`` (:mod:`rp1.outputs.tensorboard_log`).

:func:`rp1.train.drive` calls :meth:`RunOutputs.after_step` after appending a step's metrics row
and before replacing the checkpoint, so after a kill at any moment these files are those of the
last checkpoint or of a step after it (several with ``checkpoint_every_s``), which a resumed run
repeats identically: a resumed run ends with the uninterrupted run's files. On resume, the best
so far is that of the checkpointed rows (so a step repeated after a kill writes its best file and
video again); in a run resumed without policy files, of the rows from the resume on
(``kept_since``). The policy files hold the hash of the run's config as the rp1 that began the run
wrote it: the files of a run begun by an earlier rp1, whose config this one migrated, are still the
run's (:func:`~rp1.rundir.files.config_hashes`), and a resumed run writes what it would have written
uninterrupted.

The switches are :class:`RunOptions`, options of the run rather than of its config: they change
no number, are not in ``config.json``, and a run may be resumed with other options than it
started with.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rp1.config import Config
from rp1.core.errors import ConfigError
from rp1.envs import Task
from rp1.outputs.tensorboard_log import TensorBoardLog, check_tensorboard
from rp1.outputs.video import (
    DEFAULT_SIZE,
    check_packages,
    check_rendering,
    frame_rate,
    gif_bytes,
    read_video,
    record,
)
from rp1.realenv.snapshots import PolicySnapshot
from rp1.rundir.files import (
    BEST,
    LAST,
    TENSORBOARD_DIR,
    VIDEO_DIR,
    config_hash,
    config_hashes,
    evaluates_trained,
)
from rp1.rundir.policy_files import (
    TrainedPolicy,
    policy_path,
    read_policy,
    trained_policy,
    write_policy,
)


def beats(row: dict[str, Any], best: float | None) -> bool:
    """Whether ``row`` holds an evaluation of a trained policy
    (:func:`~rp1.rundir.files.evaluates_trained`, as ``rp1 report`` counts) that beats ``best``
    (``None``: none yet)."""
    value = row.get("eval_return")
    return (
        evaluates_trained(row["iteration"]) and value is not None and (best is None or value > best)
    )


def kept_as(row: dict[str, Any], best: float | None) -> tuple[str, ...]:
    """The policy files (:data:`~rp1.rundir.files.RUN_POLICIES`) that keep the policy of the step
    of metrics ``row``, in the order they are written: ``last`` always, then ``best`` when ``row``
    :func:`beats` ``best``."""
    return (LAST, BEST) if beats(row, best) else (LAST,)


@dataclass(frozen=True)
class RunOptions:
    """How a run logs, beyond `metrics.csv` and the policy files, and how often it checkpoints
    (`rp1 train` and `rp1 sweep` options; [`run_training`][rp1.train.run_training]'s `options`).

    Options of the run rather than of its config: they change no number, are not in
    `config.json`, and a run may be resumed with others.

    Attributes:
        video: Render one evaluation episode of every new best policy to `RUN/videos/`.
        tensorboard: Write `RUN/tensorboard/`.
        video_size: The videos' `(width, height)` in pixels (320 x 240).
        checkpoint_every_s: Seconds of wall time between checkpoints: 0 saves one after every
            iteration; more saves one after the first iteration that ends that long after the
            last save, and after the last iteration, so a kill loses at most about that much
            work.
    """

    video: bool = False
    tensorboard: bool = False
    video_size: tuple[int, int] = DEFAULT_SIZE
    checkpoint_every_s: float = 0.0

    def check(self, cfg: Config) -> None:
        """Before anything is written: ConfigError if ``checkpoint_every_s`` is negative or NaN,
        a package these options need is missing or the task cannot render,
        :class:`~rp1.core.errors.RenderError` if the machine cannot render."""
        if not self.checkpoint_every_s >= 0:
            raise ConfigError(
                f"the checkpoint interval must be 0 or more seconds, got {self.checkpoint_every_s}"
            )
        if self.tensorboard:
            check_tensorboard()
        if self.video:
            check_packages()
            check_rendering(cfg.task, cfg.horizon, self.video_size)


class RunOutputs:
    """The outputs of a run of ``cfg`` on ``task`` in ``run_dir`` (see the module docstring);
    ``rows`` are the rows already checkpointed (``[]`` for a fresh run)."""

    def __init__(
        self,
        run_dir: Path,
        cfg: Config,
        task: Task,
        rows: list[dict[str, Any]],
        options: RunOptions,
    ):
        self.dir, self.cfg, self.task, self.options = Path(run_dir), cfg, task, options
        self.hash = config_hash(cfg.to_dict())
        last = policy_path(self.dir, LAST)
        kept = read_policy(last, self.dir) if last.exists() else None
        if kept is not None and kept.config_hash in config_hashes(cfg.to_dict()):
            # the run's files, perhaps of an earlier rp1: they go on with the hash they hold
            self.hash, self.kept_since = kept.config_hash, kept.kept_since
        else:  # a fresh run, or one checkpointed without policy files
            self.kept_since = rows[-1]["iteration"] + 1 if rows else 0
        # the best of the checkpointed rows: a step repeated after a kill writes its files again
        self.best: float | None = None
        for row in rows:
            if row["iteration"] >= self.kept_since and beats(row, self.best):
                self.best = row["eval_return"]
        self.tensorboard = None
        if options.tensorboard:
            self.tensorboard = TensorBoardLog(self.dir / TENSORBOARD_DIR)
            self._replay_log(rows)

    def after_step(self, snapshot: PolicySnapshot, row: dict[str, Any]) -> None:
        """Keep the step's policy (``snapshot``, which ``row`` evaluated, if it did), and, as the
        options say, its video and the row's TensorBoard entries."""
        policy = self._trained_policy(snapshot, row)
        kept = kept_as(row, self.best)
        for which in kept:
            policy = dataclasses.replace(policy, which=which)
            write_policy(policy_path(self.dir, which), policy)
        new_best = BEST in kept
        if new_best:
            self.best = row["eval_return"]
        frames = self._video(policy) if new_best and self.options.video else None
        if self.tensorboard is not None:
            self.tensorboard.add_row(row)
            if frames is not None:
                self._log_video(frames, row["samples"])
            self.tensorboard.flush()

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()

    def _trained_policy(self, snapshot: PolicySnapshot, row: dict[str, Any]) -> TrainedPolicy:
        return trained_policy(
            snapshot, self.cfg, self.task, row, config_hash=self.hash, kept_since=self.kept_since
        )

    def video_path(self, samples: int) -> Path:
        return self.dir / VIDEO_DIR / f"best_{samples}.mp4"

    def _video(self, policy: TrainedPolicy) -> list[Any]:
        """Render the first episode of ``policy``'s evaluation to :meth:`video_path`; its frames."""
        assert policy.snapshot.replay is not None  # a new best: its evaluation was recorded
        replay = policy.snapshot.replay.with_episodes(1)
        return record(
            policy,
            replay,
            self.video_path(policy.samples),
            self.options.video_size,
            keep_frames=True,
        )

    def _log_video(self, frames: list[Any], samples: int) -> None:
        assert self.tensorboard is not None  # called with a TensorBoard log only
        self.tensorboard.add_video(
            gif_bytes(frames, frame_rate(self.cfg.task)), self.options.video_size, samples
        )

    def _replay_log(self, rows: list[dict[str, Any]]) -> None:
        """The TensorBoard log of the checkpointed ``rows``, with the videos of their bests that
        ``RUN/videos/`` holds (:mod:`rp1.outputs.tensorboard_log`)."""
        assert self.tensorboard is not None  # called with a TensorBoard log only
        best = None
        for row in rows:
            self.tensorboard.add_row(row)
            if beats(row, best):
                best = row["eval_return"]
                video = self.video_path(row["samples"])
                if video.exists():
                    self._log_video(list(read_video(video)), row["samples"])
        self.tensorboard.flush()
