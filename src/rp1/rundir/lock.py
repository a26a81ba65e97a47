"""One owner per run directory: an exclusive advisory lock on ``RUN/lock``.

A process that trains a run (``rp1 train``, with ``--resume`` or ``--overwrite`` too, and each run
of ``rp1 sweep``) holds :class:`RunLock` of its directory from before it reads or writes anything
there until it ends. A second one is refused with :class:`RunInUse`, whose message names the holder
(pid, host, since when) as the holder wrote it into the lock file::

    with RunLock("runs/hc/seed0"):        # RunInUse (exit code 2) while another process holds it
        ...                               # read, train, write

The lock is a POSIX record lock (``fcntl.lockf``) on the whole file:

- the kernel releases it when the process ends, however it ends (a ``kill -9`` leaves no stale
  lock: a ``--resume`` can take over at once);
- it works across hosts where the file system forwards POSIX locks: a local disk, NFSv4, NFSv3
  with its lock daemon (``lockd``). An NFS mount with ``nolock`` keeps locks local to each host:
  two hosts could then both own a run. A file system that supports no locks fails the
  acquisition with :class:`~rp1.core.errors.StorageError` naming the cause (``ENOLCK``: "No locks
  available"), before anything is read or written;
- POSIX locks belong to a process, not to a file descriptor: a second lock of the same file from
  the same process would succeed, and closing *any* descriptor of the file releases the lock. So
  this module keeps one descriptor open per lock and a registry of the directories this process
  holds (a second :class:`RunLock` of one of them is refused as another process's would be), and
  nothing else in rp1 opens a lock file it holds.

Readers (``rp1 report``, a sweep's planning) take no lock: every file but ``metrics.csv`` is
replaced atomically, and ``metrics.csv`` only grows by whole rows (see :mod:`rp1.rundir.files`).

The holder removes the lock file while still holding the lock, then closes it, so a finished run
leaves none; an acquirer checks after locking that the file it locked is still the one at the
path (a holder may have removed it in between), else it tries again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rp1.core.errors import ConfigError, StorageError

LOCK = "lock"
ATTEMPTS = 50
"""Tries to take a lock whose holder cannot be read or whose file was replaced meanwhile."""
RETRY_S = 0.02
BUSY = (errno.EACCES, errno.EAGAIN)
"""What ``lockf`` raises when another process holds the lock."""
GONE = (errno.ESTALE, errno.ENOENT)
"""What an operation on a lock file that another process removed meanwhile may raise (NFS)."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: a process ``pid`` on ``host`` since ``since`` (local time)."""

    pid: int
    host: str
    since: str

    @classmethod
    def this_process(cls) -> Holder:
        return cls(os.getpid(), socket.gethostname(), datetime.now().strftime("%Y-%m-%d %H:%M:%S"))

    def describe(self) -> str:
        here = (
            " (this process)"
            if (self.pid, self.host) == (os.getpid(), socket.gethostname())
            else ""
        )
        return f"pid {self.pid}{here} on host {self.host} since {self.since}"


class RunInUse(ConfigError):
    """Another process (or this one, through another lock) owns the run directory.

    A [`ConfigError`][rp1.core.errors.ConfigError] (exit code 2), whose message names the owner
    and says to pass `--resume` once it has ended.

    Args:
        run_dir: The run directory.
        holder: Who owns it, as its lock file says (`None`: unknown).

    Attributes:
        holder: Who owns it (`None`: unknown).
    """

    def __init__(self, run_dir: Path, holder: Holder | None):
        who = holder.describe() if holder else "another process"
        super().__init__(
            f"{run_dir} is in use by {who}; wait until it ends (or stop it), then pass --resume to continue the run"
        )
        self.holder = holder


_HELD: dict[str, RunLock] = {}  # real path of a run directory -> the lock this process holds on it
_REGISTRY = threading.Lock()


class RunLock:
    """The exclusive lock of the run directory ``run_dir``; see the module docstring.

    :meth:`acquire` creates the directory if needed (and :meth:`release` removes what it created
    if that is still empty); a context manager acquires on entry and releases on exit.
    """

    def __init__(self, run_dir: str | os.PathLike):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK
        self.holder: Holder | None = None
        self._fd: int | None = None
        self._key = ""
        self._created: list[Path] = []

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> RunLock:
        """Take the lock; :class:`RunInUse` if another process or lock holds it, StorageError if
        the file system cannot lock or the directory cannot be made."""
        if self.held:
            raise RuntimeError(f"{self.path} is already held by this RunLock")
        with _REGISTRY:
            self._created = _make_dirs(self.run_dir)
            self._key = os.path.realpath(self.run_dir)
            if self._key in _HELD:
                self._remove_created()
                raise RunInUse(self.run_dir, _HELD[self._key].holder)
            try:
                self._fd = self._lock()
                self.holder = Holder.this_process()
                _write_holder(self._fd, self.holder, self.path)
            except BaseException:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                self._remove_created()
                raise
            _HELD[self._key] = self
        return self

    def _lock(self) -> int:
        """A descriptor of the lock file, locked by this process."""
        holder = None
        for _ in range(ATTEMPTS):
            fd, created = _open(self.path)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno in BUSY:
                    holder = read_holder(self.path)
                    if holder is not None:
                        raise RunInUse(self.run_dir, holder) from None
                elif err.errno not in GONE:
                    if created:
                        with contextlib.suppress(OSError):
                            os.unlink(self.path)
                    raise StorageError(
                        f"cannot lock {self.path}: {err.strerror or err}; rp1 needs POSIX advisory locks (fcntl) on the "
                        "file system of a run directory (a local disk, NFSv4, NFSv3 with lockd)"
                    ) from err
            else:
                if _is_at(fd, self.path):
                    return fd
                # its holder removed it before we locked it: lock the one at the path now
                os.close(fd)
            time.sleep(RETRY_S)  # the holder is writing its name, or releasing
        raise RunInUse(self.run_dir, holder)

    def release(self) -> None:
        """Give the lock up: remove the lock file, then close it (which releases the lock), and
        remove the directories :meth:`acquire` created if they are empty. Does nothing if not held."""
        with _REGISTRY:
            if self._fd is None:
                return
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            os.close(self._fd)
            self._fd = None
            _HELD.pop(self._key, None)
            self._remove_created()

    def _remove_created(self) -> None:
        for directory in reversed(self._created):
            try:
                directory.rmdir()
            except OSError:  # not empty (the run wrote there) or gone: keep the rest too
                break
        self._created = []


@contextlib.contextmanager
def owning(run_dir: str | os.PathLike, lock: RunLock | None = None) -> Iterator[RunLock]:
    """``lock`` if the caller holds it (it must be the lock of ``run_dir``), else a new
    :class:`RunLock` of ``run_dir`` held for the block."""
    if lock is not None:
        if not lock.held or os.path.realpath(lock.run_dir) != os.path.realpath(run_dir):
            raise RuntimeError(f"the lock passed for {run_dir} is not held on it")
        yield lock
        return
    with RunLock(run_dir) as new:
        yield new


def _open(path: Path) -> tuple[int, bool]:
    """A read-write descriptor of the lock file, and whether this call created it."""
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW  # a link planted at the path is not followed
    for _ in range(ATTEMPTS):
        try:
            try:
                return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644), True
            except FileExistsError:
                return os.open(path, flags), False
        except FileNotFoundError:
            if not path.parent.is_dir():
                raise StorageError(f"cannot open {path}: its directory is gone") from None
            # removed by its holder between our two opens: again
        except OSError as err:
            raise _storage_error("open", path, err) from err
    raise StorageError(f"cannot open {path}: it is removed as often as it is made")


def read_holder(path: str | os.PathLike) -> Holder | None:
    """The holder a lock file names, or ``None`` if it names none (being written, removed,
    unreadable). Never call it on a lock this process holds: closing the file would release it."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read())
        return Holder(int(data["pid"]), str(data["host"]), str(data["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_holder(fd: int, holder: Holder, path: Path) -> None:
    data = (
        json.dumps({"pid": holder.pid, "host": holder.host, "since": holder.since}).encode() + b"\n"
    )
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        os.fsync(fd)
    except OSError as err:
        raise _storage_error("write", path, err) from err


def _is_at(fd: int, path: Path) -> bool:
    """Whether the file open as ``fd`` is the one at ``path``."""
    try:
        at, mine = os.stat(path), os.fstat(fd)
    except OSError:  # removed (or stale on NFS) meanwhile
        return False
    return (mine.st_dev, mine.st_ino) == (at.st_dev, at.st_ino)


def _make_dirs(path: Path) -> list[Path]:
    """Create ``path`` and its missing parents; the ones this call created, outermost first."""
    missing = []
    while not os.path.lexists(path) and path.parent != path:
        missing.append(path)
        path = path.parent
    created = []
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:  # made by another process meanwhile: not ours to remove
            continue
        except OSError as err:
            raise _storage_error("create", directory, err) from err
        created.append(directory)
    return created


def _storage_error(action: str, path: Path, err: OSError) -> StorageError:
    return StorageError(f"cannot {action} {path}: {err.strerror or err}")
