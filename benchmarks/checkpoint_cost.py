"""What a run's checkpoints cost: the seconds and bytes of each save, per iteration.

Runs a preset in this process (``rp1.train.run_training``, the checkpoint after every iteration)
and times each save: packing the state (the agent's ``checkpoint``), writing it
(``RunDir.save_checkpoint``: serialising, checksumming, writing) and what of that the run waited
for (``waited_s``: an rp1 that writes in the background, ``rp1.rundir.saves``, waits only when a
save is still under way when the next begins; one without waits for the whole write), and counts
the bytes the save wrote (the files under ``checkpoint/`` it created or replaced). The cost of a
save to an iteration is ``pack_s + waited_s``. Prints one row per save and the medians from
``--from`` on. The same script runs any rp1 whose ``run_training``, agents and ``RunDir`` have
these names (``PYTHONPATH=OTHER/src``), so an earlier commit can be measured beside this one.

``--rows N`` measures instead the saves of a run whose transition store grows by ``--phase``
synthetic rows a save up to ``N`` rows, with the preset's initial networks (nothing trained):
the store's share of a save at sizes a CPU run does not reach (paper scale, 10^5 rows).

Usage::

    python benchmarks/checkpoint_cost.py --preset halfcheetah-quick --budget 6000 --out DIR
    python benchmarks/checkpoint_cost.py --preset halfcheetah-rp1 --scale paper --rows 100000 --out DIR
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import rp1.rundir.files
from rp1.agents.model_based import ModelBasedAgent
from rp1.agents.modelfree import ModelFreeAgent
from rp1.config import resolve
from rp1.rundir.files import CHECKPOINT, RunDir
from rp1.train import run_training

SAVES: list[dict[str, float]] = []


def files(folder: Path) -> dict[str, tuple[int, int]]:
    """``{name: (size, mtime_ns)}`` of the files in ``folder``."""
    if not folder.is_dir():
        return {}
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def timed(cls: type) -> None:
    """Time ``cls.checkpoint`` (packing) into the next entry of :data:`SAVES`."""
    pack = cls.checkpoint

    def checkpoint(self, state):
        start = time.perf_counter()
        data = pack(self, state)
        SAVES.append({"pack_s": time.perf_counter() - start})
        return data

    cls.checkpoint = checkpoint


def install() -> None:
    """Time packing and writing every save, and count the bytes it writes."""
    for cls in (ModelBasedAgent, ModelFreeAgent):
        timed(cls)
    save = RunDir.save_checkpoint

    def save_checkpoint(self, state):
        entry = SAVES[-1]  # this save's: the next one is packed while this one is written
        folder = self.path / CHECKPOINT.parent
        before = files(folder)
        start = time.perf_counter()
        save(self, state)
        written = time.perf_counter() - start
        after = files(folder)
        new = sum(size for name, (size, t) in after.items() if before.get(name) != (size, t))
        entry |= {"write_s": written, "bytes": new, "stored": sum(s for s, _ in after.values())}

    rp1.rundir.files.RunDir.save_checkpoint = save_checkpoint
    try:
        from rp1.rundir.saves import BackgroundSaves
    except ImportError:  # an rp1 that saves in the run's thread: it waits for every write
        return
    submit = BackgroundSaves.submit

    def waited(self, state):
        start = time.perf_counter()
        submit(self, state)
        SAVES[-1]["waited_s"] = time.perf_counter() - start

    BackgroundSaves.submit = waited


def synthetic(args: argparse.Namespace) -> None:
    """Saves of a run whose store grows by ``args.phase`` random rows a save."""
    cfg = resolve(args.preset, seed=0, scale=args.scale, overrides=dict(args.set))
    agent = ModelBasedAgent(cfg)
    state = agent.initial_state()
    run = RunDir(args.out)
    run.prepare(cfg.to_dict(), overwrite=True)
    rng = np.random.default_rng(0)
    o, a = agent.task.obs_dim, agent.task.act_dim
    stored = 0
    while stored < args.rows:
        episodes = [
            {
                "obs": rng.normal(size=(args.phase // 3, o)),
                "act": rng.normal(size=(args.phase // 3, a)),
                "rew": rng.normal(size=args.phase // 3),
                "next_obs": rng.normal(size=(args.phase // 3, o)),
            }
            for _ in range(3)
        ]
        added = state.store.add_phase(episodes)
        if added is None:  # a store that grows in place (rp1 before its device state)
            state.rows.append({"iteration": len(state.rows)})
        else:
            state = replace(
                state,
                device=state.device.replace(store=added),
                rows=[*state.rows, {"iteration": len(state.rows)}],
            )
        stored = state.store.n_train + state.store.n_val
        run.save_checkpoint(agent.checkpoint(state))
        SAVES[-1]["rows"] = stored
    agent.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", required=True)
    parser.add_argument("--budget", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale")
    parser.add_argument("--set", action="append", default=[], type=lambda s: s.split("=", 1))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rows", type=int, help="synthetic rows up to this many (see above)")
    parser.add_argument("--phase", type=int, default=3000)
    parser.add_argument("--from", dest="first", type=int, default=1)
    args = parser.parse_args()
    install()
    if args.rows:
        synthetic(args)
    else:
        cfg = resolve(
            args.preset,
            seed=args.seed,
            budget=args.budget,
            scale=args.scale,
            overrides=dict(args.set),
        )
        run_training(cfg, args.out, progress=False, overwrite=True)
    for save in SAVES:
        save.setdefault("waited_s", save["write_s"])
    print("| save | rows | pack_s | write_s | waited_s | bytes written | checkpoint bytes |")
    print("|---|---|---|---|---|---|---|")
    for i, s in enumerate(SAVES):
        cells = [f"{s[c]:.3f}" for c in ("pack_s", "write_s", "waited_s")]
        print(
            f"| {i} | {s.get('rows', '')} | {' | '.join(cells)} | {s['bytes']:,} | {s['stored']:,} |"
        )
    later = SAVES[args.first :]
    if later:
        medians = {
            c: statistics.median(s[c] for s in later)
            for c in ("pack_s", "write_s", "waited_s", "bytes")
        }
        print(
            f"median from save {args.first}: pack {medians['pack_s']:.3f} s, write {medians['write_s']:.3f} s, "
            f"waited {medians['waited_s']:.3f} s, {medians['bytes']:,.0f} bytes written"
        )


if __name__ == "__main__":
    main()
