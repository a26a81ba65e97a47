"""Stopping on SIGINT or SIGTERM: a run at once, even inside a compiled JAX call
(:func:`exit_on_signals`, what ``rp1 train`` and a sweep's worker wrap a run in), and a process
that must clean up first, such as a sweep's, which stops its workers (:func:`raise_on_signals`)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import threading
from collections.abc import Iterator

from rp1.core.errors import Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
TEMPORARY: set[str] = set()
"""Temporary files and folders being written now (atomic writes, videos): what an exit on a signal
removes before it ends the process (:func:`exit_on_signals`)."""


@contextlib.contextmanager
def exit_on_signals(message: str) -> Iterator[None]:
    """While active, SIGINT and SIGTERM end the process at once, even in the middle of a compiled
    JAX call: one line ``rp1: interrupted (SIGINT); <message>`` on stderr, exit code 128 + the
    signal's number (130, 143).

    Files are left as a SIGKILL would leave them, which a run survives: its checkpoint is replaced
    atomically, so the last one stays valid. (A ``KeyboardInterrupt`` would not do: raised while
    JAX runs a garbage-collection callback, Python prints and drops it and the run goes on.)
    Temporary files being written (:func:`remove_temporary`) are removed first. A
    thread watches a wakeup pipe that the interpreter writes the signal's number to from its C
    handler, so the exit does not wait for the main thread; it kills the daemonic child processes
    (environment workers) first, as a normal exit would end them. Outside the main thread this
    does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    watcher = threading.Thread(
        target=_exit_on_signal_byte, args=(read_fd, message), name="rp1-signals", daemon=True
    )
    watcher.start()
    handlers = {sig: signal.signal(sig, lambda *_: None) for sig in STOP_SIGNALS}
    wakeup_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(wakeup_fd)
        os.write(write_fd, b"\0")  # not a signal number: ends the watcher
        watcher.join()
        os.close(read_fd)
        os.close(write_fd)


@contextlib.contextmanager
def raise_on_signals(message: str) -> Iterator[None]:
    """While active, SIGINT and SIGTERM raise :class:`~rp1.core.errors.Interrupted` with ``message`` in
    the main thread, wherever it is, so that what it interrupts cleans up as the exception passes
    (``with`` blocks, ``finally``); ``rp1.cli.main`` makes it one line and exit code 130 or 143.
    For a process that waits in Python (a sweep's, for its workers): inside a compiled JAX call use
    :func:`exit_on_signals`. Outside the main thread this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted(signum, message)

    handlers = {sig: signal.signal(sig, interrupt) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def remove_temporary() -> None:
    """Remove the temporary files and folders being written now (:data:`TEMPORARY`), so
    that an exit on a signal leaves none behind."""
    for path in list(TEMPORARY):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _exit_on_signal_byte(read_fd: int, message: str) -> None:
    while (byte := os.read(read_fd, 1)) not in (b"", b"\0"):
        if byte[0] in STOP_SIGNALS:
            remove_temporary()
            for child in multiprocessing.active_children():
                # as a normal exit would (environment workers), without their complaints
                if child.daemon:
                    child.kill()
            if os.isatty(1):
                os.write(1, b"\x1b[?25h\n")  # the progress bar hid the cursor
            stop = Interrupted(byte[0], message)
            os.write(2, f"rp1: {stop}\n".encode())
            os._exit(stop.exit_code)
