"""The result files and kept policies of finished runs, copied into a tree of their own (``rp1
export``): what a sweep leaves to keep once its checkpoints are no longer needed, to commit, share,
report on or evaluate (``rp1 evaluate``) elsewhere.

For every run directory under ``root`` (:func:`~rp1.rundir.files.find_run_dirs`) whose ``finished``
marker was written under its ``config.json``, the files of :data:`EXPORTED` it has (the result
files, :data:`~rp1.rundir.files.RESULT_FILES`, and its ``policy/best.msgpack`` and
``policy/last.msgpack``) go to the same relative path under ``out``, each written atomically and
read back to check that it holds the run's bytes. A file already there with the same bytes is left
as it is; one with other bytes is a conflict, and then nothing is written unless ``overwrite``. An
unfinished run, and a run directory this rp1 cannot read (damaged, not rp1's, of a newer schema),
is left out with a note; so is a file that is a link out of its run directory
(:meth:`~rp1.rundir.files.RunDir.read_file`), and the whole run when that file is its
``config.json`` or ``metrics.csv``. Run directories under ``out`` are not taken when ``out`` lies
inside ``root``.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from rp1.core.errors import ConfigError, LinkOutside, StorageError
from rp1.core.storage import read_bytes, write_atomically
from rp1.rundir.files import (
    CONFIG,
    METRICS,
    POLICY_DIR,
    RESULT_FILES,
    RUN_POLICIES,
    RunDir,
    find_run_dirs,
)

EXPORTED = (*RESULT_FILES, *(f"{POLICY_DIR}/{which}.msgpack" for which in RUN_POLICIES))
"""The files of a run ``rp1 export`` copies where the run has them, by their path in the run
directory: its result files and its kept policies (:mod:`rp1.rundir.policy_files`), so that a copy
can be reported on and evaluated."""


class Export(NamedTuple):
    """What :func:`export_runs` did: the copies (run directories under ``out``) it wrote files
    into, those that were already there as they are, and a note per run directory left out."""

    written: list[Path]
    unchanged: list[Path]
    left_out: list[str]

    def describe(self, out: Path) -> str:
        """``rp1 export``'s report of an export to ``out``: the note of each run left out, then
        how many runs were written, already there and left out."""
        counts = (
            f"exported {len(self.written)} runs to {out}; {len(self.unchanged)} already there as "
            f"they are, {len(self.left_out)} left out"
        )
        return "\n".join([*self.left_out, counts])


def finished(run: Path) -> bool:
    """Whether ``run`` reached its budget under the config its ``config.json`` holds;
    ConfigError (DamagedFile included) if rp1 cannot read that config or the marker."""
    run_dir = RunDir(run)
    return run_dir.is_finished(run_dir.read_config())


def result_files(run: Path) -> tuple[dict[str, bytes], list[str]]:
    """The run's files of :data:`EXPORTED` that it has, by name, with their bytes, and a note
    per file left out because it is a link out of the run directory."""
    files, notes = {}, []
    for name in EXPORTED:
        if not (run / name).is_file():
            continue
        try:
            files[name] = RunDir(run).read_file(name, "run file")
        except LinkOutside as err:
            notes.append(f"{run / name}: left out, {err}")
    return files, notes


def present(path: Path) -> bytes | None:
    """The bytes of the file ``path``, None if there is none."""
    return read_bytes(path, "exported run file") if path.is_file() else None


def export_runs(root: Path, out: Path, overwrite: bool = False) -> Export:
    """Copy the result files and kept policies of every finished run under ``root`` to its path
    under ``out`` (see the module docstring). ConfigError, before anything is written, when
    ``root`` holds no run directory, or when a file under ``out`` differs from the run's own and
    not ``overwrite``; StorageError naming the file if one cannot be read or written, or does not
    read back as written."""
    runs = find_run_dirs(root)
    target = out.resolve()
    inside = target.is_relative_to(root.resolve()) and target != root.resolve()
    planned: list[tuple[Path, dict[str, bytes]]] = []
    unchanged: list[Path] = []
    left_out: list[str] = []
    conflicts: list[Path] = []
    for run in runs:
        if inside and run.resolve().is_relative_to(target):
            continue
        try:
            done = finished(run)
        except ConfigError as err:
            left_out.append(f"{run}: left out, {err}")
            continue
        if not done:
            left_out.append(f"{run}: left out, no finished marker (not finished, or a copy)")
            continue
        files, notes = result_files(run)
        left_out += notes
        if not {CONFIG, METRICS} <= set(files):
            left_out.append(f"{run}: left out, its {CONFIG} or {METRICS} is not its own")
            continue
        copy = out / run.relative_to(root)
        there = {name: present(copy / name) for name in files}
        if all(there[name] == data for name, data in files.items()):
            unchanged.append(copy)
            continue
        conflicts += [
            copy / name
            for name, data in files.items()
            if there[name] is not None and there[name] != data
        ]
        planned.append((copy, files))
    if conflicts and not overwrite:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise ConfigError(
            f"{conflicts[0]} differs from its run's own{more}; pass --overwrite to replace them"
        )
    for copy, files in planned:
        for name, data in files.items():
            write_atomically(copy / name, data, "exported run file")
            if present(copy / name) != data:
                raise StorageError(f"{copy / name} does not read back as it was written")
    return Export([copy for copy, _ in planned], unchanged, left_out)
