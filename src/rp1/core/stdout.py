"""Standard output that fails in one line: a write to it that fails (a full disk, ``rp1 presets >
/dev/full``; a reader that has gone; stdout closed, ``rp1 presets >&-``) raises
:class:`~rp1.core.errors.StorageError` ``cannot write to stdout: …`` (exit code 1, one line from
``rp1.cli.main``), and from then on what is written to stdout is dropped, so that Python's exit
does not report the failure a second time (with a traceback and exit code 120).

``rp1.cli.main`` calls :func:`open_stdout` first and :func:`stdout_failure` once a command has
returned (the last output is written then).
"""

from __future__ import annotations

import io
import os
import sys

from rp1.core.errors import StorageError


class _Stdout(io.RawIOBase):
    """File descriptor ``fd`` (``None``: stdout was closed when the process started) as a raw
    stream whose first failed write raises StorageError and whose later writes are dropped."""

    def __init__(self, fd: int | None):
        super().__init__()
        self.fd = fd
        self.failed = False

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.fd is not None and os.isatty(self.fd)

    def fileno(self) -> int:
        if self.fd is None:
            raise OSError("stdout is closed")
        return self.fd

    def write(self, data: bytes) -> int:  # type: ignore[override]  # the buffer's bytes
        if self.failed:
            return len(data)
        try:
            if self.fd is None:
                raise OSError("it is closed")
            return os.write(self.fd, data)
        except OSError as err:
            self.failed = True
            raise StorageError(f"cannot write to stdout: {err.strerror or err}") from err


def open_stdout() -> None:
    """Make this process's stdout one of :class:`_Stdout` (a stdout replaced by another, such as a
    test's capture, is left alone). Without this, a process started with stdout closed has none,
    and click drops what a command prints without a word."""
    if sys.stdout is not None and sys.stdout is not sys.__stdout__:
        return  # replaced already: by a test's capture, or by an earlier call
    if sys.stdout is not None:
        sys.stdout.flush()
    stdout = sys.stdout
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_Stdout(None if stdout is None else stdout.fileno())),
        encoding=getattr(stdout, "encoding", None) or "utf-8",
        errors=getattr(stdout, "errors", None) or "strict",
        line_buffering=bool(stdout is not None and stdout.isatty()),
    )


def stdout_failure() -> StorageError | None:
    """The StorageError of stdout if what it still holds cannot be written, else ``None``."""
    try:
        sys.stdout.flush()
    except StorageError as failed:
        return failed
    return None
