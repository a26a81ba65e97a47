"""Files written atomically and read with their errors named: the one way rp1 replaces a file
(:func:`write_atomically`: run files, policy files, test sets, videos, report outputs), reads one
(:func:`read_bytes`; :func:`read_inside` for a file that must not lead out of its directory) and
checks that it may write in a directory (:func:`check_writable_dir`).

A file operation the machine fails raises :class:`~rp1.core.errors.StorageError` naming the file
and the operating system's cause (:func:`storage_errors`); a file read through a link that leads
out of the directory it is read from raises :class:`~rp1.core.errors.LinkOutside`. Nothing here
knows what the files hold.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from rp1.core.errors import ConfigError, LinkOutside, StorageError
from rp1.core.signals import TEMPORARY


@contextlib.contextmanager
def storage_errors(action: str, path: Path) -> Iterator[None]:
    """Turn an ``OSError`` inside into a StorageError: ``cannot <action> <path>: <cause>``."""
    try:
        yield
    except OSError as err:
        raise StorageError(f"cannot {action} {path}: {err.strerror or err}") from err


def read_bytes(path: Path, what: str) -> bytes:
    """The content of the file ``path`` (``what`` it is, for the error); StorageError naming the
    file if the machine cannot read it."""
    with storage_errors(f"read {what}", path):
        return path.read_bytes()


def read_inside(directory: Path, path: Path, what: str) -> bytes:
    """:func:`read_bytes` of ``path``, a file under ``directory`` that must stay there once every
    link on its way is followed; :class:`~rp1.core.errors.LinkOutside` naming the file and where it
    leads, before anything is read, if it leads out."""
    target = Path(os.path.realpath(path))
    if not target.is_relative_to(os.path.realpath(directory)):
        raise LinkOutside(
            f"{path} is a link out of {directory} (to {target}); rp1 does not read it"
        )
    return read_bytes(path, what)


def write_atomically(path: Path, data: bytes | Sequence[bytes], what: str) -> None:
    """Replace the file ``path`` (``what`` it is, for the error) by ``data`` (or its parts, one
    after the other) atomically, creating its directory; StorageError naming the file if the
    machine fails."""
    with storage_errors(f"write {what}", path):
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, data)


def is_temporary(name: str, pattern: str) -> bool:
    """Whether a file ``name`` is a temporary file of a file matching ``pattern`` (``fnmatch``):
    ``.NAME.*.tmp`` of :func:`write_atomically`, or ``NAME.tmp``, as an earlier rp1 named them."""
    return fnmatch.fnmatchcase(name, f".{pattern}.*.tmp") or fnmatch.fnmatchcase(
        name, f"{pattern}.tmp"
    )


def check_writable_dir(path: str | os.PathLike, option: str = "--out") -> None:
    """ConfigError unless ``path`` is a directory this process may write in, or one it may create
    (its nearest existing ancestor is such a directory); ``option`` names it in the message.
    Touches nothing."""
    path = Path(path)
    existing = path
    while not os.path.lexists(existing) and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        where = (
            "is not a directory"
            if existing == path
            else f"lies under {existing}, which is not a directory"
        )
        raise ConfigError(f"{option} {path} {where}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {path}: {existing} is not writable")


_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: the mode a file created as usual would get is 0o666 & ~umask


def _atomic_write(path: Path, data: bytes | Sequence[bytes]) -> None:
    """Replace ``path`` by ``data`` through a temporary file of a new, unique name in its directory
    (created exclusively, so no file or link planted there is followed): ``path`` is either the old
    or the new content, never a mix; the temporary file is removed if writing it fails."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    TEMPORARY.add(tmp)
    try:
        with open(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_UMASK)
            for part in [data] if isinstance(data, bytes) else data:
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        TEMPORARY.discard(tmp)
