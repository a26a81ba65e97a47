"""The run directory: its files and metrics (:mod:`rp1.rundir.files`), its one owner
(:mod:`rp1.rundir.lock`), an agent's checkpoint packed and unpacked (:mod:`rp1.rundir.checkpoints`),
the kept policies' files and format (:mod:`rp1.rundir.policy_files`), where a run ran (:mod:`rp1.rundir.provenance`) and its result files
copied (:mod:`rp1.rundir.export`)."""
