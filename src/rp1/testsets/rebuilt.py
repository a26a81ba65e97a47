"""``rp1 testsets``: the world models' test sets rebuilt (:mod:`rp1.testsets.build`) and
compared with the shipped ones (:data:`rp1.dynamics.testset.SHIPPED`), byte for byte.

Example::

    for task in chosen_tasks(["hopper"]):
        print(rebuild(task, Path("out")))     # out/hopper.npz: sha256 …, N bytes; the shipped file
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from rp1.core.errors import ConfigError
from rp1.dynamics.testset import SHIPPED
from rp1.testsets.build import build_shipped, shipped_tasks


def chosen_tasks(names: Sequence[str]) -> list[str]:
    """``names``, every one a task with a test set, or all of them when ``names`` is empty;
    ConfigError naming those that have none."""
    unknown = sorted(set(names) - set(shipped_tasks()))
    if unknown:
        raise ConfigError(
            f"--tasks: no test set for {', '.join(unknown)}; the tasks with one: {', '.join(shipped_tasks())}"
        )
    return list(names) or list(shipped_tasks())


def rebuild(task: str, out: Path) -> str:
    """Build ``task``'s test set into ``out/<task>.npz``; one line: the file, the start of its
    SHA-256, its size and whether it is the shipped file byte for byte."""
    path = build_shipped(task, out)
    data, shipped = path.read_bytes(), SHIPPED / path.name
    verdict = (
        "no shipped file"
        if not shipped.is_file()
        else "the shipped file"
        if shipped.read_bytes() == data
        else "differs from the shipped file"
    )
    digest = hashlib.sha256(data).hexdigest()[:16]
    return f"{path}: sha256 {digest}…, {len(data):,} bytes; {verdict}"
