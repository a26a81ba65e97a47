"""The errors rp1 reports to a user: one line `rp1: error: …` and an exit code, no traceback;
and [`Interrupted`][rp1.core.errors.Interrupted], a stop signal: one line
`rp1: interrupted (…); …`.

Each is exported by `rp1` (`rp1.ConfigError`, …). `rp1.cli.main` is the one place that turns
them into that line (`RP1_DEBUG=1` shows an error's traceback instead). Anything else that
escapes is a bug and keeps its traceback.
"""

import difflib
import signal
import sys
from collections.abc import Iterable

QUOTE_LIMIT = 200
"""Characters of a value an error message quotes at most (a 100 kB ``--set`` value is cut)."""


def clipped(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text``, or its first ``limit`` characters and how long it is."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def shown(value: object) -> str:
    """``repr(value)`` for a message, :func:`clipped`; a value holding an integer of more digits
    than Python writes out (``sys.get_int_max_str_digits``) said to be so."""
    try:
        return clipped(repr(value))
    except ValueError:
        digits = sys.get_int_max_str_digits()
        return f"a value too long to write out (an integer of more than {digits:,} digits)"


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """``"did you mean X? "``, X the one of ``choices`` closest to ``word`` (:mod:`difflib`'s
    ratio at least ``cutoff``); ``""`` when none is that close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f"did you mean {close[0]}? " if close else ""


def described(err: BaseException) -> str:
    """What ``err`` is, for one line: ``Type: first line of its message`` (:func:`clipped`), or
    for a ``SystemExit`` the ``sys.exit`` call that raised it."""
    if isinstance(err, SystemExit):
        return f"it called sys.exit({err.code!r})"
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {clipped(lines[0])}" if lines else type(err).__name__


def one_line(err: BaseException | str) -> str:
    """The message of ``err`` on one line, as ``rp1: error: …`` shows it; an ``OSError`` that is
    no :class:`Rp1Error` as its file and cause. A word longer than :data:`QUOTE_LIMIT` characters
    (a huge value quoted back) is cut there (:func:`clipped`)."""
    if isinstance(err, OSError) and not isinstance(err, Rp1Error) and err.strerror:
        text = f"{err.filename}: {err.strerror}" if err.filename else err.strerror
    else:
        text = str(err)
    return " ".join(clipped(word) for word in text.split())


class Rp1Error(Exception):
    """An error a user can act on; its message names the value or file and the cause.

    Attributes:
        exit_code: The exit code of the command it stops.
    """

    exit_code = 1


class ConfigError(Rp1Error, ValueError):
    """Bad input (exit code 2): a value given by the user is unknown, of the wrong type or out of
    range, or a file it points rp1 at is not what it must be (a corrupt checkpoint, a run of another
    config). Raised before anything is written, or without damaging what was."""

    exit_code = 2


class DamagedFile(ConfigError):
    """A file rp1 wrote in a run directory is damaged (exit code 2): its content is not what rp1
    writes there (truncated, altered, a checksum that does not match, a value out of range). The
    message names the file and what is wrong; nothing is overwritten. A sweep fails that run alone
    with this message and runs the others."""


class ResultsWithoutCheckpoint(ConfigError):
    """A run directory holds results of a trained policy short of the run's budget and no
    checkpoint to continue them from (a copy made mid-run, a deleted checkpoint), exit code 2:
    ``--resume`` and ``rp1 sweep`` leave it as it is, since starting afresh would replace those
    results; ``--overwrite`` does so when asked. A sweep fails that run alone with this message
    and runs the others."""


class LinkOutside(ConfigError):
    """A file rp1 reads in a directory (a run's files) is a link that leads out of it (exit code 2):
    rp1 does not read it, so that nothing from elsewhere is taken for the run's own. The message
    names the file and where it leads."""


class StorageError(Rp1Error, OSError):
    """The machine failed a file operation (exit code 1): a full disk, an I/O error, a file that
    cannot be read. The message names the file and the operating system's cause."""

    exit_code = 1


class RenderError(Rp1Error):
    """The machine cannot render (exit code 1): MuJoCo finds no OpenGL for ``MUJOCO_GL``. The
    message names the backend, the cause and what to install."""

    exit_code = 1
    # Debian/Ubuntu: what MuJoCo's EGL loads
    EGL_PACKAGES = "libegl1 libopengl0 libegl-mesa0 libgl1-mesa-dri"

    @classmethod
    def of(cls, what: str, backend: str, cause: BaseException) -> "RenderError":
        """The error of a rendering that failed, with what to install.

        Args:
            what: What failed, e.g. `"MuJoCo cannot set up OpenGL"`.
            backend: The value of `MUJOCO_GL`.
            cause: The exception that made it fail.

        Returns:
            The error, its message naming the backend, the cause and what to install.
        """
        return cls(
            f"{what} with MUJOCO_GL={backend} ({type(cause).__name__}: {cause}); install Mesa's EGL "
            f"(Debian/Ubuntu: apt-get install {cls.EGL_PACKAGES}) and set MUJOCO_GL=egl, or "
            "MUJOCO_GL=osmesa with OSMesa (libosmesa6), or run with a display (MUJOCO_GL=glfw)"
        )


class DivergedError(Rp1Error):
    """A run's training diverged (exit code 1): the world model's fit or the policy's updates made
    a loss or the policy's parameters inf or NaN. The message names what diverged, the iteration and
    the setting that likely caused it; the run stops before the iteration's row or checkpoint is
    written, so its last checkpoint stays as it was."""

    exit_code = 1

    @classmethod
    def of(
        cls, what: str, iteration: int, setting: str, value: object, cause: str = ""
    ) -> "DivergedError":
        """The error of a value that became inf or NaN, naming the setting that likely caused it.

        Args:
            what: What diverged, e.g. `"the world model's fit"`.
            iteration: The iteration it diverged in.
            setting: The config key that likely caused it.
            value: Its value.
            cause: The details, if any.

        Returns:
            The error.
        """
        details = f" ({cause})" if cause else ""
        return cls(
            f"{what} diverged in iteration {iteration}{details}; likely cause: {setting} = {value} is too large "
            "(the run's last checkpoint is kept)"
        )


class Interrupted(BaseException):
    """SIGINT or SIGTERM stopped the command: one line `rp1: interrupted (SIGTERM); <message>`
    and exit code 128 + the signal's number (130, 143).

    A `BaseException`, as `KeyboardInterrupt` is, so that no `except Exception` takes it for a
    failure. Raised by `rp1.core.signals.raise_on_signals` around training.

    Args:
        signum: The signal's number.
        message: How to continue (e.g. `"pass --resume to continue the run"`).
    """

    def __init__(self, signum: int, message: str):
        self.signum = signum
        self.message = message
        super().__init__(f"interrupted ({signal.Signals(signum).name}); {message}")

    @property
    def exit_code(self) -> int:
        """128 + the signal's number."""
        return 128 + self.signum
