"""Lockstep runs: a retired format, several seeds computed in one program by rp1 0.2.x
(``--seeds-per-process N``). Such a program computed in batches of ``N``, with other kernels than a
run alone, so a run alone would not continue one exactly: this rp1 reads a lockstep run's results
(``rp1 report`` shows its program size in the cell's ``program`` column) but never resumes it.

A lockstep run is known by the program size its checkpoint seals (:data:`SEEDS_PER_PROCESS`,
beside the config; this rp1 seals 1, a run alone) or, for a checkpoint sealed before sizes were
or a run without a checkpoint, by its record's last entry (``environment.json``, whose entries
rp1 0.2.x wrote with the size; an entry without it is a run alone). This module is where the
format is recognised; :func:`check_program` is what training and sweeps call before a resume.
"""

from __future__ import annotations

import os
from pathlib import Path

from rp1.core.errors import ConfigError, DamagedFile, shown
from rp1.rundir.files import CHECKPOINT, ENVIRONMENT, SEEDS_PER_PROCESS, RunDir
from rp1.rundir.provenance import read_record
from rp1.rundir.sealed import unseal

CONTINUED_BY = "rp1 0.2.x with --seeds-per-process N, up to commit 23cde81"
"""The releases that continue a lockstep run."""


def check_program(run: RunDir) -> None:
    """``ConfigError`` (:func:`program_mismatch`) if the run in ``run`` is a lockstep run, by the
    size its checkpoint seals or, for a checkpoint sealed before sizes were or a run without one,
    by its record."""
    mismatch = program_mismatch(run.path, sealed_program(run) if run.has_checkpoint() else None)
    if mismatch:
        raise ConfigError(mismatch)


def program_mismatch(run_dir: str | os.PathLike, sealed: int | None = None) -> str:
    """Why the run in ``run_dir`` may not be resumed here (``""`` if it may): it is a lockstep run
    of several seeds, as its checkpoint seals (``sealed``, :func:`sealed_program`) or, for a
    checkpoint sealed before sizes were (``None``), as its record's last entry says. A run of
    such a checkpoint without a record, or with a damaged one, may continue."""
    source = Path(run_dir) / (CHECKPOINT if sealed is not None else ENVIRONMENT)
    was = sealed if sealed is not None else _recorded_program(RunDir(run_dir))
    if was is None or was == 1:
        return ""
    return (
        f"{run_dir} ran with {was} seeds in one program, which this rp1 no longer runs: "
        f"{CONTINUED_BY.replace('N', str(was), 1)} resumes it ({source})"
    )


def sealed_program(run: RunDir) -> int | None:
    """The size of the program ``run``'s checkpoint was written in (:data:`SEEDS_PER_PROCESS`, its
    checksum checked); ``None`` for a checkpoint written before sizes were sealed.
    :class:`~rp1.core.errors.DamagedFile` naming the checkpoint if it is not one or the size is not
    a positive integer."""
    file = run.checkpoint_path
    data, _ = unseal(run.read_file(CHECKPOINT, "checkpoint"), file, "checkpoint")
    size = data.get(SEEDS_PER_PROCESS)
    if size is not None and (type(size) is not int or size < 1):
        raise DamagedFile(
            f"checkpoint {file} is damaged: its program size {shown(size)} is not a positive integer"
        )
    return size


def _recorded_program(run: RunDir) -> int | None:
    """The program size the last entry of ``run``'s record says (:data:`SEEDS_PER_PROCESS`; an
    entry without it: 1), or ``None`` if it has no record, a damaged one or a size that is not a
    positive integer."""
    entries, _ = read_record(run)
    if not entries:
        return None
    was = entries[-1].get(SEEDS_PER_PROCESS, 1)
    return was if isinstance(was, int) and was >= 1 else None
