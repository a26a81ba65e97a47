"""Run directories: ``config.json``, ``metrics.csv`` and an atomically written checkpoint.

Layout::

    RUN/
      config.json            the full resolved config
      metrics.csv            one row per outer iteration, flushed as it goes
      evaluations.csv        one row per point of the evaluation grid (rp1.agents.grid), likewise
      checkpoint/state.msgpack   the config and everything needed to continue identically, but
      checkpoint/rows-*.msgpack  the transition store's rows, in chunks written once (rp1.rundir.chunks)
      finished               written when the run reached its budget; holds the config's hash
      learning_curve.png     drawn at the end
      policy/                the kept policies, best and last (rp1.rundir.policy_files)
      videos/, tensorboard/  with --video and --tensorboard (rp1.outputs.writer)
      environment.json       where it ran (rp1.rundir.provenance)
      lock                   while a process owns the run (rp1.rundir.lock)

``metrics.csv`` has a column for every key of every row (:func:`metric_columns`): the columns of
:data:`METRIC_COLUMNS` first, always, then every other key the components returned, in the order
they first appeared; a row with a key the file has no column for yet rewrites the file with the
column added (earlier rows empty there). Every value is a number or ``None`` (an empty field).

The checkpoint also holds the metric rows written so far, so a resumed run rewrites
``metrics.csv`` from it: a kill between the two writes can neither lose nor duplicate a row. The
checkpoint is replaced atomically, so a kill at any moment leaves the last one valid. Every file
but ``metrics.csv`` is replaced atomically, and ``metrics.csv`` grows by whole rows (its first
lines are replaced atomically), so a reader that takes no lock sees no half-written file but a last
row still being written (``rp1.report.runs_table`` leaves it out). ``evaluations.csv`` has the
fixed columns :data:`EVALUATION_COLUMNS`, is kept in the checkpoint too and written the same way.

A stored config (``config.json``, the checkpoint's copy) is read through
:func:`rp1.config.migrations.migrate`: a config of an older schema gets each key it lacks with
the value that reproduces its behaviour, then is compared with the config given now.

The checkpoint (like the policy files) is sealed with a SHA-256 checksum of its content
(:mod:`rp1.rundir.sealed`) and checked when read: a damaged file, a ``finished`` marker that holds
no config hash, a ``config.json`` that is not JSON raise :class:`~rp1.core.errors.DamagedFile`
naming the file, and nothing is overwritten. A checkpoint written before checksums is read as it
is, so such runs resume exactly.

A run's files are read through :meth:`RunDir.read_file`, which reads no file through a link that
leads out of the run directory (:class:`~rp1.core.errors.LinkOutside`): a tree of runs never
passes off a file from elsewhere as a run's (``rp1 report``, ``rp1 status`` and ``rp1 export``
leave such a file out with a note).

A run directory is never lost: a run only starts in a directory that holds no run, continues one
of the same config (``resume``), or replaces the run's files when told to (``overwrite``); a
checkpoint or ``finished`` marker written under another config is refused. What a directory holds
(:class:`Held`, :meth:`RunDir.held`) decides what ``--resume`` and ``rp1 sweep`` do there, before
anything is written: a finished run, or a finished run's copy (results without a checkpoint or
marker, as ``rp1 export`` and committed runs keep them), is left as it is; a run with a checkpoint
continues; only a directory holding nothing that a restart would not write again (at most the
untrained policy's row) starts afresh; results short of the budget with no checkpoint to continue
them are refused (:class:`~rp1.core.errors.ResultsWithoutCheckpoint`). Bad input raises
:class:`~rp1.core.errors.ConfigError` before anything is written; a file operation the machine fails
raises :class:`~rp1.core.errors.StorageError` naming the file. Files are written and read
through :mod:`rp1.core.storage`.
"""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import io
import json
import math
import numbers
import os
import re
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path
from typing import Any

from rp1.config.methods import MODEL_FREE
from rp1.config.migrations import (
    SCHEMA,
    SCHEMA_KEY,
    check_continuable,
    continued,
    migrate,
    written_as,
)
from rp1.core.errors import ConfigError, DamagedFile, ResultsWithoutCheckpoint
from rp1.core.storage import (
    check_writable_dir,
    is_temporary,
    read_inside,
    storage_errors,
    write_atomically,
)
from rp1.rundir.chunks import PATTERN as CHUNKS
from rp1.rundir.chunks import Chunks
from rp1.rundir.layouts import migrate_layout
from rp1.rundir.sealed import sealed_parts, unseal

METRIC_COLUMNS = (
    "iteration",
    "samples",
    "lambda",
    "eval_return",
    "eval_std",
    "model_return",
    "bonus",
    "model_error",
    "g_hat",
    "val_loss",
    "phase_samples",
    "residual",
    "policy_updates",
    "model_epochs",
    "steps_per_s",
    "fit_s",
    "policy_s",
    "collect_s",
    "wall_s",
    "test_model_error",
    "test_model_error_common",
)
"""The first columns of ``metrics.csv``, always there and in this order (the last two: the world
model's error on its task's test set, :mod:`rp1.dynamics.testset`, empty off the paper's tasks);
every other key a run's rows hold follows (:func:`metric_columns`)."""

EVALUATION_COLUMNS = ("samples", "trained_on", "iteration", "eval_return", "eval_std")
"""The columns of ``evaluations.csv``: the grid point (real samples), the real samples the policy in
force there was trained on, the iteration (model-free: PPO updates) that produced it, and the mean
and std of its evaluation's returns (:func:`rp1.agents.grid.evaluate_on_grid`)."""

TIMING_COLUMNS = tuple(column for column in METRIC_COLUMNS if column.endswith("_s"))
"""The wall-clock measurements of :data:`METRIC_COLUMNS` (seconds, or steps per second: named
``*_s``): the only columns that differ between identical runs."""

FIRST_TRAINED = 1
"""The first iteration whose policy is trained: a model-based run's iteration 0 evaluates its
untrained policy; a model-free run's rows are PPO updates 1, 2, …, all trained."""


class Held(Enum):
    """What a run directory holds for a config (:meth:`RunDir.held`), which decides what
    ``--resume`` and ``rp1 sweep`` may do there."""

    NOTHING = "nothing"
    """No file of a run: a run starts."""
    RESTART = "restart"
    """Nothing that a restart would not write again (no checkpoint, no ``finished`` marker, at
    most the untrained policy's row): ``--resume`` and a sweep start it afresh."""
    CHECKPOINT = "checkpoint"
    """An unfinished run with its checkpoint: ``--resume`` and a sweep continue it."""
    FINISHED = "finished"
    """A finished run (its ``finished`` marker written under the config): nothing to do."""
    COPY = "copy"
    """A finished run's results without its checkpoint or marker (``rp1 export`` copies, runs
    committed elsewhere): its rows reach its budget; nothing to do, and nothing is written."""


DONE = (Held.FINISHED, Held.COPY)
"""What a directory holds when its run is finished: ``--resume`` writes nothing, a sweep skips it."""


def evaluates_trained(iteration: Any) -> Any:
    """Whether a metrics row of ``iteration`` evaluates a trained policy (iteration ≥
    :data:`FIRST_TRAINED`): what a best counts (``rp1 report``, the kept ``best`` policy, ``rp1
    train``'s summary). A bool for an int, elementwise for an array or a pandas Series."""
    return iteration >= FIRST_TRAINED


CONFIG = "config.json"
METRICS = "metrics.csv"
EVALUATIONS = "evaluations.csv"
CHECKPOINT = Path("checkpoint") / "state.msgpack"
SEEDS_PER_PROCESS = "seeds_per_process"
"""How many seeds the run was computed with in one process, which decides its last bits: 1, a run
alone (all this rp1 writes); ``N`` more, a run rp1 0.2.x computed with ``N`` seeds in one program
(``--seeds-per-process N``). The checkpoint's entry beside the config, sealed with the state, so
that the resume of such a run is refused whatever ``environment.json`` says; and the field of a
record entry rp1 0.2.x wrote (1 where it is missing): :mod:`rp1.rundir.lockstep`."""
FINISHED = "finished"
CURVE = "learning_curve.png"
POLICY_DIR = "policy"
BEST, LAST = RUN_POLICIES = ("best", "last")
"""The policies a run keeps, ``POLICY_DIR/<name>.msgpack`` (:mod:`rp1.rundir.policy_files`): that
of its best evaluation of a trained policy so far, and its last."""
VIDEO_DIR = "videos"  # best_<samples>.mp4 with --video
TENSORBOARD_DIR = "tensorboard"  # event files with --tensorboard
OUTPUT_DIRS = (POLICY_DIR, VIDEO_DIR, TENSORBOARD_DIR)
ENVIRONMENT = "environment.json"
RUN_FILES = {
    ".": (CONFIG, METRICS, EVALUATIONS, FINISHED, CURVE, ENVIRONMENT),
    str(CHECKPOINT.parent): (CHECKPOINT.name, CHUNKS),
    POLICY_DIR: tuple(f"{name}.msgpack" for name in RUN_POLICIES),
    VIDEO_DIR: ("best_[0-9]*.mp4",),
    TENSORBOARD_DIR: ("events.out.tfevents.*",),
}
"""The files rp1 writes in a run directory, by folder (``fnmatch`` patterns): what ``--overwrite``
deletes (with their temporary files), and nothing else."""
RESULT_FILES = (CONFIG, METRICS, EVALUATIONS, ENVIRONMENT)
"""The files of a run that hold its numbers and where they were made: what ``rp1 report`` reads
and ``rp1 export`` copies (the first two every run has)."""
CONFIG_KEYS = ("preset", "task", "method", "seed", "budget")
"""Keys every rp1 config has, of every schema: a ``config.json`` without them is not rp1's."""


DEFAULT_ROOT = Path("runs")
"""Where ``rp1 train`` puts a run given no ``--out``: :func:`run_dir_under` this folder."""


def run_dir_under(root: str | os.PathLike, preset: str, seed: int) -> Path:
    """The run directory of ``preset`` and ``seed`` under ``root``, ``root/<preset>/seed<seed>``:
    where ``rp1 train`` without ``--out`` (under :data:`DEFAULT_ROOT`) and each run of a sweep (under
    its ``--out``) train: the layout is written here once."""
    return Path(root) / preset / f"seed{seed}"


def find_run_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (any depth, ``root`` included) with config + metrics, sorted;
    ConfigError when there is none."""
    runs = sorted(p.parent for p in root.rglob(CONFIG) if (p.parent / METRICS).is_file())
    if not runs:
        raise ConfigError(f"{root}: no run directories (a folder with {CONFIG} and {METRICS})")
    return runs


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """The config of the run in ``run_dir`` as this rp1 reads it (:meth:`RunDir.read_config`);
    ConfigError naming the file if it has none."""
    config = RunDir(run_dir).read_config()
    if config is None:
        raise ConfigError(f"{run_dir / CONFIG}: no such file")
    return config


class RunDir:
    """A run directory at ``path``; see the module docstring for its layout and guarantees.

    :meth:`prepare` binds it to a config, which :meth:`save_checkpoint` and :meth:`mark_finished`
    then record.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._config: dict[str, Any] | None = None
        self._chunks = Chunks(self.path / CHECKPOINT.parent)  # as the last head lists them

    @property
    def checkpoint_path(self) -> Path:
        return self.path / CHECKPOINT

    def has_checkpoint(self) -> bool:
        return self.checkpoint_path.exists()

    def is_finished(self, config: dict[str, Any] | None = None) -> bool:
        """Whether the run reached its budget (its ``finished`` marker exists). Given ``config``,
        the marker must have been written under it: a marker of another config is a ConfigError,
        one that holds no config hash :class:`~rp1.core.errors.DamagedFile`."""
        marker = self.path / FINISHED
        if not marker.exists():
            return False
        if config is not None and not self._marks(self._marker_hash(), config):
            raise ConfigError(
                f"{marker} marks a run of another config as finished; delete it, choose another --out or pass --overwrite"
            )
        return True

    def holds_finished(self, config: dict[str, Any]) -> bool:
        """Whether the directory holds the run of ``config`` (as it continues here, for a run of
        an earlier rp1: :meth:`continued`), finished: its ``config.json`` that config, and its
        ``finished`` marker written under it or its results a finished run's copy
        (:data:`DONE`). ConfigError as :meth:`held` raises it. The caller owns the directory."""
        if self.read_stored_config() is None:
            return False
        config = self.continued(config)
        return self.other_config(config) == "" and self.held(config) in DONE

    def action(self, config: dict[str, Any]) -> str:
        """What a sweep does with the run of ``config`` here (its stored config read as
        :meth:`read_config` reads it, migrated), as what the directory holds decides (:meth:`held`):
        ``skip`` a finished run or a finished run's copy, ``resume`` a run with a checkpoint,
        ``start`` one holding nothing a restart would not write again. ConfigError if it holds
        another config or a ``finished`` marker written under another config;
        :class:`~rp1.core.errors.ResultsWithoutCheckpoint` for results short of the budget that no
        checkpoint continues."""
        other = self.other_config(config)
        if other:
            raise ConfigError(
                f"{self.path} holds a run of another config ({other}); choose another --out or the same settings"
            )
        held = self.held(config)
        if held in DONE:
            return "skip"
        return "resume" if held is Held.CHECKPOINT else "start"

    def held(self, config: dict[str, Any]) -> Held:
        """What the directory holds for ``config`` (its stored config, if any, already checked to
        read as ``config``), read before anything is written: see :class:`Held`. ConfigError for a
        ``finished`` marker of another config; :class:`~rp1.core.errors.ResultsWithoutCheckpoint`
        for rows of a trained policy short of the budget with no checkpoint to continue them from
        (a copy made mid-run, a deleted checkpoint), which a restart would replace."""
        if self.is_finished(config):
            return Held.FINISHED
        if self.has_checkpoint():
            return Held.CHECKPOINT
        _, rows = self.read_metric_rows()
        if not any(_holds_result(row) for row in rows):
            anything = self._run_files() or (self.path / CONFIG).exists()
            return Held.RESTART if anything else Held.NOTHING
        reached = samples_reached(rows, config["method"])
        if reached >= config["budget"]:
            return Held.COPY
        raise ResultsWithoutCheckpoint(
            f"{self.path} holds results to {reached:,.0f} of its {config['budget']:,} samples "
            "but no checkpoint to continue them from (a copy made mid-run, or its checkpoint was "
            "deleted); nothing was changed: pass --overwrite to start the run afresh, or choose "
            "another --out"
        )

    def _marks(self, marker: str, config: dict[str, Any]) -> bool:
        """Whether a ``finished`` marker holding ``marker`` was written under ``config``: the hash
        of ``config``, or of the stored ``config.json`` (of an older schema, hashed as it was written)
        when that migrates to ``config``."""
        if marker == config_hash(config):
            return True
        stored = self.read_stored_config()
        return (
            stored is not None
            and marker == config_hash(stored)
            and migrate(stored, str(self.path / CONFIG)) == config
        )

    def read_file(self, name: str | Path, what: str) -> bytes:
        """The content of the run's file ``name`` (relative to the run directory; ``what`` it is,
        for the error): :class:`~rp1.core.errors.LinkOutside` if it is a link that leads out of the
        run directory (no file of a run is read from elsewhere), StorageError if the machine cannot
        read it."""
        return read_inside(self.path, self.path / name, what)

    def _marker_hash(self) -> str:
        """The config hash the ``finished`` marker holds (:func:`config_hash`, 64 hex digits);
        DamagedFile naming it if it holds anything else."""
        marker = self.path / FINISHED
        text = self.read_file(FINISHED, "finished marker").decode("ascii", errors="replace").strip()
        if not re.fullmatch(r"[0-9a-f]{64}", text):
            raise DamagedFile(
                f"{marker} is damaged: a finished marker holds its run's config hash (64 hex digits), "
                f"not {_quoted(text)}; delete it and pass --resume to continue (or finish) the run"
            )
        return text

    def read_config(self) -> dict[str, Any] | None:
        """The stored config dict as this rp1 reads it (:func:`~rp1.config.migrations.migrate`), or
        ``None`` if there is none; ConfigError if it is not one or is of a newer schema."""
        stored = self.read_stored_config()
        return None if stored is None else migrate(stored, str(self.path / CONFIG))

    def read_stored_config(self) -> dict[str, Any] | None:
        """The stored config dict as written, or ``None`` if there is none; DamagedFile if the file
        is not a JSON object, ConfigError if it is not an rp1 config."""
        file = self.path / CONFIG
        if not file.exists():
            return None
        data = self.read_file(CONFIG, "config")
        try:
            config = json.loads(data)
        except ValueError as err:  # UnicodeDecodeError included
            raise DamagedFile(f"{file} is not valid JSON ({err})") from None
        if not isinstance(config, dict):
            raise DamagedFile(
                f"{file} does not hold a config (a JSON object), but a {type(config).__name__}"
            )
        missing = [key for key in CONFIG_KEYS if key not in config]
        if missing:
            raise ConfigError(
                f"{file} is not the config of an rp1 run (missing key(s) {', '.join(missing)}); rp1 leaves this directory alone"
            )
        return config

    def prepare(
        self,
        config: dict[str, Any],
        resume: bool = False,
        overwrite: bool = False,
        restore: Callable[[dict[str, Any]], Any] | None = None,
    ) -> Any:
        """Check that ``config`` may run here, write ``config.json`` and return the checkpointed
        state to continue from (``restore`` applied to the checkpoint's dict), or ``None`` to start
        afresh. Neither flag: the directory holds no run; ``resume``: it holds a run of ``config``
        (stored config migrated), which goes on as :meth:`held` says: a run with a checkpoint
        continues, one holding nothing a restart would not write again starts afresh, a finished
        run or a finished run's copy (:meth:`holds_finished`) is checked and left as it is, no
        file written, and results short of the budget without a checkpoint are refused;
        ``overwrite``: :data:`RUN_FILES` are deleted first. Every refusal (ConfigError, or what
        ``restore`` raises) comes before anything is written. The caller owns the directory."""
        check_writable_dir(self.path)
        if resume and overwrite:
            raise ConfigError(
                "--resume and --overwrite exclude each other: continue the run or replace it"
            )
        saved = None
        if overwrite:
            self.read_stored_config()  # refuses a directory whose config.json is not rp1's
            self.clear()
        elif resume:
            saved = self._check_resume(config)
            if saved is not None and restore is not None:
                saved = restore(saved)
        else:
            self._check_new(config)
        self._config = config
        if resume and self.holds_finished(config):
            return saved  # nothing to continue: no file is written
        with storage_errors("write", self.path / FINISHED):
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / FINISHED).unlink(missing_ok=True)
        write_atomically(self.path / CONFIG, json.dumps(config, indent=2).encode(), "config")
        return saved

    def _run_files(self) -> list[str]:
        return [
            name for name in (METRICS, str(CHECKPOINT), FINISHED) if (self.path / name).exists()
        ]

    def other_config(self, config: dict[str, Any]) -> str:
        """``""`` if the directory holds no config or one that reads as ``config``; else the first
        differences."""
        read = self.read_config()
        return "" if read is None or read == config else config_diff(read, config)

    def continued(self, config: dict[str, Any]) -> dict[str, Any]:
        """``config`` as it continues the run held here, if any (:func:`~rp1.config.migrations.continued`:
        the keys the stored config lacks keep the behaviour its schema had)."""
        return continued(config, self.read_stored_config())

    def _check_new(self, config: dict[str, Any]) -> None:
        other = self.other_config(config)
        if other:
            raise ConfigError(
                f"{self.path} holds a run of another config ({other}); "
                "choose another --out, or pass --overwrite to replace that run"
            )
        files = self._run_files()
        if files:
            if (self.path / CONFIG).exists():
                self.held(config)  # results no --resume continues are refused as such
            held = (
                "this run"
                if (self.path / CONFIG).exists()
                else f"a run ({', '.join(files)}) without its {CONFIG}"
            )
            raise ConfigError(
                f"{self.path} already holds {held}; pass --resume to continue it or --overwrite to start afresh"
            )

    def _check_resume(self, config: dict[str, Any]) -> dict[str, Any] | None:
        stored = self.read_stored_config()
        other = self.other_config(config)
        if other:
            raise ConfigError(f"--resume: {self.path} holds a run of another config ({other})")
        if stored is None and not self.has_checkpoint():
            raise ConfigError(f"--resume: no run to resume in {self.path}")
        # before reading a checkpoint of an older layout
        if stored is not None and self.has_checkpoint():
            check_continuable(stored, str(self.path / CONFIG))
        saved = self.load_checkpoint(config) if self.has_checkpoint() else None
        self.held(config)  # refuses what a restart would replace
        return saved

    def clear(self) -> None:
        """Delete the files rp1 wrote here (:data:`RUN_FILES`, with temporary files a kill left) and
        the folders of :data:`RUN_FILES` they leave empty; any other file stays."""
        self._chunks = Chunks(self.path / CHECKPOINT.parent)
        with storage_errors("delete", self.path):
            for folder, patterns in RUN_FILES.items():
                directory = self.path / folder
                if directory.is_symlink() or not directory.is_dir():
                    continue
                for entry in directory.iterdir():
                    if not entry.is_dir() and _written_by_rp1(entry.name, patterns):
                        entry.unlink()
                if folder != "." and not any(directory.iterdir()):
                    directory.rmdir()

    def write_metrics(self, rows: list[dict[str, Any]]) -> None:
        """Replace ``metrics.csv`` by ``rows`` with a column for each of their keys
        (:func:`metric_columns`), atomically (used when starting or resuming)."""
        self._replace_csv(METRICS, metric_columns(rows), [_clean(r) for r in rows])

    def append_metrics(self, row: dict[str, Any]) -> None:
        """Append one row and flush it to disk; if it has a key the file has no column for, the
        file is rewritten atomically with the columns added (the earlier rows empty there)."""
        row = _clean(row)
        columns, written = self.read_metric_rows()
        if not set(row) <= set(columns):
            self._replace_csv(
                METRICS, metric_columns([dict.fromkeys(columns), row]), [*written, row]
            )
            return
        self._append_csv(METRICS, columns, [row])

    def write_evaluations(self, rows: list[dict[str, Any]]) -> None:
        """Replace ``evaluations.csv`` by the grid's ``rows`` (:data:`EVALUATION_COLUMNS`),
        atomically (used when starting or resuming)."""
        self._replace_csv(EVALUATIONS, list(EVALUATION_COLUMNS), [_clean(r) for r in rows])

    def append_evaluations(self, rows: list[dict[str, Any]]) -> None:
        """Append the grid's ``rows`` to ``evaluations.csv`` (written by :meth:`write_evaluations`)
        and flush them to disk."""
        if rows:
            self._append_csv(EVALUATIONS, list(EVALUATION_COLUMNS), [_clean(r) for r in rows])

    def _append_csv(self, name: str, columns: list[str], rows: list[dict[str, Any]]) -> None:
        with (
            storage_errors("write", self.path / name),
            open(self.path / name, "a", newline="") as f,
        ):
            csv.DictWriter(f, columns).writerows(rows)
            f.flush()
            os.fsync(f.fileno())

    def read_metric_rows(self) -> tuple[list[str], list[dict[str, str]]]:
        """The columns and rows (as strings) of ``metrics.csv``; none if there is no file.
        :class:`~rp1.core.errors.DamagedFile` naming it if it is not UTF-8 text of CSV."""
        file = self.path / METRICS
        if not file.exists():
            return [], []
        try:
            text = self.read_file(METRICS, "metrics").decode()
            reader = csv.DictReader(io.StringIO(text, newline=""))
            return list(reader.fieldnames or []), list(reader)
        except (UnicodeDecodeError, csv.Error) as err:
            raise DamagedFile(f"{file} is damaged: {_cause(err)}") from None

    def _replace_csv(self, name: str, columns: list[str], rows: list[dict[str, Any]]) -> None:
        text = io.StringIO(newline="")
        writer = csv.DictWriter(text, columns)
        writer.writeheader()
        writer.writerows(rows)
        write_atomically(self.path / name, text.getvalue().encode(), name.removesuffix(".csv"))

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Write ``state`` (nested dicts of arrays, numbers, strings) with the config it belongs
        to and the size of its program (:data:`SEEDS_PER_PROCESS`: 1, a run alone), sealed with
        its checksum (:mod:`rp1.rundir.sealed`), atomically: on any failure the previous
        checkpoint stays as it was. Its ``appended`` arrays (:mod:`rp1.rundir.checkpoints`) are
        written in chunks of the rows new since the last save (:mod:`rp1.rundir.chunks`), before
        the head that lists them."""
        appended = state.get("appended", {})
        listed = self._chunks.write(appended)
        data = {
            "config": _canonical(self._bound_config()),
            "agent": {**state, "appended": {}} if appended else state,
            "chunks": listed,
            SEEDS_PER_PROCESS: 1,
        }
        write_atomically(self.checkpoint_path, sealed_parts(data), "checkpoint")
        self._chunks.commit(listed)
        self._chunks.prune()

    def load_checkpoint(self, config: dict[str, Any]) -> dict[str, Any]:
        """The agent state saved by :meth:`save_checkpoint` under ``config`` (its checksum
        checked; an unsealed checkpoint is read as it is);
        :class:`~rp1.core.errors.DamagedFile` if the file is not such a checkpoint or its checksum
        does not match, ConfigError if it was written under another config."""
        file = self.checkpoint_path
        data, _ = unseal(self.read_file(CHECKPOINT, "checkpoint"), file, "checkpoint")
        try:
            saved, agent = json.loads(data["config"]), data["agent"]
            if not isinstance(saved, dict) or not isinstance(agent, dict):
                raise TypeError("its config is not a JSON object, or its state not a map")
        except (ValueError, TypeError, KeyError) as err:  # not {"config", "agent"}
            raise DamagedFile(
                f"checkpoint {file} is corrupt or not an rp1 checkpoint ({_cause(err)})"
            ) from None
        check_continuable(saved, f"checkpoint {file}")
        saved = migrate(saved, f"checkpoint {file}")
        if saved != config:
            raise ConfigError(
                f"checkpoint {file} belongs to a run of another config ({config_diff(saved, config)})"
            )
        if "chunks" in data:  # before incremental checkpoints: none
            read = lambda path: self.read_file(path.relative_to(self.path), "checkpoint rows")  # noqa: E731
            agent = {**agent, "appended": self._chunks.read(data["chunks"], read, file)}
        try:
            return migrate_layout(agent, saved, f"checkpoint {file}")
        except (ValueError, TypeError, KeyError) as err:  # a state no layout describes
            raise DamagedFile(
                f"checkpoint {file} is corrupt or not an rp1 checkpoint ({_cause(err)})"
            ) from None

    def mark_finished(self) -> None:
        """Write the ``finished`` marker of the bound config, atomically."""
        write_atomically(
            self.path / FINISHED,
            (config_hash(self._bound_config()) + "\n").encode(),
            "finished marker",
        )

    def _bound_config(self) -> dict[str, Any]:
        if self._config is None:
            raise RuntimeError(
                "RunDir.prepare() binds a config before checkpoints or markers are written"
            )
        return self._config


def config_hash(config: dict[str, Any]) -> str:
    """A SHA-256 of ``config``, independent of key order and of the schema number it is written
    with (``"schema"``), so that markers and policy files match a config that records no schema."""
    return hashlib.sha256(
        _canonical({k: v for k, v in config.items() if k != SCHEMA_KEY}).encode()
    ).hexdigest()


def config_hashes(config: dict[str, Any]) -> set[str]:
    """The hashes (:func:`config_hash`) a file of the run of ``config`` (as this rp1 reads it) may
    hold: that of ``config`` as each schema up to this one wrote it
    (:func:`~rp1.config.migrations.written_as`), so that a file an earlier rp1 wrote for the run
    (a policy file) is still the run's after its config was migrated."""
    written = (written_as(config, schema) for schema in range(1, SCHEMA + 1))
    return {config_hash(c) for c in written if c is not None}


def _canonical(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def _cause(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _quoted(text: str, limit: int = 40) -> str:
    """``text`` quoted, cut to ``limit`` characters."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… ({len(text):,} characters)"


def _written_by_rp1(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether a file ``name`` is one of ``patterns`` or a temporary file of one
    (:func:`~rp1.core.storage.is_temporary`)."""
    return any(fnmatch.fnmatchcase(name, p) or is_temporary(name, p) for p in patterns)


def _holds_result(row: dict[str, Any]) -> bool:
    """Whether a ``metrics.csv`` row is one a restart would not write again: a row of a trained
    policy (:func:`evaluates_trained`), or one whose iteration is not a number (kept, to be safe)."""
    iteration = _number(row.get("iteration"))
    return not math.isfinite(iteration) or bool(evaluates_trained(iteration))


def samples_reached(rows: Iterable[dict[str, Any]], method: str) -> float:
    """Real samples a run had collected by the last of its ``metrics.csv`` ``rows`` (dicts of
    numbers or the file's strings; 0 for none). A model-based row is written before its collection
    phase, so it reached ``samples + phase_samples`` (an empty ``phase_samples``: 0); a model-free
    row's ``samples`` already include its batch (:mod:`rp1.agents.modelfree`). A row whose
    ``samples`` is not a number counts for nothing."""
    reached = 0.0
    for row in rows:
        samples = _number(row.get("samples"))
        phase = 0.0 if method == MODEL_FREE else _number(row.get("phase_samples"))
        if math.isfinite(samples):
            reached = max(reached, samples + (phase if math.isfinite(phase) else 0.0))
    return reached


def _number(value: Any) -> float:
    """``value`` (a number or a CSV field) as a float; NaN if it is empty or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def metric_columns(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The columns of ``metrics.csv`` for ``rows``: :data:`METRIC_COLUMNS`, then every other key of
    the rows in the order of first appearance (row by row, each row's keys in order)."""
    others = dict.fromkeys(key for row in rows for key in row if key not in METRIC_COLUMNS)
    return [*METRIC_COLUMNS, *others]


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with ``None`` as an empty field; ValueError for a value that is not a number (the
    report reads every field as one)."""
    for key, value in row.items():
        if isinstance(value, bool) or not (value is None or isinstance(value, numbers.Real)):
            raise ValueError(f"metrics column {key} holds {value!r}, not a number")
    return {k: ("" if v is None else v) for k, v in row.items()}


def config_diff(old: dict, new: dict, prefix: str = "") -> str:
    """A short description of the first differing keys of two config dicts."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            inner = config_diff(a, b, f"{prefix}{key}.")
            if inner:
                out.append(inner)
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} there, {b!r} now")
    return "; ".join(out[:3])
