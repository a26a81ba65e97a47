"""Files sealed with a checksum of their content: checkpoints (:mod:`rp1.rundir.files`) and policy
files (:mod:`rp1.rundir.policy_files`).

A sealed file is msgpack ``{"sha256": HEX, "body": BYTES}``: ``BYTES`` is the msgpack of the
payload (a map) and ``HEX`` the SHA-256 of those bytes, checked before any of the payload is read.
A bit flipped on disk, a truncated or spliced copy, an edit: each is found at load, and the file is
refused as damaged (:class:`~rp1.core.errors.DamagedFile`) instead of being used.

An unsealed file holds the payload itself at the top level (a map without ``sha256``); it is read
as it is, unchecked (:func:`unseal` says whether a file was sealed). The next checkpoint a resumed
run writes is sealed.

Example::

    write_atomically(path, seal({"meta": "...", "policy": {...}}), "policy file")
    payload, sealed = unseal(path.read_bytes(), path, "policy file")
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rp1.core.errors import DamagedFile

SEAL = ("sha256", "body")
"""The keys of a sealed file's top level, and nothing else."""


def seal(payload: dict[str, Any]) -> bytes:
    """The bytes of a sealed file holding ``payload`` (nested maps of arrays, numbers, strings)."""
    return b"".join(sealed_parts(payload))


def sealed_parts(payload: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """The bytes of :func:`seal` in three parts, to be written one after the other: the msgpack of
    the map (keys in flax's sorted order) up to the body's bytes, the body (not copied again), and
    the rest, its checksum."""
    from flax import serialization  # imports JAX: only when a file is sealed or read

    body = serialization.msgpack_serialize(payload)
    pack = serialization.msgpack_serialize
    head = _MAP_OF_2 + pack("body") + _bin_header(len(body))
    return head, body, pack("sha256") + pack(hashlib.sha256(body).hexdigest())


_MAP_OF_2 = b"\x82"  # msgpack's header of a map of two entries (fixmap)


def _bin_header(size: int) -> bytes:
    """The msgpack header of a binary string of ``size`` bytes (bin 8, 16 or 32)."""
    for code, width in ((0xC4, 1), (0xC5, 2), (0xC6, 4)):
        if size < 1 << (8 * width):
            return bytes([code]) + size.to_bytes(width, "big")
    raise ValueError(f"msgpack holds at most 4 GiB in one binary string, not {size:,} bytes")


def unseal(data: bytes, path: Path, kind: str) -> tuple[dict[str, Any], bool]:
    """The payload of the ``kind`` file (``"checkpoint"``, ``"policy file"``) at ``path`` whose
    bytes are ``data``, and whether it was sealed (``False``: an unsealed file, read
    unchecked). :class:`~rp1.core.errors.DamagedFile` naming the file if the bytes are not msgpack
    of a map, or the checksum does not match the body."""
    outer = _restore(data, path, kind)
    if set(outer) != set(SEAL):
        return outer, False
    digest, body = outer["sha256"], outer["body"]
    if not isinstance(body, bytes) or hashlib.sha256(body).hexdigest() != digest:
        raise DamagedFile(
            f"{kind} {path} is damaged: its content does not match its SHA-256 checksum "
            "(changed on disk or copied in part); rp1 uses no part of it"
        )
    return _restore(body, path, kind), True


def _restore(data: bytes, path: Path, kind: str) -> dict[str, Any]:
    """``data`` as msgpack of a map; DamagedFile naming the file if it is not."""
    from flax import serialization  # imports JAX: only when a file is sealed or read

    try:
        restored = serialization.msgpack_restore(data)
    except Exception as err:  # msgpack's own errors (ExtraData, FormatError, …) and ValueError
        cause = f"{type(err).__name__}: {err}"
    else:
        if isinstance(restored, dict):
            return restored
        cause = f"it holds a {type(restored).__name__}, not a map"
    raise DamagedFile(f"{kind} {path} is corrupt or not an rp1 {kind} ({cause})")
