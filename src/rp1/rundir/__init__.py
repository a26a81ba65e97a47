"""The run directory: its files and metrics (:mod:`rp1.rundir.files`), its one owner
(:mod:`rp1.rundir.lock`), an agent's checkpoint packed and unpacked (:mod:`rp1.rundir.checkpoints`),
the config schema's versions (:mod:`rp1.rundir.migrations`) and where a run ran
(:mod:`rp1.rundir.provenance`)."""
