"""Checkpoints saved beside the run: one thread writes each checkpoint while the next iteration runs.

Packing a state (an agent's ``checkpoint``) only gathers references to its arrays, which nothing
changes after they are made (:class:`rp1.agents.model_based.AgentState`); serialising, checksumming
and writing them (:meth:`RunDir.save_checkpoint <rp1.rundir.files.RunDir.save_checkpoint>`, ~66 MB at
paper scale) then overlap the next iteration instead of following it. Saves stay in order, one at a
time: a save waits for the one before to end. A save that fails raises its error at the next save or
at :meth:`BackgroundSaves.wait`, which the run calls after its last save.

What a kill leaves is what ``--checkpoint-every`` leaves: the last checkpoint written whole (every
write is atomic), with the metric rows of later iterations in ``metrics.csv``, which a resumed run
rewrites from the checkpoint's rows; so a kill at any moment still resumes exactly.

Example::

    saves = BackgroundSaves(run)
    saves.submit(agent.checkpoint(state))   # returns at once
    ...
    saves.wait()                            # the last save written (or its error raised)
"""

from __future__ import annotations

import threading
from typing import Any

from rp1.rundir.files import RunDir


class BackgroundSaves:
    """The checkpoints of ``run``, each written by a thread of its own, one after another."""

    def __init__(self, run: RunDir):
        self.run = run
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def submit(self, state: dict[str, Any]) -> None:
        """Start writing the checkpoint ``state`` (:meth:`RunDir.save_checkpoint`) once the save
        before has ended; the error of that save, if it failed, is raised instead."""
        self.wait()
        self._thread = threading.Thread(
            target=self._save, args=(state,), name="rp1-checkpoint", daemon=True
        )
        self._thread.start()

    def _save(self, state: dict[str, Any]) -> None:
        try:
            self.run.save_checkpoint(state)
        except BaseException as err:  # raised in the run's thread (wait)
            self._error = err

    def wait(self, raise_error: bool = True) -> None:
        """Wait for the save in progress to end; raise its error (unless ``raise_error`` is
        False: the caller is already failing)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None and raise_error:
            raise error
