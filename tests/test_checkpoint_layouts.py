"""Checkpoint layouts and chunks: a sealed file keeps its bytes when written in parts; a checkpoint
of a newer layout is refused; the store's rows are written once, in chunks that only their head's
list reads. (The fixture run of layout 1 resumes bit for bit: tests/test_migrations.py.)"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from flax import serialization

from rp1.config import resolve
from rp1.core.errors import DamagedFile
from rp1.rundir.checkpoints import LAYOUT
from rp1.rundir.chunks import Chunks, chunk_name
from rp1.rundir.layouts import NewerLayout, migrate_layout
from rp1.rundir.sealed import seal, sealed_parts


@pytest.mark.parametrize("size", [0, 10, 70_000])
def test_a_sealed_file_written_in_parts_has_the_bytes_of_the_map(size):
    payload = {"rows": np.arange(size, dtype=np.float32), "meta": "x"}
    body = serialization.msgpack_serialize(payload)
    whole = serialization.msgpack_serialize(
        {"sha256": hashlib.sha256(body).hexdigest(), "body": body}
    )
    assert b"".join(sealed_parts(payload)) == seal(payload) == whole


def test_a_checkpoint_of_a_newer_layout_is_refused_naming_both():
    config = resolve("halfcheetah-rp1").to_dict()
    with pytest.raises(
        NewerLayout, match=f"layout {LAYOUT + 1}; this rp1 reads layouts up to {LAYOUT}"
    ):
        migrate_layout({"layout": LAYOUT + 1}, config, "checkpoint X")
    assert migrate_layout({"layout": LAYOUT, "a": 1}, config, "X") == {"layout": LAYOUT, "a": 1}


def test_chunks_hold_each_row_once_and_read_back_whole(tmp_path):
    chunks = Chunks(tmp_path)
    sizes = []
    for n in (5, 5, 8):  # arrays that grow: 5, 10, 18 rows
        arrays = {
            "a": np.arange(sum(sizes) + n, dtype=np.float32),
            "b": np.ones((sum(sizes) + n, 2)),
        }
        listed = chunks.write(arrays)
        chunks.commit(listed)
        sizes.append(n)
    assert [e["rows"] for e in listed] == [{"a": n, "b": n} for n in sizes]
    assert chunks.write(arrays) == listed  # nothing new: no chunk written
    read = Chunks(tmp_path).read(listed, Path.read_bytes, tmp_path / "head")
    np.testing.assert_array_equal(read["a"], arrays["a"])
    np.testing.assert_array_equal(read["b"], arrays["b"])
    # arrays that do not continue the listed ones start a new list, written whole
    again = chunks.write({"a": np.zeros(3, np.float32), "b": np.zeros((3, 2))})
    assert [e["file"] for e in again] == [chunk_name(0)]


def test_a_chunk_not_as_its_head_lists_it_is_damaged(tmp_path):
    chunks = Chunks(tmp_path)
    listed = chunks.write({"a": np.arange(4.0)})
    other = Chunks(tmp_path / "other").write({"a": np.arange(5.0)})
    (tmp_path / chunk_name(0)).write_bytes((tmp_path / "other" / chunk_name(0)).read_bytes())
    with pytest.raises(DamagedFile, match="SHA-256 differs"):
        Chunks(tmp_path).read(listed, Path.read_bytes, tmp_path / "head")
    (tmp_path / chunk_name(0)).unlink()
    with pytest.raises(DamagedFile, match="missing"):
        Chunks(tmp_path).read(listed, Path.read_bytes, tmp_path / "head")
    for bad in ([{"file": "../x", "sha256": "0", "rows": {}}], {"file": chunk_name(0)}, other[0]):
        with pytest.raises(DamagedFile, match="malformed"):
            Chunks(tmp_path).read(bad, Path.read_bytes, tmp_path / "head")


RELISTED = {
    "a chunk twice": (lambda listed: listed + listed[-1:], f"{chunk_name(2)} as chunk 3"),
    "a chunk left out": (lambda listed: [listed[0], listed[2]], f"{chunk_name(2)} as chunk 1"),
    "out of order": (lambda listed: listed[::-1], f"{chunk_name(2)} as chunk 0"),
}


@pytest.mark.parametrize("case", list(RELISTED))
def test_a_head_listing_its_chunks_other_than_each_once_in_order_is_damaged(case, tmp_path):
    """Each chunk the list names is whole and as a head listed it; the list is not 0, 1, 2."""
    relist, listed_as = RELISTED[case]
    chunks = Chunks(tmp_path)
    for n in (2, 4, 6):
        chunks.commit(chunks.write({"a": np.arange(float(n))}))
    with pytest.raises(DamagedFile, match=f"head is damaged: it lists {listed_as}, where"):
        Chunks(tmp_path).read(relist(chunks.listed), Path.read_bytes, tmp_path / "head")
