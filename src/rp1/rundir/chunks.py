"""A checkpoint's appended arrays written once: in chunks of the rows added since the last save.

An agent's checkpoint (:mod:`rp1.rundir.checkpoints`) names arrays that only ever grow by rows at
their end (the transition store's). :meth:`RunDir.save_checkpoint <rp1.rundir.files.RunDir.save_checkpoint>`
writes only their new rows, as one chunk file beside the checkpoint::

    RUN/checkpoint/state.msgpack         the head: everything else, and the list of chunks
    RUN/checkpoint/rows-00000.msgpack    a chunk: {name: rows} of the rows new at one save
    RUN/checkpoint/rows-00001.msgpack    …

so a save costs what changed, not the whole store. A chunk is sealed (:mod:`rp1.rundir.sealed`)
and written atomically before the head, whose list records each chunk's file name, the SHA-256 of
its bytes and its rows per array, chunks 0, 1, … each once and in order; a chunk is read only
through that list and must match it, and a list of any other order is refused. A kill
between a chunk and its head leaves the previous head, which does not list the new chunk: the next
save writes a chunk of that number again (the next number is always the number of chunks the head
lists), so a resumed run continues exactly from the previous head.

Example::

    chunks = Chunks(run_dir / "checkpoint")
    listed = chunks.write({"train_obs": obs, ...})   # the new rows' chunk, if any; then the head
    chunks.commit(listed)                            # once the head that lists them is written
    arrays = chunks.read(listed, read_file)          # every row again, as one array per name
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rp1.core.errors import DamagedFile
from rp1.core.storage import storage_errors, write_atomically
from rp1.rundir.sealed import sealed_parts, unseal

PATTERN = "rows-[0-9]*.msgpack"
"""The chunk files' names (``fnmatch``)."""
_NAME = re.compile(r"rows-[0-9]{5,}\.msgpack")


def chunk_name(index: int) -> str:
    """The file name of chunk ``index``."""
    return f"rows-{index:05d}.msgpack"


class Chunks:
    """The chunks of the checkpoint in ``directory``: what the last head written or read lists
    (:attr:`listed`) and how many rows of each array they hold (:attr:`rows`)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.listed: list[dict[str, Any]] = []
        self.rows: dict[str, int] = {}

    def write(self, arrays: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        """Write the rows of ``arrays`` that the listed chunks do not hold as the next chunk
        (nothing when there are none) and return the list of chunks a head of ``arrays`` records.
        ``arrays`` continue what was listed (the same names, each at least as long); otherwise
        they start a new list, written whole."""
        listed, rows = self.listed, self.rows
        if set(rows) != set(arrays) or any(len(arrays[n]) < k for n, k in rows.items()):
            listed, rows = [], {}
        new = {name: x[rows.get(name, 0) :] for name, x in arrays.items()}
        if not any(len(x) for x in new.values()):
            return listed
        name = chunk_name(len(listed))
        parts = sealed_parts({"rows": new})
        write_atomically(self.directory / name, parts, "checkpoint rows")
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
        entry = {
            "file": name,
            "sha256": digest.hexdigest(),
            "rows": {n: len(x) for n, x in new.items()},
        }
        return [*listed, entry]

    def commit(self, listed: list[dict[str, Any]]) -> None:
        """Record ``listed`` as the chunks of the head just written (or read)."""
        self.listed = listed
        self.rows = {}
        for entry in listed:
            for name, count in entry["rows"].items():
                self.rows[name] = self.rows.get(name, 0) + count

    def prune(self) -> None:
        """Delete the chunk files the last head does not list (a kill between a chunk and its
        head left them, or the list started afresh)."""
        keep = {entry["file"] for entry in self.listed}
        with storage_errors("delete", self.directory):
            for path in self.directory.glob(PATTERN):
                if path.name not in keep and _NAME.fullmatch(path.name):
                    path.unlink(missing_ok=True)

    def read(
        self, listed: Any, read_file: Callable[[Path], bytes], head: Path
    ) -> dict[str, np.ndarray]:
        """Every array the chunks ``listed`` by the head ``head`` hold, their rows in order,
        read with ``read_file`` (a path relative to the run directory), and :meth:`commit` them.
        :class:`~rp1.core.errors.DamagedFile` naming the file if the list is not one of chunks
        numbered from 0 on, each once and in order (as :meth:`write` numbers them), a chunk is
        missing, or it is not what the head lists (its checksum, its rows)."""
        if not isinstance(listed, list) or not all(_is_entry(e) for e in listed):
            raise DamagedFile(f"checkpoint {head} is damaged: its list of chunks is malformed")
        parts: dict[str, list[np.ndarray]] = {}
        for index, entry in enumerate(listed):
            if entry["file"] != chunk_name(index):  # a chunk left out, or listed twice
                raise DamagedFile(
                    f"checkpoint {head} is damaged: it lists {entry['file']} as chunk {index}, "
                    f"where {chunk_name(index)} belongs (a head lists its chunks from "
                    f"{chunk_name(0)} on, each once, in order)"
                )
            path = self.directory / entry["file"]
            if not path.exists():
                raise DamagedFile(f"checkpoint {head} lists {path}, which is missing")
            data = read_file(path)
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise DamagedFile(
                    f"checkpoint rows {path} are damaged or not those its checkpoint {head} lists "
                    "(their SHA-256 differs); rp1 uses no part of them"
                )
            body, _ = unseal(data, path, "checkpoint rows")
            rows = body.get("rows")
            if not isinstance(rows, dict) or {n: len(x) for n, x in rows.items()} != entry["rows"]:
                raise DamagedFile(f"checkpoint rows {path} do not hold the rows {head} lists")
            for name, x in rows.items():
                parts.setdefault(name, []).append(x)
        self.commit(listed)
        return {name: np.concatenate(xs) for name, xs in parts.items()}


def _is_entry(entry: Any) -> bool:
    """Whether ``entry`` is a head's record of a chunk: its file name, checksum and rows."""
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("file"), str)
        and _NAME.fullmatch(entry["file"]) is not None
        and isinstance(entry.get("sha256"), str)
        and isinstance(entry.get("rows"), dict)
        and all(isinstance(k, str) and type(v) is int for k, v in entry["rows"].items())
    )
