"""Stopping a run at once on SIGINT or SIGTERM, even inside a compiled JAX call
(:func:`exit_on_signals`); what ``rp1 train`` wraps a run in."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import threading
from typing import Iterator

from rp1.runs import TEMPORARY

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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
    watcher = threading.Thread(target=_exit_on_signal_byte, args=(read_fd, message), name="rp1-signals", daemon=True)
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


def remove_temporary() -> None:
    """Remove the temporary files and folders being written now (:data:`rp1.runs.TEMPORARY`), so
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
                if child.daemon:  # as a normal exit would (environment workers), without their complaints
                    child.kill()
            if os.isatty(1):
                os.write(1, b"\x1b[?25h\n")  # the progress bar hid the cursor
            os.write(2, f"rp1: interrupted ({signal.Signals(byte[0]).name}); {message}\n".encode())
            os._exit(128 + byte[0])
